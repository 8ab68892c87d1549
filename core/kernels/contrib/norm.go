package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops/contrib"
)

func init() {
	kernels.RegisterKernel(contrib.Domain, "SkipLayerNormalization", skipNormKernel(false))
	kernels.RegisterKernel(contrib.Domain, "SkipSimplifiedLayerNormalization", skipNormKernel(true))
	kernels.RegisterKernel("", "SimplifiedLayerNormalization", simplifiedNormKernel)
	kernels.RegisterKernel(contrib.Domain, "EmbedLayerNormalization", embedNormKernel)
}

// normRow normalizes x in place over its length: layer normalization
// (x-μ)/√(σ²+ε)·γ+β, or with rms the RMS normalization x/√(mean(x²)+ε)·γ.
// beta may be nil. It returns μ (0 with rms) and 1/√(σ²+ε) (or
// 1/√(mean(x²)+ε)).
func normRow(x, gamma, beta []float64, eps float64, rms bool) (mean, inv float64) {
	m := float64(len(x))
	if !rms {
		for _, v := range x {
			mean += v
		}
		mean /= m
	}
	var ss float64
	for _, v := range x {
		d := v - mean
		ss += d * d
	}
	inv = 1 / math.Sqrt(ss/m+eps)
	for i, v := range x {
		y := (v - mean) * inv * gamma[i]
		if beta != nil {
			y += beta[i]
		}
		x[i] = y
	}
	return mean, inv
}

// ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ----
//
// s = input + skip + bias (input (B, S, H) or (B·S, H); skip the same
// shape, or (1, S, H) / (S, H) repeated over the batch; bias (H)
// optional), then layer normalization over H with gamma (H) and beta (H,
// optional) — or, for the simplified form, RMS normalization with gamma.
// Outputs: the result, mean and inv_std_var (float32, last dim 1), and s
// itself (input_skip_bias_sum). Inputs: input, skip, gamma, beta, bias;
// the simplified form has no beta (input, skip, gamma, bias).

func skipNormKernel(rms bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x, skip, gamma := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
		var beta, bias *graph.Tensor
		if rms {
			bias = kernels.Input(in, 3)
		} else {
			beta, bias = kernels.Input(in, 3), kernels.Input(in, 4)
		}
		for _, c := range []struct {
			t    *graph.Tensor
			what string
			opt  bool
		}{{x, "input", false}, {skip, "skip", false}, {gamma, "gamma", false}, {beta, "beta", true}, {bias, "bias", true}} {
			if c.opt && c.t == nil {
				continue
			}
			if err := kernels.CheckFloatInput(n, c.t, c.what); err != nil {
				return nil, err
			}
		}
		if x.Rank() != 2 && x.Rank() != 3 {
			return nil, kernels.Invalidf(n, "input must be 2-D or 3-D, got %v", x.Shape)
		}
		H := x.Shape[x.Rank()-1]
		rows := x.Len() / max(H, 1)
		skipLen := skip.Len()
		okSkip := graph.SameShape(skip.Shape, x.Shape)
		if !okSkip && x.Rank() == 3 {
			inner := x.Shape[1:]
			okSkip = graph.SameShape(skip.Shape, inner) || (skip.Rank() == 3 && skip.Shape[0] == 1 && graph.SameShape(skip.Shape[1:], inner))
		}
		if !okSkip {
			return nil, kernels.Invalidf(n, "skip has shape %v; want %v, or its last two dims", skip.Shape, x.Shape)
		}
		gv, err := vec1(n, gamma, H, "gamma")
		if err != nil {
			return nil, err
		}
		bev, err := vec1(n, beta, H, "beta")
		if err != nil {
			return nil, err
		}
		biv, err := vec1(n, bias, H, "bias")
		if err != nil {
			return nil, err
		}
		eps := float64(n.AttrFloat("epsilon", 1e-12))
		xv, sv := x.Float64s(), skip.Float64s()
		for i := range xv {
			xv[i] += sv[i%max(skipLen, 1)]
			if biv != nil {
				xv[i] += biv[i%H]
			}
		}
		var sum []float64
		if wants(n, 3) {
			sum = append([]float64(nil), xv...)
		}
		means, invs := make([]float64, rows), make([]float64, rows)
		for r := 0; r < rows; r++ {
			means[r], invs[r] = normRow(xv[r*H:(r+1)*H], gv, bev, eps, rms)
		}
		res := make([]*graph.Tensor, len(n.Outputs))
		if res[0], err = kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, xv); err != nil {
			return nil, err
		}
		stat := append(append([]int(nil), x.Shape[:x.Rank()-1]...), 1)
		for i, vals := range [][]float64{1: means, 2: invs} {
			if i > 0 && wants(n, i) {
				if res[i], err = kernels.NewFromFloat64(ctx, n, graph.Float32, stat, vals); err != nil {
					return nil, err
				}
			}
		}
		if sum != nil {
			if res[3], err = kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, sum); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
}

// ---- SimplifiedLayerNormalization (ONNX Runtime, default domain) ----
//
// RMS normalization of X over the axes [axis, rank): Y = X/√(mean(X²)+ε)
// ·scale, with scale shaped like the normalized dims (Y has scale's
// dtype); inv_std_var (float32, the normalized dims set to 1) is output
// 1. Defaults: axis -1, epsilon 1e-5.

func simplifiedNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, scale := kernels.Input(in, 0), kernels.Input(in, 1)
	if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, scale, "scale"); err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, kernels.Invalidf(n, "X must have rank >= 1")
	}
	ax, err := kernels.NormAxis(n.AttrInt("axis", -1), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "axis: %v", err)
	}
	M := kernels.Prod(x.Shape[ax:])
	if scale.Len() != M || scale.Rank() > x.Rank()-ax {
		return nil, kernels.Invalidf(n, "scale has shape %v, want the normalized dims %v", scale.Shape, x.Shape[ax:])
	}
	gv := scale.Float64s()
	xv := x.Float64s()
	rows := 0
	if M > 0 {
		rows = len(xv) / M
	}
	invs := make([]float64, rows)
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	for r := 0; r < rows; r++ {
		_, invs[r] = normRow(xv[r*M:(r+1)*M], gv, nil, eps, true)
	}
	res := make([]*graph.Tensor, len(n.Outputs))
	if res[0], err = kernels.NewFromFloat64(ctx, n, scale.DType, x.Shape, xv); err != nil {
		return nil, err
	}
	if wants(n, 1) {
		stat := append([]int(nil), x.Shape...)
		for i := ax; i < len(stat); i++ {
			stat[i] = 1
		}
		if res[1], err = kernels.NewFromFloat64(ctx, n, graph.Float32, stat, invs); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ---- EmbedLayerNormalization (com.microsoft) ----
//
// Inputs: input_ids (B, S), segment_ids (B, S) optional, word_embedding
// (V, H), position_embedding (P, H), segment_embedding (G, H) optional
// (with segment_ids), gamma (H), beta (H) optional, mask (B, S) optional,
// position_ids (B, S) or (1, S) optional (default: 0..S-1).
//
//	e[b,s] = word[ids[b,s]] + pos[position_ids[b,s]] + seg[segment_ids[b,s]]
//	output = LayerNorm(e)·γ+β (epsilon, default 1e-12)
//
// mask_index (B) int32 counts the ones in each mask row (0 without a
// mask); embedding_sum (output 2) is e.

func embedNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	ids, seg, word, posE, segE, gamma, beta, mask, posIDs := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2),
		kernels.Input(in, 3), kernels.Input(in, 4), kernels.Input(in, 5), kernels.Input(in, 6), kernels.Input(in, 7), kernels.Input(in, 8)
	if err := kernels.CheckInput(n, ids, "input_ids"); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		t    *graph.Tensor
		what string
	}{{ids, "input_ids"}, {seg, "segment_ids"}, {mask, "mask"}, {posIDs, "position_ids"}} {
		if err := checkInts(n, c.t, c.what); err != nil {
			return nil, err
		}
	}
	for _, c := range []struct {
		t    *graph.Tensor
		what string
		opt  bool
	}{{word, "word_embedding", false}, {posE, "position_embedding", false}, {segE, "segment_embedding", true}, {gamma, "gamma", false}, {beta, "beta", true}} {
		if c.opt && c.t == nil {
			continue
		}
		if err := kernels.CheckFloatInput(n, c.t, c.what); err != nil {
			return nil, err
		}
	}
	if ids.Rank() != 2 {
		return nil, kernels.Invalidf(n, "input_ids must be 2-D (batch, sequence), got %v", ids.Shape)
	}
	B, S := ids.Shape[0], ids.Shape[1]
	if word.Rank() != 2 || posE.Rank() != 2 || posE.Shape[1] != word.Shape[1] {
		return nil, kernels.Invalidf(n, "word_embedding %v and position_embedding %v must be 2-D with one hidden size", word.Shape, posE.Shape)
	}
	H := word.Shape[1]
	if (seg == nil) != (segE == nil) {
		return nil, kernels.Invalidf(n, "segment_ids and segment_embedding must be given together")
	}
	if segE != nil && (segE.Rank() != 2 || segE.Shape[1] != H || !graph.SameShape(seg.Shape, ids.Shape)) {
		return nil, kernels.Invalidf(n, "segment_embedding %v / segment_ids %v do not match (%d, %d) ids of hidden size %d", segE.Shape, seg.Shape, B, S, H)
	}
	if mask != nil && !graph.SameShape(mask.Shape, ids.Shape) {
		return nil, kernels.Invalidf(n, "mask has shape %v, want %v", mask.Shape, ids.Shape)
	}
	posBatch := false
	if posIDs != nil {
		switch {
		case graph.SameShape(posIDs.Shape, ids.Shape):
			posBatch = true
		case graph.SameShape(posIDs.Shape, []int{1, S}):
		default:
			return nil, kernels.Invalidf(n, "position_ids has shape %v, want [%d %d] or [1 %d]", posIDs.Shape, B, S, S)
		}
	}
	gv, err := vec1(n, gamma, H, "gamma")
	if err != nil {
		return nil, err
	}
	bv, err := vec1(n, beta, H, "beta")
	if err != nil {
		return nil, err
	}
	wv, pv := word.Float64s(), posE.Float64s()
	var sv []float64
	if segE != nil {
		sv = segE.Float64s()
	}
	lookup := func(table []float64, rows int, id int64, what string) ([]float64, error) {
		if id < 0 || id >= int64(rows) {
			return nil, kernels.Invalidf(n, "%s %d out of range [0, %d)", what, id, rows)
		}
		return table[int(id)*H : (int(id)+1)*H], nil
	}
	emb := make([]float64, B*S*H)
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			r := emb[(b*S+s)*H : (b*S+s+1)*H]
			w, err := lookup(wv, word.Shape[0], ids.Int64At(b*S+s), "input id")
			if err != nil {
				return nil, err
			}
			p := int64(s)
			if posIDs != nil {
				if posBatch {
					p = posIDs.Int64At(b*S + s)
				} else {
					p = posIDs.Int64At(s)
				}
			}
			pe, err := lookup(pv, posE.Shape[0], p, "position id")
			if err != nil {
				return nil, err
			}
			for i := range r {
				r[i] = w[i] + pe[i]
			}
			if sv != nil {
				se, err := lookup(sv, segE.Shape[0], seg.Int64At(b*S+s), "segment id")
				if err != nil {
					return nil, err
				}
				for i := range r {
					r[i] += se[i]
				}
			}
		}
	}
	var sum []float64
	if wants(n, 2) {
		sum = append([]float64(nil), emb...)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-12))
	for r := 0; r < B*S; r++ {
		normRow(emb[r*H:(r+1)*H], gv, bv, eps, false)
	}
	res := make([]*graph.Tensor, len(n.Outputs))
	if res[0], err = kernels.NewFromFloat64(ctx, n, word.DType, []int{B, S, H}, emb); err != nil {
		return nil, err
	}
	if wants(n, 1) {
		mi := make([]float64, B)
		if mask != nil {
			for b := 0; b < B; b++ {
				for s := 0; s < S; s++ {
					if mask.Int64At(b*S+s) == 1 {
						mi[b]++
					}
				}
			}
		}
		if res[1], err = kernels.NewFromFloat64(ctx, n, graph.Int32, []int{B}, mi); err != nil {
			return nil, err
		}
	}
	if sum != nil {
		if res[2], err = kernels.NewFromFloat64(ctx, n, word.DType, []int{B, S, H}, sum); err != nil {
			return nil, err
		}
	}
	return res, nil
}
