package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
)

// swigluKernel is blockquant.SwiGLUOpType, llama.cpp's SwiGLU: its
// AVX-512 form (swiglu_amd64.s: ggml_v_silu's sixteen lanes, the same
// fused multiply-adds and VSCALEFPS) where the CPU has it, the reference
// kernel's Go (blockquant.SwiGLU, the same bits) elsewhere and for the
// last n%16 values; anything the fast path does not take runs the
// reference kernel.
func swigluKernel() kernels.Func {
	ref, _ := kernels.Lookup(blockquant.Domain, blockquant.SwiGLUOpType)
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if len(in) != 2 || in[0] == nil || in[1] == nil || in[0].DType != graph.Float32 || in[1].DType != graph.Float32 ||
			!graph.SameShape(in[0].Shape, in[1].Shape) {
			return ref.Kernel(ctx, n, in)
		}
		y, err := ctx.NewUninit(graph.Float32, in[0].Shape)
		if err != nil {
			return nil, err
		}
		ys, as, bs := f32(y), f32(in[0]), f32(in[1])
		d := swiglu16(ys, as, bs)
		blockquant.SwiGLU(ys[d:], as[d:], bs[d:])
		return ctx.Outputs(y), nil
	}
}
