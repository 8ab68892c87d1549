package misc

import (
	"fmt"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Einsum", MinOpset: 12, MinInputs: 1, MaxInputs: -1, Types: ops.NumericTypes, Infer: einsumInfer})
}

// Labels: letters are their ASCII code; the ellipsis' k-th dimension
// (right-aligned across operands, k < E) is ellBase+k.
const ellBase = 128

type EinsumSpec struct {
	Terms [][]int // per input, one label per dimension
	Out   []int   // output labels
	ell   int     // E: broadcast rank of the ellipsis
}

// ParseEinsum parses an equation for inputs of the given ranks.
func ParseEinsum(eq string, ranks []int) (*EinsumSpec, error) {
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
	sp := &EinsumSpec{}
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
		sp.Terms = append(sp.Terms, labels)
		for _, l := range labels {
			count[l]++
		}
	}
	if explicit {
		t, err := parseTerm(rhs)
		if err != nil {
			return nil, err
		}
		sp.Out = append(sp.Out, t.pre...)
		if t.hasEll {
			for k := 0; k < sp.ell; k++ {
				sp.Out = append(sp.Out, ellBase+k)
			}
		}
		sp.Out = append(sp.Out, t.post...)
		seen := map[int]bool{}
		for _, l := range sp.Out {
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
			sp.Out = append(sp.Out, ellBase+k)
		}
		var once []int
		for l, c := range count {
			if l < ellBase && c == 1 {
				once = append(once, l)
			}
		}
		sort.Ints(once)
		sp.Out = append(sp.Out, once...)
	}
	return sp, nil
}

// LabelDims resolves each label's size; a size-1 dimension broadcasts.
func (sp *EinsumSpec) LabelDims(shapes [][]int) (map[int]int, error) {
	d := map[int]int{}
	for i, t := range sp.Terms {
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

func einsumInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := ops.InputType(in, 0).DType
	ranks := make([]int, len(in))
	shapes := make([][]int, len(in))
	for i := range in {
		s := in[i].Type.Shape
		if s == nil {
			return []graph.ValueType{ops.TensorType(dt, nil)}, nil
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
	sp, err := ParseEinsum(n.AttrString("equation", ""), ranks)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	ld, err := sp.LabelDims(shapes)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	// a label is known when every occurrence is static and some is not 1,
	// or every occurrence is static 1
	known := map[int]bool{}
	for l := range ld {
		known[l] = true
	}
	for i, t := range sp.Terms {
		for p, l := range t {
			if !in[i].Type.Shape[p].Static() {
				known[l] = false
			}
		}
	}
	out := make([]int64, len(sp.Out))
	for i, l := range sp.Out {
		out[i] = -1
		if known[l] || ld[l] > 1 {
			out[i] = int64(ld[l])
		}
	}
	return []graph.ValueType{ops.TensorType(dt, dims(out...))}, nil
}
