package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// rmsNormKernel is SimplifiedLayerNormalization (RMSNorm) of float32 X
// over its last axis with a float32 scale, output Y only, computed in
// ggml's order (ggml_rms_norm then the multiplication by the weight, as
// llama.cpp's graphs do): the squares x·x rounded to float32 and summed
// in float64, the mean rounded to float32, s = 1/√(mean + ε) in float32,
// then y = (x·s)·scale, each product rounded. The reference kernel
// computes x/√(mean+ε)·scale in float64 rounded once; the two differ in
// the last bit, and llama.cpp's order is what makes the 8-bit
// activations quantized downstream the same as llama.cpp's (tiny random
// Gemma and LongRoPE Phi-3 models then give llama.cpp's Q8_0 logits to
// the last bit). Anything else runs the reference kernel.
func rmsNormKernel() kernels.Func {
	ref, _ := kernels.Lookup("", "SimplifiedLayerNormalization")
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if len(in) < 2 || len(n.Outputs) > 1 && n.Outputs[1] != "" {
			return ref.Kernel(ctx, n, in)
		}
		x, g := in[0], in[1]
		if x == nil || g == nil || x.DType != graph.Float32 || g.DType != graph.Float32 || x.Rank() == 0 ||
			g.Rank() != 1 || g.Shape[0] != x.Shape[x.Rank()-1] || g.Shape[0] == 0 {
			return ref.Kernel(ctx, n, in)
		}
		if ax := n.AttrInt("axis", -1); ax != -1 && ax != int64(x.Rank()-1) {
			return ref.Kernel(ctx, n, in)
		}
		eps := n.AttrFloat("epsilon", 1e-5)
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		rmsNormRows(f32(x), f32(y), f32(g), g.Shape[0], eps) // srvh_rmsnorm.go
		return ctx.Outputs(y), nil
	}
}
