package xnnpack

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// split is a Go step per output (this XNNPACK has no split node): a
// strided copy along the axis in the input's physical layout, so a split
// of NHWC data stays NHWC.
func (b *builder) split(n *graph.Node, x *val, oshapes [][]int) error {
	r := len(x.shape)
	axis := int(n.AttrInt("axis", 0))
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return b.nodeErr(n, "axis %d out of range for rank %d", axis, r)
	}
	if len(oshapes) != len(n.Outputs) {
		return b.nodeErr(n, "%d outputs inferred for %d outputs", len(oshapes), len(n.Outputs))
	}
	pa := axis
	for i, a := range x.perm {
		if a == axis {
			pa = i
		}
	}
	src := b.need(x, x.perm)
	idims := src.dims
	outer, inner := 1, 1
	for _, d := range idims[:pa] {
		outer *= d
	}
	for _, d := range idims[pa+1:] {
		inner *= d
	}
	rowIn := idims[pa] * inner
	off := 0
	for i, name := range n.Outputs {
		os := oshapes[i]
		if len(os) != r {
			return b.nodeErr(n, "output %d has rank %d, input %d", i, len(os), r)
		}
		if os[axis] == 0 {
			// an empty part: XNNPACK cannot hold it; the partition runs on
			// the reference kernels for these shapes
			return b.nodeErr(n, "output %d is empty", i)
		}
		row := os[axis] * inner
		if off+row > rowIn {
			return b.nodeErr(n, "split sizes exceed the axis length %d", idims[pa])
		}
		if name == "" {
			off += row
			continue
		}
		out := b.newTensor(permute(os, x.perm))
		start := off
		b.addGo(func(buf func(*tensor) []float32) {
			s, d := buf(src), buf(out)
			for o := 0; o < outer; o++ {
				copy(d[o*row:(o+1)*row], s[o*rowIn+start:o*rowIn+start+row])
			}
		}, []*tensor{src}, out)
		b.vals[name] = &val{t: out, shape: os, perm: x.perm}
		off += row
	}
	return nil
}

// tanh lowers Tanh as 2·sigmoid(2x) − 1 (this XNNPACK has no f32 tanh
// node). Near 0 the subtraction cancels: the absolute error stays at a few
// ulp of 1 (~2e-7), inside the suite's float32 bound of 1e-6 absolute.
func (b *builder) tanh(n *graph.Node, x *val) error {
	ones := make([]int, len(x.t.dims))
	for i := range ones {
		ones[i] = 1
	}
	two := &tensor{dims: ones, static: []float32{2}, stage: -1, slot: -1}
	one := &tensor{dims: ones, static: []float32{1}, stage: -1, slot: -1}
	lo, hi := float32(math.Inf(-1)), inf
	x2 := b.add(&xop{kind: "binary:Mul", in: []*tensor{x.t, two}, out: b.newTensor(x.t.dims), f: []float32{lo, hi}})
	s := b.add(&xop{kind: "unary:Sigmoid", in: []*tensor{x2}, out: b.newTensor(x.t.dims)})
	s2 := b.add(&xop{kind: "binary:Mul", in: []*tensor{s, two}, out: b.newTensor(x.t.dims), f: []float32{lo, hi}})
	t := b.add(&xop{kind: "binary:Sub", in: []*tensor{s2, one}, out: b.newTensor(x.t.dims), f: []float32{lo, hi}})
	b.setOut(n, &val{t: t, shape: x.shape, perm: x.perm})
	return nil
}
