package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// rotaryKernel is com.microsoft RotaryEmbedding (core/kernels/contrib's
// semantics) for float32 input and caches and int64 positions, reading
// only the cache rows of the positions it rotates (the reference kernel
// converts the whole cos and sin caches to float64 on every call: a third
// of a stories260K decode step). Each output is computed as the reference
// does, in float64 from the float32 values (the products are exact) and
// rounded once to float32, so the results are bit-identical. Anything
// else (other dtypes, attributes, shapes, the errors) runs the reference
// kernel.
func rotaryKernel() kernels.Func {
	ref, _ := kernels.Lookup("com.microsoft", "RotaryEmbedding")
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if len(in) < 4 {
			return ref.Kernel(ctx, n, in)
		}
		x, pos, cosT, sinT := in[0], in[1], in[2], in[3]
		if x == nil || pos == nil || cosT == nil || sinT == nil || x.DType != graph.Float32 || cosT.DType != graph.Float32 ||
			sinT.DType != graph.Float32 || pos.DType != graph.Int64 || cosT.Rank() != 2 || !graph.SameShape(cosT.Shape, sinT.Shape) ||
			n.AttrInt("is_packed_batching", 0) != 0 || n.AttrFloat("scale", 1) != 1 {
			return ref.Kernel(ctx, n, in)
		}
		maxPos, width := cosT.Shape[0], cosT.Shape[1]
		numHeads, rot := int(n.AttrInt("num_heads", 0)), int(n.AttrInt("rotary_embedding_dim", 0))
		var B, N, S, H int
		bnsh := false
		switch x.Rank() {
		case 4:
			B, N, S, H = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
			bnsh = true
		case 3:
			B, S = x.Shape[0], x.Shape[1]
			switch {
			case numHeads > 0 && rot >= 0:
				H = x.Shape[2] / numHeads
			case numHeads == 0 && rot == 0:
				H = 2 * width
			default:
				return ref.Kernel(ctx, n, in)
			}
			if H == 0 || x.Shape[2]%H != 0 {
				return ref.Kernel(ctx, n, in)
			}
			N = x.Shape[2] / H
		default:
			return ref.Kernel(ctx, n, in)
		}
		if rot == 0 {
			rot = H
		}
		if rot < 0 || rot > H || rot%2 != 0 || width < rot/2 {
			return ref.Kernel(ctx, n, in)
		}
		P := graph.Data[int64](pos)
		single := len(P) == 1 && pos.Rank() <= 1
		if !single && !graph.SameShape(pos.Shape, []int{B, S}) {
			return ref.Kernel(ctx, n, in)
		}
		for _, p := range P {
			if p < 0 || p+int64(S) > int64(maxPos) && single || p >= int64(maxPos) {
				return ref.Kernel(ctx, n, in)
			}
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		X, Y, C, Sn := f32(x), f32(y), f32(cosT), f32(sinT)
		copy(Y, X)
		interleaved := n.AttrInt("interleaved", 0) != 0
		half := rot / 2
		for b := 0; b < B; b++ {
			for s := 0; s < S; s++ {
				r := int(P[0]) + s
				if !single {
					r = int(P[b*S+s])
				}
				c, sn := C[r*width:r*width+half], Sn[r*width:r*width+half]
				for h := 0; h < N; h++ {
					base := ((b*S+s)*N + h) * H
					if bnsh {
						base = ((b*N+h)*S + s) * H
					}
					if interleaved {
						v, o := X[base:base+rot], Y[base:base+rot]
						for i := range c {
							x1, x2 := float64(v[2*i]), float64(v[2*i+1])
							ci, si := float64(c[i]), float64(sn[i])
							o[2*i] = float32(ci*x1 - si*x2)
							o[2*i+1] = float32(si*x1 + ci*x2)
						}
						continue
					}
					v1, v2 := X[base:base+half], X[base+half:base+rot]
					o1, o2 := Y[base:base+half], Y[base+half:base+rot]
					for i := range c {
						x1, x2 := float64(v1[i]), float64(v2[i])
						ci, si := float64(c[i]), float64(sn[i])
						o1[i] = float32(ci*x1 - si*x2)
						o2[i] = float32(si*x1 + ci*x2)
					}
				}
			}
		}
		return ctx.Outputs(y), nil
	}
}
