package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "RotaryEmbedding", rotaryKernel)
}

// ---- RotaryEmbedding (opset 23) ----
//
// X is (batch, num_heads, seq, head_size) or (batch, seq, num_heads*head_size)
// (the num_heads attribute is then required). The first rotary_embedding_dim
// (default head_size) features of each head are rotated: split into halves
// (x1 = x[:r/2], x2 = x[r/2:r]) or, with interleaved=1, into even/odd
// features, then
//
//	x1' = cos·x1 - sin·x2,  x2' = sin·x1 + cos·x2
//
// with cos/sin = cos_cache[position_ids[b, s]] (caches (max_pos, ≥r/2)), or
// cos_cache[b, s] when position_ids is omitted (caches (batch, seq, ≥r/2)).
// The remaining features pass through.

func rotaryKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, cosT, sinT, pos := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2), kernels.Input(in, 3)
	if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, cosT, "cos_cache"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, sinT, "sin_cache"); err != nil {
		return nil, err
	}
	if err := checkOptional(n, pos, "position_ids"); err != nil {
		return nil, err
	}
	if pos != nil && !pos.DType.IsInteger() {
		return nil, kernels.Invalidf(n, "position_ids has dtype %v, want int64", pos.DType)
	}
	numHeads := n.AttrInt("num_heads", 0)
	if numHeads < 0 {
		return nil, kernels.Invalidf(n, "num_heads %d is negative", numHeads)
	}
	var B, H, S, D int
	switch x.Rank() {
	case 4:
		// num_heads is only needed for 3-D X; like the reference, a 4-D X
		// takes its head count from its shape.
		B, H, S, D = x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	case 3:
		if numHeads == 0 {
			return nil, kernels.Invalidf(n, "3-D X %v needs the num_heads attribute", x.Shape)
		}
		B, S = x.Shape[0], x.Shape[1]
		if int64(x.Shape[2])%numHeads != 0 {
			return nil, kernels.Invalidf(n, "hidden size %d is not a multiple of num_heads %d", x.Shape[2], numHeads)
		}
		H = int(numHeads)
		D = x.Shape[2] / H
	default:
		return nil, kernels.Invalidf(n, "X must be 3-D or 4-D, got shape %v", x.Shape)
	}
	rot := int(n.AttrInt("rotary_embedding_dim", 0))
	if rot == 0 {
		rot = D
	}
	if rot < 0 || rot > D || rot%2 != 0 {
		return nil, kernels.Invalidf(n, "rotary_embedding_dim %d must be even and at most head size %d", rot, D)
	}
	half := rot / 2
	interleaved := n.AttrInt("interleaved", 0) != 0

	// Validate the caches and build, for each (b, s), the row of the cache
	// to use.
	if !graph.SameShape(cosT.Shape, sinT.Shape) {
		return nil, kernels.Invalidf(n, "cos_cache %v and sin_cache %v differ in shape", cosT.Shape, sinT.Shape)
	}
	row := make([]int, B*S)
	var width int
	if pos != nil {
		if cosT.Rank() != 2 {
			return nil, kernels.Invalidf(n, "with position_ids the caches must be 2-D (max_position, dim/2), got %v", cosT.Shape)
		}
		if !graph.SameShape(pos.Shape, []int{B, S}) {
			return nil, kernels.Invalidf(n, "position_ids has shape %v, want [%d %d]", pos.Shape, B, S)
		}
		maxPos := cosT.Shape[0]
		width = cosT.Shape[1]
		for i := range row {
			p := pos.Int64At(i)
			if p < 0 || p >= int64(maxPos) {
				return nil, kernels.Invalidf(n, "position id %d out of range [0, %d)", p, maxPos)
			}
			row[i] = int(p)
		}
	} else {
		if cosT.Rank() != 3 || cosT.Shape[0] != B || cosT.Shape[1] != S {
			return nil, kernels.Invalidf(n, "without position_ids the caches must have shape (%d, %d, dim/2), got %v", B, S, cosT.Shape)
		}
		width = cosT.Shape[2]
		for i := range row {
			row[i] = i
		}
	}
	if width < half {
		return nil, kernels.Invalidf(n, "cache width %d is less than rotary_embedding_dim/2 = %d", width, half)
	}
	cv, sv := cosT.Float64s(), sinT.Float64s()
	xv := x.Float64s()
	y := make([]float64, len(xv))
	copy(y, xv)
	if half == 0 {
		B = 0 // nothing to rotate (also avoids looping over empty heads)
	}
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for s := 0; s < S; s++ {
				var base int
				if x.Rank() == 4 {
					base = ((b*H+h)*S + s) * D
				} else {
					base = ((b*S+s)*H + h) * D
				}
				c := cv[row[b*S+s]*width:]
				sn := sv[row[b*S+s]*width:]
				Rotate(y[base:], xv[base:], c, sn, half, interleaved)
			}
		}
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, y)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// Rotate applies a rotary embedding to one head: with cos c and sin sn of
// its position, the pairs (x[i], x[i+half]) (or (x[2i], x[2i+1]) when
// interleaved), i < half, are rotated into y. y may be x.
func Rotate(y, x, c, sn []float64, half int, interleaved bool) {
	for i := 0; i < half; i++ {
		i1, i2 := i, half+i
		if interleaved {
			i1, i2 = 2*i, 2*i+1
		}
		x1, x2 := x[i1], x[i2]
		y[i1] = c[i]*x1 - sn[i]*x2
		y[i2] = sn[i]*x1 + c[i]*x2
	}
}
