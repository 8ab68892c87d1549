package contrib

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/attention"
	"github.com/switchyard-hal/switchyard/core/ops/contrib"
)

func init() {
	kernels.RegisterKernel(contrib.Domain, "RotaryEmbedding", rotaryKernel)
}

// ---- RotaryEmbedding (com.microsoft) ----
//
// input (B, S, N·H) or (B, N, S, H), position_ids (B, S) or a single
// offset p0 (positions p0+s), cos_cache and sin_cache (max_position, R/2).
// The head size is H = hidden/num_heads, or 2·cache width when num_heads
// is 0; the first R = rotary_embedding_dim (default H) features of each
// head rotate, as halves (x1 = x[:R/2], x2 = x[R/2:R]) or, with
// interleaved, as even/odd pairs:
//
//	x1' = cos·x1 - sin·x2,  x2' = sin·x1 + cos·x2
//
// with cos/sin the cache row of the token's position. The other features
// pass through.

func rotaryKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, pos, cosT, sinT := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2), kernels.Input(in, 3)
	if err := kernels.CheckFloatInput(n, x, "input"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, cosT, "cos_cache"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, sinT, "sin_cache"); err != nil {
		return nil, err
	}
	if err := kernels.CheckInput(n, pos, "position_ids"); err != nil {
		return nil, err
	}
	if err := checkInts(n, pos, "position_ids"); err != nil {
		return nil, err
	}
	if n.AttrInt("is_packed_batching", 0) != 0 {
		return nil, kernels.Unsupportedf(n, "is_packed_batching is not supported")
	}
	if s := n.AttrFloat("scale", 1); s != 1 {
		return nil, kernels.Unsupportedf(n, "scale %g is not supported (only 1)", s)
	}
	if cosT.Rank() != 2 || !graph.SameShape(cosT.Shape, sinT.Shape) {
		return nil, kernels.Invalidf(n, "cos_cache %v and sin_cache %v must be 2-D of one shape", cosT.Shape, sinT.Shape)
	}
	maxPos, width := cosT.Shape[0], cosT.Shape[1]
	numHeads := int(n.AttrInt("num_heads", 0))
	rot := int(n.AttrInt("rotary_embedding_dim", 0))
	if numHeads < 0 || rot < 0 {
		return nil, kernels.Invalidf(n, "num_heads %d and rotary_embedding_dim %d must not be negative", numHeads, rot)
	}
	var B, N, S, H int
	bnsh := false
	switch x.Rank() {
	case 4:
		B, N, S, H = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		bnsh = true
	case 3:
		B, S = x.Shape[0], x.Shape[1]
		hidden := x.Shape[2]
		switch {
		case numHeads > 0:
			H = hidden / numHeads
		case rot > 0:
			return nil, kernels.Invalidf(n, "rotary_embedding_dim needs num_heads with a 3-D input")
		default:
			H = 2 * width
		}
		if H == 0 || hidden%H != 0 {
			return nil, kernels.Invalidf(n, "hidden size %d is not a multiple of head size %d", hidden, H)
		}
		N = hidden / H
	default:
		return nil, kernels.Invalidf(n, "input must be 3-D or 4-D, got %v", x.Shape)
	}
	if rot == 0 {
		rot = H
	}
	if rot > H || rot%2 != 0 || width < rot/2 {
		return nil, kernels.Invalidf(n, "rotary dim %d must be even, at most head size %d and at most twice the cache width %d", rot, H, width)
	}
	row := make([]int, B*S)
	switch {
	case pos.Len() == 1 && (pos.Rank() <= 1):
		for i := range row {
			row[i] = int(pos.Int64At(0)) + i%S
		}
	case graph.SameShape(pos.Shape, []int{B, S}):
		for i := range row {
			row[i] = int(pos.Int64At(i))
		}
	default:
		return nil, kernels.Invalidf(n, "position_ids has shape %v, want [%d %d] or [1]", pos.Shape, B, S)
	}
	for _, r := range row {
		if r < 0 || r >= maxPos {
			return nil, kernels.Invalidf(n, "position %d out of range [0, %d)", r, maxPos)
		}
	}
	interleaved := n.AttrInt("interleaved", 0) != 0
	cv, sv, xv := cosT.Float64s(), sinT.Float64s(), x.Float64s()
	y := append([]float64(nil), xv...)
	half := rot / 2
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			c, sn := cv[row[b*S+s]*width:], sv[row[b*S+s]*width:]
			for h := 0; h < N; h++ {
				base := ((b*S+s)*N + h) * H
				if bnsh {
					base = ((b*N+h)*S + s) * H
				}
				attention.Rotate(y[base:], xv[base:], c, sn, half, interleaved)
			}
		}
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, y)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
