package misc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{OpType: "Einsum", MinOpset: 12, MinInputs: 1, MaxInputs: -1, Types: kernels.NumericTypes, Kernel: einsumKernel, Infer: einsumInfer})
}

// Labels: letters are their ASCII code; the ellipsis' k-th dimension
// (right-aligned across operands, k < E) is ellBase+k.
const ellBase = 128

type einsumSpec struct {
	terms [][]int // per input, one label per dimension
	out   []int   // output labels
	ell   int     // E: broadcast rank of the ellipsis
}

// parseEinsum parses an equation for inputs of the given ranks.
func parseEinsum(eq string, ranks []int) (*einsumSpec, error) {
	eq = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\n' {
			return -1
		}
		return r
	}, eq)
	lhs, rhs, explicit := strings.Cut(eq, "->")
	if strings.Contains(rhs, "->") {
		return nil, fmt.Errorf("equation %q has more than one '->'", eq)
	}
	parts := strings.Split(lhs, ",")
	if len(parts) != len(ranks) {
		return nil, fmt.Errorf("equation %q has %d operands, node has %d inputs", eq, len(parts), len(ranks))
	}
	type term struct {
		pre, post []int
		hasEll    bool
	}
	parseTerm := func(s string) (term, error) {
		var t term
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '.':
				if t.hasEll || !strings.HasPrefix(s[i:], "...") {
					return t, fmt.Errorf("bad ellipsis in term %q", s)
				}
				t.hasEll = true
				i += 2
			case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'):
				if t.hasEll {
					t.post = append(t.post, int(c))
				} else {
					t.pre = append(t.pre, int(c))
				}
			default:
				return t, fmt.Errorf("bad character %q in term %q", c, s)
			}
		}
		return t, nil
	}
	sp := &einsumSpec{}
	terms := make([]term, len(parts))
	ellRanks := make([]int, len(parts))
	for i, p := range parts {
		t, err := parseTerm(p)
		if err != nil {
			return nil, err
		}
		terms[i] = t
		nl := len(t.pre) + len(t.post)
		switch {
		case t.hasEll && ranks[i] >= nl:
			ellRanks[i] = ranks[i] - nl
		case !t.hasEll && ranks[i] == nl:
		default:
			return nil, fmt.Errorf("term %q does not match input %d of rank %d", p, i, ranks[i])
		}
		sp.ell = max(sp.ell, ellRanks[i])
	}
	count := map[int]int{}
	for i, t := range terms {
		labels := append([]int{}, t.pre...)
		for k := sp.ell - ellRanks[i]; k < sp.ell; k++ {
			labels = append(labels, ellBase+k)
		}
		labels = append(labels, t.post...)
		sp.terms = append(sp.terms, labels)
		for _, l := range labels {
			count[l]++
		}
	}
	if explicit {
		t, err := parseTerm(rhs)
		if err != nil {
			return nil, err
		}
		sp.out = append(sp.out, t.pre...)
		if t.hasEll {
			for k := 0; k < sp.ell; k++ {
				sp.out = append(sp.out, ellBase+k)
			}
		}
		sp.out = append(sp.out, t.post...)
		seen := map[int]bool{}
		for _, l := range sp.out {
			if l < ellBase && count[l] == 0 {
				return nil, fmt.Errorf("output label %q does not occur in the inputs", rune(l))
			}
			if seen[l] {
				return nil, fmt.Errorf("output label %q repeated", rune(l))
			}
			seen[l] = true
		}
	} else {
		for k := 0; k < sp.ell; k++ {
			sp.out = append(sp.out, ellBase+k)
		}
		var once []int
		for l, c := range count {
			if l < ellBase && c == 1 {
				once = append(once, l)
			}
		}
		sort.Ints(once)
		sp.out = append(sp.out, once...)
	}
	return sp, nil
}

// labelDims resolves each label's size; a size-1 dimension broadcasts.
func (sp *einsumSpec) labelDims(shapes [][]int) (map[int]int, error) {
	d := map[int]int{}
	for i, t := range sp.terms {
		for p, l := range t {
			s := shapes[i][p]
			old, ok := d[l]
			switch {
			case !ok || old == 1:
				d[l] = s
			case s == 1 || s == old:
			default:
				return nil, fmt.Errorf("label %s has sizes %d and %d", labelName(l), old, s)
			}
		}
	}
	return d, nil
}

func labelName(l int) string {
	if l >= ellBase {
		return fmt.Sprintf("...[%d]", l-ellBase)
	}
	return fmt.Sprintf("%q", rune(l))
}

func einsumInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	dt := inType(in, 0).DType
	ranks := make([]int, len(in))
	shapes := make([][]int, len(in))
	for i := range in {
		s := in[i].Type.Shape
		if s == nil {
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		ranks[i] = len(s)
		shapes[i] = make([]int, len(s))
		for j, d := range s {
			shapes[i][j] = 1 // unknown dims never conflict
			if d.Static() {
				shapes[i][j] = int(d.Value)
			}
		}
	}
	sp, err := parseEinsum(n.AttrString("equation", ""), ranks)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	ld, err := sp.labelDims(shapes)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	// a label is known when every occurrence is static and some is not 1,
	// or every occurrence is static 1
	known := map[int]bool{}
	for l := range ld {
		known[l] = true
	}
	for i, t := range sp.terms {
		for p, l := range t {
			if !in[i].Type.Shape[p].Static() {
				known[l] = false
			}
		}
	}
	out := make([]int64, len(sp.out))
	for i, l := range sp.out {
		out[i] = -1
		if known[l] || ld[l] > 1 {
			out[i] = int64(ld[l])
		}
	}
	return []graph.ValueType{tensorType(dt, dims(out...))}, nil
}

// odometer advances the multi-index cnt over sizes sz, keeping each
// operand's offset off[k] in step (st[k][j] is label j's stride in operand k).
func odometer(cnt, sz []int, st [][]int, off []int) {
	for j := len(cnt) - 1; j >= 0; j-- {
		cnt[j]++
		for k := range off {
			off[k] += st[k][j]
		}
		if cnt[j] < sz[j] {
			return
		}
		for k := range off {
			off[k] -= st[k][j] * sz[j]
		}
		cnt[j] = 0
	}
}

type operand[T graph.Numeric] struct {
	data   []T
	labels []int
	shape  []int
}

// contract computes out[outLabels] = sum over the other labels of the
// product of the operands.
func contract[T graph.Numeric](ops []operand[T], outLabels []int, ld map[int]int) operand[T] {
	inOut := map[int]bool{}
	for _, l := range outLabels {
		inOut[l] = true
	}
	var sumLabels []int
	seen := map[int]bool{}
	for _, op := range ops {
		for _, l := range op.labels {
			if !inOut[l] && !seen[l] {
				seen[l] = true
				sumLabels = append(sumLabels, l)
			}
		}
	}
	// per operand, per label: element stride (repeated labels add up, which
	// walks the diagonal; broadcast size-1 dims contribute 0)
	stride := make([]map[int]int, len(ops))
	for k, op := range ops {
		st := kernels.Strides(op.shape)
		stride[k] = map[int]int{}
		for p, l := range op.labels {
			if op.shape[p] != 1 {
				stride[k][l] += st[p]
			}
		}
	}
	sizes := func(labels []int) ([]int, int) {
		sz := make([]int, len(labels))
		total := 1
		for i, l := range labels {
			sz[i] = ld[l]
			total *= sz[i]
		}
		return sz, total
	}
	steps := func(labels []int) [][]int {
		st := make([][]int, len(ops))
		for k := range ops {
			st[k] = make([]int, len(labels))
			for j, l := range labels {
				st[k][j] = stride[k][l]
			}
		}
		return st
	}
	oSz, outN := sizes(outLabels)
	sSz, sumN := sizes(sumLabels)
	oSt, sSt := steps(outLabels), steps(sumLabels)
	res := operand[T]{data: make([]T, outN), labels: append([]int{}, outLabels...), shape: oSz}
	base := make([]int, len(ops))
	off := make([]int, len(ops))
	oCnt, sCnt := make([]int, len(oSz)), make([]int, len(sSz))
	for i := 0; i < outN; i++ {
		var acc T
		copy(off, base)
		for s := 0; s < sumN; s++ {
			p := T(1)
			for k, op := range ops {
				p *= op.data[off[k]]
			}
			acc += p
			odometer(sCnt, sSz, sSt, off)
		}
		res.data[i] = acc
		odometer(oCnt, oSz, oSt, base)
	}
	return res
}

// einsumRun contracts the operands left to right, keeping at each step only
// the labels still needed by later operands or the output.
func einsumRun[T graph.Numeric](sp *einsumSpec, datas [][]T, shapes [][]int, ld map[int]int) (operand[T], error) {
	ops := make([]operand[T], len(datas))
	for i := range datas {
		ops[i] = operand[T]{data: datas[i], labels: sp.terms[i], shape: shapes[i]}
	}
	if len(ops) == 1 {
		return contract(ops, sp.out, ld), nil
	}
	cur := ops[0]
	for i := 1; i < len(ops); i++ {
		keep := sp.out
		if i < len(ops)-1 {
			need := map[int]bool{}
			for _, l := range sp.out {
				need[l] = true
			}
			for _, op := range ops[i+1:] {
				for _, l := range op.labels {
					need[l] = true
				}
			}
			keep = nil
			seen := map[int]bool{}
			for _, l := range append(append([]int{}, cur.labels...), ops[i].labels...) {
				if need[l] && !seen[l] {
					seen[l] = true
					keep = append(keep, l)
				}
			}
		}
		shape := make([]int, len(keep))
		for j, l := range keep {
			shape[j] = ld[l]
		}
		if _, err := graph.CheckAlloc(graph.Float64, shape); err != nil {
			return cur, fmt.Errorf("intermediate result: %w", err)
		}
		cur = contract([]operand[T]{cur, ops[i]}, keep, ld)
	}
	return cur, nil
}

func einsumTyped[T graph.Numeric](ctx *kernels.Context, n *graph.Node, sp *einsumSpec, in []*graph.Tensor, ld map[int]int) (*graph.Tensor, error) {
	datas := make([][]T, len(in))
	shapes := make([][]int, len(in))
	for i, t := range in {
		datas[i] = t.Data.([]T)
		shapes[i] = t.Shape
	}
	r, err := einsumRun(sp, datas, shapes, ld)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	out, err := alloc(ctx, n, in[0].DType, r.shape)
	if err != nil {
		return nil, err
	}
	copy(out.Data.([]T), r.data)
	return out, nil
}

// einsumKernel evaluates the Einstein summation: labels repeated within an
// operand take the diagonal, labels absent from the output are summed, "..."
// broadcasts, and an implicit output lists the ellipsis dims and then the
// labels seen once, in ASCII order.
func einsumKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if len(in) == 0 {
		return nil, kernels.Invalidf(n, "no inputs")
	}
	ranks := make([]int, len(in))
	shapes := make([][]int, len(in))
	for i, t := range in {
		if err := checkIn(n, t, fmt.Sprintf("Inputs[%d]", i)); err != nil {
			return nil, err
		}
		if t.DType != in[0].DType {
			return nil, kernels.Invalidf(n, "input dtypes differ: %v and %v", in[0].DType, t.DType)
		}
		ranks[i], shapes[i] = t.Rank(), t.Shape
	}
	sp, err := parseEinsum(n.AttrString("equation", ""), ranks)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	ld, err := sp.labelDims(shapes)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	oshape := make([]int, len(sp.out))
	for i, l := range sp.out {
		oshape[i] = ld[l]
	}
	if _, err := graph.CheckAlloc(in[0].DType, oshape); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	var out *graph.Tensor
	switch in[0].Data.(type) {
	case []float32, []float64, []graph.F16, []graph.BF16:
		datas := make([][]float64, len(in))
		for i, t := range in {
			datas[i] = t.Float64s()
		}
		r, e := einsumRun(sp, datas, shapes, ld)
		if e != nil {
			return nil, kernels.Invalidf(n, "%v", e)
		}
		out, err = floatsOut(ctx, n, in[0].DType, r.shape, r.data)
	case []int8:
		out, err = einsumTyped[int8](ctx, n, sp, in, ld)
	case []int16:
		out, err = einsumTyped[int16](ctx, n, sp, in, ld)
	case []int32:
		out, err = einsumTyped[int32](ctx, n, sp, in, ld)
	case []int64:
		out, err = einsumTyped[int64](ctx, n, sp, in, ld)
	case []uint8:
		out, err = einsumTyped[uint8](ctx, n, sp, in, ld)
	case []uint16:
		out, err = einsumTyped[uint16](ctx, n, sp, in, ld)
	case []uint32:
		out, err = einsumTyped[uint32](ctx, n, sp, in, ld)
	case []uint64:
		out, err = einsumTyped[uint64](ctx, n, sp, in, ld)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", in[0].DType)
	}
	return wrap(out, err)
}
