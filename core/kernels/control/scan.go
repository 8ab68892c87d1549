package control

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Scan", scanKernel)
}

// take returns t's slice at index i along axis (the axis removed), in a
// buffer of ctx's allocator (the caller releases it when done).
func take(ctx *kernels.Context, t *graph.Tensor, axis, i int) (*graph.Tensor, error) {
	shape := append(append([]int{}, t.Shape[:axis]...), t.Shape[axis+1:]...)
	out, err := ctx.New(t.DType, shape)
	if err != nil {
		return nil, err
	}
	outer, inner, dim := kernels.Prod(t.Shape[:axis]), kernels.Prod(t.Shape[axis+1:]), t.Shape[axis]
	for o := 0; o < outer; o++ {
		graph.CopyRange(out.Data, o*inner, t.Data, (o*dim+i)*inner, inner)
	}
	return out, nil
}

// put writes src as index i along axis of dst.
func put(dst *graph.Tensor, axis, i int, src *graph.Tensor) {
	outer, inner, dim := kernels.Prod(dst.Shape[:axis]), kernels.Prod(dst.Shape[axis+1:]), dst.Shape[axis]
	for o := 0; o < outer; o++ {
		graph.CopyRange(dst.Data, (o*dim+i)*inner, src.Data, o*inner, inner)
	}
}

func axesAttr(n *graph.Node, name string, count int, ranks []int) ([]int, error) {
	vals := n.AttrInts(name, nil)
	out := make([]int, count)
	for i := range out {
		if i < len(vals) {
			a, err := kernels.NormAxis(vals[i], ranks[i])
			if err != nil {
				return nil, kernels.Invalidf(n, "%s[%d]: %v", name, i, err)
			}
			out[i] = a
		}
	}
	return out, nil
}

func scanKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	body := n.AttrGraph("body")
	if body == nil {
		return nil, kernels.Invalidf(n, "missing body attribute")
	}
	if ctx.RunSubgraph == nil {
		return nil, kernels.Unsupportedf(n, "no subgraph runner in this context")
	}
	m := int(n.AttrInt("num_scan_inputs", 0))
	if ctx.Opset < 9 {
		return scan8(ctx, n, body, in, m)
	}
	if m < 1 || m > len(in) {
		return nil, kernels.Invalidf(n, "num_scan_inputs %d with %d inputs", m, len(in))
	}
	nState := len(in) - m
	states, scanIns := in[:nState], in[nState:]
	for i, t := range in {
		if t == nil {
			return nil, kernels.Invalidf(n, "input %d is absent", i)
		}
	}
	ranks := make([]int, m)
	for i, t := range scanIns {
		ranks[i] = t.Rank()
	}
	inAxes, err := axesAttr(n, "scan_input_axes", m, ranks)
	if err != nil {
		return nil, err
	}
	inDirs := n.AttrInts("scan_input_directions", nil)
	seqLen := -1
	for i, t := range scanIns {
		if ranks[i] == 0 {
			return nil, kernels.Invalidf(n, "scan input %d is a scalar", i)
		}
		l := t.Shape[inAxes[i]]
		if seqLen >= 0 && l != seqLen {
			return nil, kernels.Invalidf(n, "scan inputs disagree on sequence length (%d vs %d)", seqLen, l)
		}
		seqLen = l
	}
	k := len(body.Outputs) - nState
	if k < 0 || len(body.Inputs) != nState+m {
		return nil, kernels.Invalidf(n, "body has %d inputs and %d outputs for %d states and %d scan inputs", len(body.Inputs), len(body.Outputs), nState, m)
	}
	outDirs := n.AttrInts("scan_output_directions", nil)
	cur := append([]*graph.Tensor{}, states...)
	fromBody := make([]bool, nState) // cur[i] is ours to release when replaced
	outs := make([][]*graph.Tensor, k)
	for it := 0; it < seqLen; it++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: stopped at iteration %d: %w", n.Label(), it, err)
		}
		args := append([]*graph.Tensor{}, cur...)
		for i, t := range scanIns {
			idx := it
			if i < len(inDirs) && inDirs[i] == 1 {
				idx = seqLen - 1 - it
			}
			s, err := take(ctx, t, inAxes[i], idx)
			if err != nil {
				return nil, err
			}
			args = append(args, s)
		}
		res, err := ctx.RunSubgraph(ctx, body, args)
		if err != nil {
			return nil, err
		}
		for _, s := range args[nState:] {
			ctx.Release(s)
		}
		for i := range cur {
			if fromBody[i] {
				ctx.Release(cur[i])
			}
			cur[i], fromBody[i] = res[i], true
		}
		for j := 0; j < k; j++ {
			o := res[nState+j]
			if len(outs[j]) > 0 && (outs[j][0].DType != o.DType || !graph.SameShape(outs[j][0].Shape, o.Shape)) {
				return nil, kernels.Invalidf(n, "scan output %d changes type or shape between iterations", j)
			}
			outs[j] = append(outs[j], o)
		}
	}
	result := make([]*graph.Tensor, len(n.Outputs))
	copy(result, cur)
	outAxesRaw := n.AttrInts("scan_output_axes", nil)
	for j := 0; j < k && nState+j < len(result); j++ {
		var elem []int
		dt := body.Outputs[nState+j].Type.DType
		if len(outs[j]) > 0 {
			elem, dt = outs[j][0].Shape, outs[j][0].DType
		} else if s, ok := body.Outputs[nState+j].Type.Shape.Ints(); ok {
			elem = s
		}
		if dt == graph.Undefined {
			dt = graph.Float32
		}
		axis := 0
		if j < len(outAxesRaw) {
			a, err := kernels.NormAxis(outAxesRaw[j], len(elem)+1)
			if err != nil {
				return nil, kernels.Invalidf(n, "scan_output_axes[%d]: %v", j, err)
			}
			axis = a
		}
		shape := append(append(append([]int{}, elem[:axis]...), seqLen), elem[axis:]...)
		t, err := ctx.New(dt, shape)
		if err != nil {
			return nil, err
		}
		for it, o := range outs[j] {
			idx := it
			if j < len(outDirs) && outDirs[j] == 1 {
				idx = seqLen - 1 - it
			}
			put(t, axis, idx, o)
			ctx.Release(o)
		}
		result[nState+j] = t
	}
	return result, nil
}

// scan8 implements opset 8: a leading batch axis on states and scan inputs,
// the scan axis is 1, and the first input is the optional sequence_lens.
func scan8(ctx *kernels.Context, n *graph.Node, body *graph.Graph, in []*graph.Tensor, m int) ([]*graph.Tensor, error) {
	if len(in) < 1+m || m < 1 {
		return nil, kernels.Invalidf(n, "num_scan_inputs %d with %d inputs", m, len(in))
	}
	nState := len(in) - 1 - m
	states, scanIns := in[1:1+nState], in[1+nState:]
	if len(scanIns) == 0 || scanIns[0] == nil || scanIns[0].Rank() < 2 {
		return nil, kernels.Invalidf(n, "scan inputs need [batch, sequence, ...] shapes")
	}
	batch, seqLen := scanIns[0].Shape[0], scanIns[0].Shape[1]
	if sl := in[0]; sl != nil {
		for i := 0; i < sl.Len(); i++ {
			if int(sl.Int64At(i)) != seqLen {
				return nil, kernels.Unsupportedf(n, "sequence_lens shorter than the sequence axis")
			}
		}
	}
	dirs := n.AttrInts("directions", nil)
	k := len(body.Outputs) - nState
	if k < 0 {
		return nil, kernels.Invalidf(n, "body has too few outputs")
	}
	result := make([]*graph.Tensor, len(n.Outputs))
	for b := 0; b < batch; b++ {
		cur := make([]*graph.Tensor, nState) // all ours: slices of the states
		for i, s := range states {
			t, err := take(ctx, s, 0, b)
			if err != nil {
				return nil, err
			}
			cur[i] = t
		}
		var per [][]*graph.Tensor = make([][]*graph.Tensor, k)
		for it := 0; it < seqLen; it++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			args := append([]*graph.Tensor{}, cur...)
			for i, t := range scanIns {
				if t.Rank() < 2 || t.Shape[0] != batch || t.Shape[1] != seqLen {
					return nil, kernels.Invalidf(n, "scan input %d has shape %v, want [%d, %d, ...]", i, t.Shape, batch, seqLen)
				}
				idx := it
				if i < len(dirs) && dirs[i] == 1 {
					idx = seqLen - 1 - it
				}
				bt, err := take(ctx, t, 0, b)
				if err != nil {
					return nil, err
				}
				s, err := take(ctx, bt, 0, idx)
				ctx.Release(bt)
				if err != nil {
					return nil, err
				}
				args = append(args, s)
			}
			res, err := ctx.RunSubgraph(ctx, body, args)
			if err != nil {
				return nil, err
			}
			for _, s := range args[nState:] {
				ctx.Release(s)
			}
			for i := range cur {
				ctx.Release(cur[i])
				cur[i] = res[i]
			}
			for j := 0; j < k; j++ {
				per[j] = append(per[j], res[nState+j])
			}
		}
		for i := 0; i < nState && i < len(result); i++ {
			if result[i] == nil {
				shape := append([]int{batch}, cur[i].Shape...)
				t, err := ctx.New(cur[i].DType, shape)
				if err != nil {
					return nil, err
				}
				result[i] = t
			}
			put(result[i], 0, b, cur[i])
			ctx.Release(cur[i])
		}
		for j := 0; j < k && nState+j < len(result); j++ {
			if len(per[j]) == 0 {
				continue
			}
			if result[nState+j] == nil {
				shape := append([]int{batch, seqLen}, per[j][0].Shape...)
				t, err := ctx.New(per[j][0].DType, shape)
				if err != nil {
					return nil, err
				}
				result[nState+j] = t
			}
			seq, err := ctx.New(per[j][0].DType, append([]int{seqLen}, per[j][0].Shape...))
			if err != nil {
				return nil, err
			}
			for it, o := range per[j] {
				if !graph.SameShape(o.Shape, per[j][0].Shape) || o.DType != per[j][0].DType {
					return nil, kernels.Invalidf(n, "scan output %d changes shape", j)
				}
				put(seq, 0, it, o)
			}
			put(result[nState+j], 0, b, seq)
			for _, o := range per[j] {
				ctx.Release(o)
			}
			ctx.Release(seq)
		}
	}
	for i, r := range result {
		if r == nil && n.Outputs[i] != "" {
			return nil, kernels.Invalidf(n, "output %d was not produced (empty batch or sequence)", i)
		}
	}
	return result, nil
}
