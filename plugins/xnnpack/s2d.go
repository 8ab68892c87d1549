package xnnpack

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
)

// Space-to-depth by slicing ("Focus", the stem of YOLOv5 and YOLOX): a
// Concat along channels of strided Slices of one NCHW value X, each
// X[:, :, qy::b, qx::b]. This libXNNPACK has neither a strided slice nor
// a concatenate node, so lowered as written it is b² or more Go copies at
// the input's full resolution, a layout change to NHWC and a split of the
// partition. The concat's NHWC value F[n, i, j, k·C+c] = X[n, c, b·i+qy_k,
// b·j+qx_k] is one gather instead, written by one pass over X: at the
// partition boundary when X is a partition input read by nothing else
// (in place of its layout conversion), else as one Go step.

// s2dChunk is one concat input: X's phase (qy, qx).
type s2dChunk struct{ qy, qx int }

// s2dVal is a space-to-depth concat: its chunks' phases over X.
type s2dVal struct {
	block  int
	chunks []s2dChunk
}

// s2dCandidate is what findS2D records for one Concat: the slice nodes of
// its inputs' chains and their source.
type s2dCandidate struct {
	src    string
	chains [][]*graph.Node // per concat input, from the source outwards
	nodes  []*graph.Node   // the slices, once each, in graph order
}

// findS2D marks, by graph structure alone, the Concats that may be
// space-to-depth slicing; their slices are skipped in the main walk and
// lowered with the Concat (lowerS2D), which checks the bounds once the
// shapes are known.
func (b *builder) findS2D(order []*graph.Node) map[*graph.Node]*s2dCandidate {
	producer := map[string]*graph.Node{}
	readers := map[string][]*graph.Node{}
	for _, n := range order {
		for _, o := range n.Outputs {
			producer[o] = n
		}
		for _, in := range n.Inputs {
			if in != "" {
				readers[in] = append(readers[in], n)
			}
		}
	}
	var res map[*graph.Node]*s2dCandidate
	for _, n := range order {
		if n.OpType != "Concat" || len(n.Inputs) < 2 || len(n.Outputs) != 1 || b.isOut[n.Outputs[0]] {
			continue
		}
		if ax := n.AttrInt("axis", 0); ax != 1 && ax != -3 {
			continue
		}
		c := &s2dCandidate{}
		in := map[*graph.Node]bool{n: true}
		ok := true
		for _, x := range n.Inputs {
			var chain []*graph.Node
			name := x
			for {
				p := producer[name]
				if p == nil || (p.OpType != "Slice" && p.OpType != "Reshape" && p.OpType != "Identity") || b.isOut[name] {
					break
				}
				chain = append([]*graph.Node{p}, chain...)
				in[p] = true
				name = p.Input(0)
			}
			if len(chain) == 0 || (c.src != "" && name != c.src) {
				ok = false
				break
			}
			c.src = name
			c.chains = append(c.chains, chain)
		}
		// the slices' values are read only by one another and the concat
		for m := range in {
			if m == n {
				continue
			}
			for _, r := range readers[m.Outputs[0]] {
				ok = ok && in[r]
			}
		}
		if !ok {
			continue
		}
		if res == nil {
			res = map[*graph.Node]*s2dCandidate{}
		}
		res[n] = c
		for _, m := range order {
			if in[m] && m != n {
				b.skip[m] = true
				c.nodes = append(c.nodes, m)
			}
		}
	}
	return res
}

// lowerS2D lowers a candidate Concat as one gather when its bounds are
// space-to-depth, else the slices and the Concat as written.
func (b *builder) lowerS2D(n *graph.Node, c *s2dCandidate) error {
	src := b.vals[c.src]
	lv, ok := b.s2dBounds(c, src)
	if !ok {
		return b.lowerAsWritten(append(append([]*graph.Node{}, c.nodes...), n))
	}
	b.node1 = n
	blk := lv.block
	shape := []int{src.shape[0], src.shape[1] * len(c.chains), src.shape[2] / blk, src.shape[3] / blk}
	out := b.newTensor(permute(shape, nhwc))
	xs := src.shape
	p := b.p
	fill := func(dst, x []float32) {
		p.parallel(xs[0]*xs[2]/blk, out.elems(), func(lo, hi int) { spaceToDepth(dst, x, xs, lv, lo, hi) })
	}
	if bi := b.inputIndex(c.src); bi >= 0 && b.uses[c.src] == b.srcReads(c) && src.t.stage == -1 && src.t.view == nil {
		// X is a partition input read only by the slices: the gather is
		// its conversion at the boundary
		bnd := &b.p.inputs[bi]
		bnd.t, bnd.perm, bnd.fill = out, nil, fill
		out.stage, out.keep = -1, true
		src.t.keep = false
	} else {
		in := b.need(src, nil)
		b.addGo(func(buf func(*tensor) []float32) { fill(buf(out), buf(in)) }, []*tensor{in}, out)
	}
	b.setOut(n, &val{t: out, shape: shape, perm: nhwc})
	return nil
}

// srcReads counts the candidate's slices that read its source.
func (b *builder) srcReads(c *s2dCandidate) int {
	k := 0
	for _, m := range c.nodes {
		if m.Input(0) == c.src {
			k++
		}
	}
	return k
}

// inputIndex is the partition input named name, -1 when none.
func (b *builder) inputIndex(name string) int {
	for i, in := range b.sg.Inputs {
		if in.Name == name && b.p.inputs[i].t != nil {
			return i
		}
	}
	return -1
}

// lowerAsWritten lowers nodes one by one.
func (b *builder) lowerAsWritten(nodes []*graph.Node) error {
	for _, m := range nodes {
		if err := b.node(m); err != nil {
			return err
		}
	}
	return nil
}

// spaceToDepth writes output rows [lo, hi) (over N·H/b) of dst (NHWC
// [N, H/b, W/b, k·C]) from x (NCHW [N, C, H, W]), reading each source row
// once.
func spaceToDepth(dst, x []float32, xs []int, lv *s2dVal, lo, hi int) {
	c, h, w := xs[1], xs[2], xs[3]
	blk := lv.block
	oh, ow := h/blk, w/blk
	oc := c * len(lv.chunks)
	for r := lo; r < hi; r++ {
		n, i := r/oh, r%oh
		row := dst[r*ow*oc : (r+1)*ow*oc]
		for k, ch := range lv.chunks {
			for cc := 0; cc < c; cc++ {
				sr := x[((n*c+cc)*h+blk*i+ch.qy)*w : ((n*c+cc)*h+blk*i+ch.qy+1)*w]
				d := k*c + cc
				for j := 0; j < ow; j++ {
					row[j*oc+d] = sr[blk*j+ch.qx]
				}
			}
		}
	}
}

// s2dBounds checks every chain selects X[:, :, qy::blk, qx::blk] of a
// float32 NCHW src whose H and W blk divides.
func (b *builder) s2dBounds(c *s2dCandidate, src *val) (*s2dVal, bool) {
	if src == nil || src.t == nil || src.konst != nil || len(src.shape) != 4 {
		return nil, false
	}
	lv := &s2dVal{}
	for _, ch := range c.chains {
		shape := append([]int{}, src.shape...)
		start := []int{0, 0, 0, 0}
		step := []int{1, 1, 1, 1}
		for _, s := range ch {
			if s.OpType != "Slice" {
				// a Reshape to the shape it has, an Identity (TFLite's
				// strided slices come as Slice and Reshape)
				if s.OpType == "Reshape" && !b.sameShapeReshape(s, shape) {
					return nil, false
				}
				continue
			}
			a, err := b.sliceArgs(s)
			if err != nil {
				return nil, false
			}
			axes, err := a.Check(s, 4)
			if err != nil {
				return nil, false
			}
			for i, ax := range axes {
				st := a.Step(i)
				s0, cnt := shapeops.SliceRange(a.Starts[i], a.Ends[i], st, int64(shape[ax]))
				if st <= 0 || cnt <= 0 {
					return nil, false
				}
				start[ax] += int(s0) * step[ax]
				step[ax] *= int(st)
				shape[ax] = int(cnt)
			}
		}
		if shape[0] != src.shape[0] || shape[1] != src.shape[1] || step[0] != 1 || step[1] != 1 {
			return nil, false
		}
		blk := step[2]
		if blk < 2 || step[3] != blk || src.shape[2]%blk != 0 || src.shape[3]%blk != 0 ||
			shape[2] != src.shape[2]/blk || shape[3] != src.shape[3]/blk || start[2] >= blk || start[3] >= blk {
			return nil, false
		}
		if lv.block != 0 && lv.block != blk {
			return nil, false
		}
		lv.block = blk
		lv.chunks = append(lv.chunks, s2dChunk{qy: start[2], qx: start[3]})
	}
	return lv, true
}

// sameShapeReshape reports whether the Reshape n, applied to a value of
// shape, leaves it as it is (0 copies a dim unless allowzero, -1 takes
// what is left).
func (b *builder) sameShapeReshape(n *graph.Node, shape []int) bool {
	k, err := b.konst(n, 1)
	if err != nil || k == nil || (k.DType != graph.Int64 && k.DType != graph.Int32) {
		return false
	}
	want := k.Int64s()
	if len(want) != len(shape) {
		return false
	}
	for i, d := range want {
		switch {
		case d == int64(shape[i]):
		case d == 0 && n.AttrInt("allowzero", 0) == 0:
		case d == -1:
			// the other dims match, so -1 takes this one's size
		default:
			return false
		}
	}
	return true
}
