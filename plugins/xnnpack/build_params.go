package xnnpack

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func (b *builder) bnParams(n *graph.Node) (scale, shift []float32, err error) {
	var ps [4][]float32
	for i := 0; i < 4; i++ {
		k, err := b.konst(n, i+1)
		if err != nil {
			return nil, nil, err
		}
		if k == nil || k.DType != graph.Float32 {
			return nil, nil, b.nodeErr(n, "parameter %d must be a float32 constant", i+1)
		}
		ps[i] = graph.Data[float32](k)
	}
	c := len(ps[0])
	for i := 1; i < 4; i++ {
		if len(ps[i]) != c {
			return nil, nil, b.nodeErr(n, "parameter sizes differ")
		}
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	scale, shift = make([]float32, c), make([]float32, c)
	for i := 0; i < c; i++ {
		s := float64(ps[0][i]) / math.Sqrt(float64(ps[3][i])+eps)
		scale[i] = float32(s)
		shift[i] = float32(float64(ps[1][i]) - float64(ps[2][i])*s)
	}
	return scale, shift, nil
}

// spatialPads returns [top, left, bottom, right] for a 2D window op.
func spatialPads(n *graph.Node, in []int, k, s, d []int) [4]int {
	var p [4]int
	switch n.AttrString("auto_pad", "NOTSET") {
	case "SAME_UPPER", "SAME_LOWER":
		upper := n.AttrString("auto_pad", "") == "SAME_UPPER"
		for i := 0; i < 2; i++ {
			out := (in[i] + s[i] - 1) / s[i]
			total := (out-1)*s[i] + (k[i]-1)*d[i] + 1 - in[i]
			if total < 0 {
				total = 0
			}
			lo := total / 2
			if !upper {
				lo = total - total/2
			}
			p[i], p[i+2] = lo, total-lo
		}
	case "VALID":
	default:
		ps := n.AttrInts("pads", nil)
		if len(ps) == 4 {
			for i := range p {
				p[i] = int(ps[i])
			}
		}
	}
	return p
}

func ints2(n *graph.Node, name string, def int) []int {
	v := n.AttrInts(name, nil)
	if len(v) != 2 {
		return []int{def, def}
	}
	return []int{int(v[0]), int(v[1])}
}

func (b *builder) conv(n *graph.Node, x *val, oshape []int) error {
	wk, err := b.konst(n, 1)
	if err != nil {
		return err
	}
	if wk.DType != graph.Float32 || len(wk.Shape) != 4 {
		return b.nodeErr(n, "weights must be float32 rank 4")
	}
	var bias []float32
	if bk, err := b.konst(n, 2); err != nil {
		return err
	} else if bk != nil {
		bias = append([]float32{}, graph.Data[float32](bk)...)
	}
	o, ig, kh, kw := wk.Shape[0], wk.Shape[1], wk.Shape[2], wk.Shape[3]
	groups := int(n.AttrInt("group", 1))
	cin := x.shape[1]
	if groups < 1 || cin != ig*groups || o%groups != 0 {
		return b.nodeErr(n, "group=%d does not match input channels %d and weights %v", groups, cin, wk.Shape)
	}
	w := graph.Data[float32](wk)
	// [O, I/g, kh, kw] → [O, kh, kw, I/g]
	packed := transposeData(w, wk.Shape, nil, []int{0, 2, 3, 1})
	outName := n.Outputs[0]
	// fold a BatchNormalization that is the only reader of the output
	if bn := b.soleConsumer(outName, "BatchNormalization"); bn != nil && !b.isOut[outName] {
		scale, shift, err := b.bnParams(bn)
		if err == nil && len(scale) == o {
			if bias == nil {
				bias = make([]float32, o)
			}
			per := kh * kw * ig
			for c := 0; c < o; c++ {
				for i := 0; i < per; i++ {
					packed[c*per+i] *= scale[c]
				}
				bias[c] = bias[c]*scale[c] + shift[c]
			}
			b.skip[bn] = true
			outName = bn.Outputs[0]
		}
	}
	k := []int{kh, kw}
	if ks := n.AttrInts("kernel_shape", nil); len(ks) == 2 && (int(ks[0]) != kh || int(ks[1]) != kw) {
		return b.nodeErr(n, "kernel_shape %v does not match weights %v", ks, wk.Shape)
	}
	s, d := ints2(n, "strides", 1), ints2(n, "dilations", 1)
	p := spatialPads(n, x.shape[2:], k, s, d)
	in := b.need(x, nhwc)
	wt := &tensor{dims: []int{o, kh, kw, ig}, static: packed, stage: -1, slot: -1}
	var bt *tensor
	if bias != nil {
		bt = &tensor{dims: []int{o}, static: bias, stage: -1, slot: -1}
	}
	out := b.newTensor(permute(oshape, nhwc))
	b.add(&xop{kind: "conv", in: []*tensor{in, wt, bt}, out: out,
		u:  []uint32{uint32(p[0]), uint32(p[3]), uint32(p[2]), uint32(p[1]), uint32(kh), uint32(kw), uint32(s[0]), uint32(s[1]), uint32(d[0]), uint32(d[1]), uint32(groups)},
		sz: []int{ig, o / groups}, f: []float32{float32(math.Inf(-1)), inf}})
	b.vals[outName] = &val{t: out, shape: oshape, perm: nhwc}
	return nil
}

// preluLast: n is a PRelu whose slope varies along its input's last dim
// only (lastAxisSlope), not a per-channel one on dim 1.
func (b *builder) preluLast(n *graph.Node) bool {
	k := b.consts[n.Input(1)]
	if k == nil || len(k.Shape) == 0 || k.Len() <= 1 {
		return false
	}
	for _, d := range k.Shape[:len(k.Shape)-1] {
		if d != 1 {
			return false
		}
	}
	// the per-channel forms [C,1,1] and [1,C,1,1] have a non-1 dim
	// before their last; check took only these two kinds
	return true
}

// soleConsumer returns the only node reading name when it has type op.
func (b *builder) soleConsumer(name, op string) *graph.Node {
	if b.uses[name] != 1 {
		return nil
	}
	for _, m := range b.sg.Nodes {
		for _, in := range m.Inputs {
			if in == name {
				if m.OpType == op {
					return m
				}
				return nil
			}
		}
	}
	return nil
}

func (b *builder) pool(n *graph.Node, x *val, oshape []int) error {
	k := ints2(n, "kernel_shape", 1)
	s, d := ints2(n, "strides", 1), ints2(n, "dilations", 1)
	if k[0]*k[1] <= 1 {
		return b.nodeErr(n, "1x1 pooling window is not mapped")
	}
	p := spatialPads(n, x.shape[2:], k, s, d)
	// ceil_mode: extra padding at the end so XNNPACK's floor gives the same size
	for i := 0; i < 2; i++ {
		dk := (k[i]-1)*d[i] + 1
		need := (oshape[2+i]-1)*s[i] + dk - (x.shape[2+i] + p[i] + p[i+2])
		if need > 0 {
			p[i+2] += need
		}
	}
	in := b.need(x, nhwc)
	out := b.newTensor(permute(oshape, nhwc))
	if n.OpType == "MaxPool" {
		b.add(&xop{kind: "maxpool", in: []*tensor{in}, out: out, u: []uint32{uint32(p[0]), uint32(p[3]), uint32(p[2]), uint32(p[1]), uint32(k[0]), uint32(k[1]), uint32(s[0]), uint32(s[1]), uint32(d[0]), uint32(d[1])}, f: []float32{float32(math.Inf(-1)), inf}})
	} else {
		b.add(&xop{kind: "avgpool", in: []*tensor{in}, out: out, u: []uint32{uint32(p[0]), uint32(p[3]), uint32(p[2]), uint32(p[1]), uint32(k[0]), uint32(k[1]), uint32(s[0]), uint32(s[1])}, f: []float32{float32(math.Inf(-1)), inf}})
	}
	b.setOut(n, &val{t: out, shape: oshape, perm: nhwc})
	return nil
}

func (b *builder) softmax(n *graph.Node, x *val) error {
	r := len(x.shape)
	def := int64(-1)
	if b.opset("") < 13 {
		def = 1
	}
	axis := int(n.AttrInt("axis", def))
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		return b.nodeErr(n, "axis %d out of range for rank %d", axis, r)
	}
	if b.opset("") >= 13 || axis == r-1 {
		perm := x.perm
		if perm == nil || perm[r-1] != axis {
			perm = make([]int, 0, r)
			for i := 0; i < r; i++ {
				if i != axis {
					perm = append(perm, i)
				}
			}
			perm = append(perm, axis)
		}
		if isIdentity(perm) {
			perm = nil
		}
		in := b.need(x, perm)
		t := b.add(&xop{kind: "unary:Softmax", in: []*tensor{in}, out: b.newTensor(in.dims)})
		b.setOut(n, &val{t: t, shape: x.shape, perm: perm})
		return nil
	}
	// opset < 13: softmax over the flattened dims from axis on
	outer, inner := 1, 1
	for i, d := range x.shape {
		if i < axis {
			outer *= d
		} else {
			inner *= d
		}
	}
	flat := b.reshapeVal(x, []int{outer, inner})
	t := b.add(&xop{kind: "unary:Softmax", in: []*tensor{flat.t}, out: b.newTensor([]int{outer, inner})})
	b.setOut(n, b.reshapeVal(&val{t: t, shape: []int{outer, inner}}, x.shape))
	return nil
}

func (b *builder) fc(n *graph.Node, x *val, oshape []int) error {
	bk, err := b.konst(n, 1)
	if err != nil {
		return err
	}
	if bk.DType != graph.Float32 || len(bk.Shape) != 2 {
		return b.nodeErr(n, "B must be a float32 matrix")
	}
	bd := graph.Data[float32](bk)
	K, N := bk.Shape[0], bk.Shape[1]
	var w []float32 // [N, K]
	transB := n.OpType == "Gemm" && n.AttrInt("transB", 0) != 0
	if transB {
		N, K = bk.Shape[0], bk.Shape[1]
		w = append([]float32{}, bd...)
	} else {
		w = transposeData(bd, bk.Shape, nil, []int{1, 0})
	}
	var bias []float32
	if n.OpType == "Gemm" {
		if alpha := n.AttrFloat("alpha", 1); alpha != 1 {
			for i := range w {
				w[i] *= alpha
			}
		}
		if ck, err := b.konst(n, 2); err != nil {
			return err
		} else if ck != nil {
			beta := n.AttrFloat("beta", 1)
			cd := graph.Data[float32](ck)
			bias = make([]float32, N)
			for i := range bias {
				v := cd[0]
				if len(cd) == N {
					v = cd[i]
				}
				bias[i] = beta * v
			}
		}
	}
	if x.shape[len(x.shape)-1] != K {
		return b.nodeErr(n, "inner dimensions differ: A %v, B %v", x.shape, bk.Shape)
	}
	in := b.need(x, nil)
	wt := &tensor{dims: []int{N, K}, static: w, stage: -1, slot: -1}
	var bt *tensor
	if bias != nil {
		bt = &tensor{dims: []int{N}, static: bias, stage: -1, slot: -1}
	}
	t := b.add(&xop{kind: "fc", in: []*tensor{in, wt, bt}, out: b.newTensor(oshape), f: []float32{float32(math.Inf(-1)), inf}})
	b.setOut(n, &val{t: t, shape: oshape})
	return nil
}

func (b *builder) pad(n *graph.Node, x *val, oshape []int) error {
	r := len(x.shape)
	pads := n.AttrInts("pads", nil)
	value := n.AttrFloat("value", 0)
	if b.opset("") >= 11 {
		pk, err := b.konst(n, 1)
		if err != nil {
			return err
		}
		pads = pk.Int64s()
		if vk, err := b.konst(n, 2); err != nil {
			return err
		} else if vk != nil && vk.Len() > 0 {
			value = float32(vk.Float64At(0))
		}
	}
	if len(pads) != 2*r {
		return b.nodeErr(n, "pads %v do not match rank %d", pads, r)
	}
	p := x.perm
	if p == nil {
		p = identity(r)
	}
	sz := make([]int, 2*r)
	for i := 0; i < r; i++ {
		sz[i] = int(pads[p[i]])
		sz[r+i] = int(pads[r+p[i]])
	}
	t := b.add(&xop{kind: "pad", in: []*tensor{x.t}, out: b.newTensor(permute(oshape, x.perm)), sz: sz, f: []float32{value}})
	b.setOut(n, &val{t: t, shape: oshape, perm: x.perm})
	return nil
}

// concat is a constant pad when one input is dynamic and the others are
// constants of one value (channel padding with zeros); otherwise a Go step
// (this XNNPACK has no concatenate node): a strided copy along the axis in
// the physical layout of the first dynamic input.
func (b *builder) concat(n *graph.Node, oshape []int) error {
	r := len(oshape)
	axis := int(n.AttrInt("axis", 0))
	if axis < 0 {
		axis += r
	}
	var perm []int
	for _, name := range n.Inputs {
		if v := b.vals[name]; v != nil && v.konst == nil {
			perm = v.perm
			break
		}
	}
	pa := axis
	for i, a := range perm {
		if a == axis {
			pa = i
		}
	}
	// inputs empty along the axis contribute nothing
	var keep []int
	for i := range n.Inputs {
		v, err := b.in(n, i)
		if err != nil {
			return err
		}
		if len(v.shape) != r {
			return b.nodeErr(n, "input %d has rank %d, output %d", i, len(v.shape), r)
		}
		if v.shape[axis] != 0 {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return b.nodeErr(n, "every input is empty along axis %d", axis)
	}
	if v := b.vals[n.Input(keep[0])]; len(keep) == 1 && v.konst == nil {
		b.setOut(n, v) // the one non-empty input, unchanged
		return nil
	}
	if ok, err := b.concatAsPad(n, keep, oshape, axis, perm, pa); ok || err != nil {
		return err
	}
	var ins []*tensor
	for _, i := range keep {
		ins = append(ins, b.need(b.vals[n.Input(i)], perm))
	}
	out := b.newTensor(permute(oshape, perm))
	odims := out.dims
	outer := 1
	for _, d := range odims[:pa] {
		outer *= d
	}
	inner := 1
	for _, d := range odims[pa+1:] {
		inner *= d
	}
	p := b.p
	b.addGo(func(buf func(*tensor) []float32) {
		dst := buf(out)
		rowOut := odims[pa] * inner
		p.parallel(outer, out.elems(), func(lo, hi int) {
			off := 0
			for _, t := range ins {
				src := buf(t)
				row := t.dims[pa] * inner
				for o := lo; o < hi; o++ {
					copy(dst[o*rowOut+off:o*rowOut+off+row], src[o*row:(o+1)*row])
				}
				off += row
			}
		})
	}, ins, out)
	b.setOut(n, &val{t: out, shape: oshape, perm: perm})
	return nil
}

// concatAsPad lowers a Concat of one dynamic input with constants that all
// hold one value (the channel padding of a zero tensor, say) as an XNNPACK
// constant pad, so the partition is not split by a Go step. inputs are the
// indices of the Concat's non-empty inputs.
func (b *builder) concatAsPad(n *graph.Node, inputs []int, oshape []int, axis int, perm []int, pa int) (bool, error) {
	dyn := -1
	var value float32
	haveValue := false
	before, after := 0, 0
	for _, i := range inputs {
		v, err := b.in(n, i)
		if err != nil {
			return false, err
		}
		if v.konst == nil {
			if dyn >= 0 {
				return false, nil
			}
			dyn = i
			continue
		}
		if v.konst.DType != graph.Float32 || len(v.shape) != len(oshape) {
			return false, nil
		}
		for _, x := range graph.Data[float32](v.konst) {
			if !haveValue {
				value, haveValue = x, true
			}
			if math.Float32bits(x) != math.Float32bits(value) {
				return false, nil
			}
		}
		if dyn < 0 {
			before += v.shape[axis]
		} else {
			after += v.shape[axis]
		}
	}
	if dyn < 0 {
		return false, nil
	}
	x := b.vals[n.Input(dyn)]
	in := b.need(x, perm)
	r := len(oshape)
	sz := make([]int, 2*r)
	sz[pa], sz[r+pa] = before, after
	t := b.add(&xop{kind: "pad", in: []*tensor{in}, out: b.newTensor(permute(oshape, perm)), sz: sz, f: []float32{value}})
	b.setOut(n, &val{t: t, shape: oshape, perm: perm})
	return true, nil
}

// assignSlots gives a buffer to every dynamic tensor that crosses a stage,
// is a partition input or output, or is viewed.
func (b *builder) assignSlots() {
	p := b.p
	for _, s := range p.stages {
		for _, x := range s.ops {
			for _, t := range x.in {
				if t != nil && t.static == nil && t.view == nil && t.stage != x.out.stage {
					t.keep = true
				}
				if t != nil && t.view != nil {
					t.view.keep = true
				}
			}
		}
	}
	for _, t := range p.tensors {
		if t.static != nil || t.view != nil || !t.keep {
			continue
		}
		t.slot = len(p.slots)
		p.slots = append(p.slots, 4*t.elems()+xnnExtraBytes)
	}
	for _, t := range p.tensors {
		if t.view != nil {
			t.slot = t.view.slot
			if need := 4*t.elems() + xnnExtraBytes; need > p.slots[t.slot] {
				p.slots[t.slot] = need
			}
		}
	}
}

// builderInfo lets the builder reuse check with concrete values.
type builderInfo struct{ b *builder }

func (bi builderInfo) typeOf(name string) graph.ValueType {
	v := bi.b.vals[name]
	if v == nil {
		return graph.ValueType{}
	}
	dt := graph.Float32
	if v.konst != nil {
		dt = v.konst.DType
	}
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(v.shape...)}
}

func (bi builderInfo) constant(name string) *graph.Tensor {
	if v := bi.b.vals[name]; v != nil {
		return v.konst
	}
	return nil
}

func (bi builderInfo) isConst(name string) bool { return bi.constant(name) != nil }
