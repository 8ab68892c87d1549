package blockquant

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// SwiGLUOpType is the gated SiLU of a llama-family feed-forward layer as
// llama.cpp's CPU backend computes it (ggml_vec_swiglu_f32 on AVX-512):
// Y = silu(A)·B elementwise, A and B float32 of the same shape, with
// silu(a) = a / (1 + e^−a) and e^x ExpGGML, ggml's polynomial (not the
// correctly rounded exponential), every float32 operation in ggml's order.
// The products downstream quantize these values to 8 bits: a last-bit
// difference here moves a value across a rounding step now and then,
// and the logits by a few hundredths with it.
const SwiGLUOpType = "GGMLSwiGLU"

func init() {
	kernels.Register(kernels.Schema{
		Domain: Domain, OpType: SwiGLUOpType, MinOpset: 1, MaxOpset: 1,
		MinInputs: 2, MaxInputs: 2, Types: []graph.DType{graph.Float32},
		Infer: inferSwiGLU, Kernel: swigluKernel,
	})
}

func inferSwiGLU(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	return []graph.ValueType{{Kind: "tensor", DType: graph.Float32, Shape: in[0].Type.Shape}}, nil
}

func swigluKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, b := kernels.Input(in, 0), kernels.Input(in, 1)
	for i, what := range []string{"A", "B"} {
		if err := kernels.CheckInput(n, in[i], what); err != nil {
			return nil, err
		}
		if in[i].DType != graph.Float32 {
			return nil, kernels.Unsupportedf(n, "%s must be float32, got %v", what, in[i].DType)
		}
	}
	if !graph.SameShape(a.Shape, b.Shape) {
		return nil, kernels.Invalidf(n, "A %v and B %v must have identical shapes", a.Shape, b.Shape)
	}
	y, err := ctx.NewUninit(graph.Float32, a.Shape)
	if err != nil {
		return nil, err
	}
	SwiGLU(y.Data.([]float32), a.Data.([]float32), b.Data.([]float32))
	return ctx.Outputs(y), nil
}

// SwiGLU writes silu(a[i])·b[i] into y[i] (SwiGLUOpType's arithmetic).
func SwiGLU(y, a, b []float32) {
	b = b[:len(a)]
	y = y[:len(a)]
	for i, x := range a {
		e := ExpGGML(0 - x)
		y[i] = float32(x/float32(1+e)) * b[i]
	}
}

// ExpGGML is e^x as ggml's ggml_v_expf computes it on AVX-512 (ARM's
// optimized-routines polynomial: at most about 1.5 ulp from e^x): n =
// round(x·log2 e) by the 1.5·2²³ shift, b = x − n·ln2 in two fused
// steps, a degree-5 polynomial in b by fused multiply-adds, scaled by
// 2ⁿ; +Inf where n > 192, 0 where n < −192. Every float32 operation is
// ggml's, fused ones fused (ggml.FMA32), so the result is its, bit for
// bit.
func ExpGGML(x float32) float32 {
	const r = 0x1.8p23
	z := ggml.FMA32(x, 0x1.715476p+0, r)
	n := z - r
	b := ggml.FMA32(-n, 0x1.7f7d1cp-20, ggml.FMA32(-n, 0x1.62e4p-1, x))
	if n > 192 || n < -192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	u := float32(b * b)
	j := ggml.FMA32(
		ggml.FMA32(ggml.FMA32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, ggml.FMA32(0x1.555e66p-3, b, 0x1.fffdb6p-2)),
		u,
		ggml.FMA32(0x1.ffffecp-1, b, 1))
	return float32(math.Ldexp(float64(j), int(n)))
}
