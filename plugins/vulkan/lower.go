package vulkan

import (
	"fmt"
	"math"
	"slices"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
)

// Lowering: each claimed node becomes zero (views) or more dispatches of
// the embedded shaders, for the concrete shapes of one call signature.

const maxRank = 6 // the strided shaders take rank <= 6

var binaryVariant = map[string]uint32{"Add": 0, "Sub": 1, "Mul": 2, "Div": 3, "Pow": 4, "Max": 5, "Min": 6, "PRelu": 7}

var unaryVariant = map[string]uint32{"Relu": 0, "Sigmoid": 1, "Tanh": 2, "Clip": 3, "HardSigmoid": 4, "HardSwish": 5,
	"LeakyRelu": 6, "Gelu": 7, "Erf": 8, "Exp": 9, "Log": 10, "Sqrt": 11, "Abs": 12, "Neg": 13, "Reciprocal": 14,
	"Elu": 16, "Softplus": 17, "Floor": 18, "Ceil": 19, "Sin": 20, "Cos": 21}

var viewOps = map[string]bool{"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Identity": true, "Dropout": true}

var otherOps = []string{"MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Softmax", "LogSoftmax",
	"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "BatchNormalization", "LayerNormalization",
	"Concat", "Split", "Slice", "Transpose", "Pad", "Expand", "Resize", "SimplifiedLayerNormalization", "Gather", "GroupQueryAttention"}

// contribDomain is ONNX Runtime's domain (GroupQueryAttention).
const contribDomain = "com.microsoft"

// claimedOps lists every op type the backend may take.
func claimedOps() []string {
	var out []string
	for op := range binaryVariant {
		out = append(out, op)
	}
	for op := range unaryVariant {
		out = append(out, op)
	}
	for op := range viewOps {
		out = append(out, op)
	}
	out = append(out, otherOps...)
	slices.Sort(out)
	return out
}

// dataInputs says which inputs of an op carry float32 data (the others
// are int64 parameters that must be constants).
func dataInputs(n *graph.Node) (data []int, params []int) {
	switch n.OpType {
	case "Reshape", "Expand", "Unsqueeze", "Squeeze", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare", "Split":
		return []int{0}, rest(n, 1)
	case "Slice":
		return []int{0}, rest(n, 1)
	case "Pad":
		p := rest(n, 1)
		if len(n.Inputs) > 2 && n.Inputs[2] != "" {
			// the constant value is float32 data read at plan time
			p = []int{1}
			if len(n.Inputs) > 3 {
				p = append(p, 3)
			}
			return []int{0}, append(p, 2)
		}
		return []int{0}, p
	case "Clip", "Resize":
		return []int{0}, rest(n, 1)
	case "Dropout":
		return []int{0}, rest(n, 1)
	}
	return rest(n, 0), nil
}

func rest(n *graph.Node, from int) []int {
	var out []int
	for i := from; i < len(n.Inputs); i++ {
		if n.Inputs[i] != "" {
			out = append(out, i)
		}
	}
	return out
}

// check gives the static verdict of one node ("" = claimed).
func verdict(sg *hal.Subgraph, n *graph.Node) string {
	switch {
	case n.Domain == contribDomain && n.OpType != "GroupQueryAttention":
		return fmt.Sprintf("op %s of domain %s has no Vulkan shader (GroupQueryAttention has)", n.OpType, n.Domain)
	case n.Domain != "" && n.Domain != "ai.onnx" && n.Domain != contribDomain:
		return fmt.Sprintf("domain %s is not implemented", n.Domain)
	case n.Domain != contribDomain && n.OpType == "GroupQueryAttention":
		return "op GroupQueryAttention has no Vulkan shader outside domain com.microsoft"
	}
	op := n.OpType
	_, bin := binaryVariant[op]
	_, un := unaryVariant[op]
	if !bin && !un && !viewOps[op] && !slices.Contains(otherOps, op) {
		return fmt.Sprintf("op %s has no Vulkan shader", op)
	}
	if err := ops.CheckNode(n, sg.OpsetVersion(n.Domain)); err != nil {
		return err.Error()
	}
	switch op {
	case "Gather":
		return gatherVerdict(sg, n)
	case "GroupQueryAttention":
		return gqaVerdict(sg, n)
	}
	data, params := dataInputs(n)
	for _, i := range data {
		t, ok := sg.TypeOf(n.Inputs[i])
		if !ok {
			return fmt.Sprintf("input %q has no inferred type", n.Inputs[i])
		}
		if t.DType != graph.Float32 {
			return fmt.Sprintf("input %q is %v; the shaders take float32", n.Inputs[i], t.DType)
		}
		if len(t.Shape) > maxRank {
			return fmt.Sprintf("input %q has rank %d, over %d", n.Inputs[i], len(t.Shape), maxRank)
		}
	}
	for _, i := range params {
		if sg.ConstOf(n.Inputs[i]) == nil {
			return fmt.Sprintf("input %d (%q) must be a constant", i, n.Inputs[i])
		}
	}
	for _, o := range n.Outputs {
		if o == "" {
			continue
		}
		if t, ok := sg.TypeOf(o); ok && t.DType != graph.Undefined && t.DType != graph.Float32 {
			return fmt.Sprintf("output %q is %v; the shaders write float32", o, t.DType)
		}
	}
	switch op {
	case "Max", "Min":
		if len(n.Inputs) != 2 {
			return fmt.Sprintf("%s with %d inputs (2 are implemented)", op, len(n.Inputs))
		}
	case "Gelu":
		if a := n.AttrString("approximate", "none"); a != "none" {
			return fmt.Sprintf("approximate=%q is not implemented", a)
		}
	case "Dropout", "MaxPool", "BatchNormalization", "LayerNormalization", "SimplifiedLayerNormalization":
		if len(n.Outputs) > 1 && slices.ContainsFunc(n.Outputs[1:], func(s string) bool { return s != "" }) {
			return fmt.Sprintf("%s's extra outputs are not implemented", op)
		}
	}
	switch op {
	case "Conv":
		if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER" {
			return fmt.Sprintf("auto_pad=%s", ap)
		}
		if t, ok := sg.TypeOf(n.Inputs[0]); ok && t.Shape != nil && len(t.Shape) != 3 && len(t.Shape) != 4 {
			return fmt.Sprintf("Conv of rank %d (1-D and 2-D are implemented)", len(t.Shape))
		}
	case "ConvTranspose":
		if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" {
			return fmt.Sprintf("auto_pad=%s is not implemented for ConvTranspose", ap)
		}
		if n.HasAttr("output_shape") {
			return "output_shape is not implemented (pads and output_padding are)"
		}
		if t, ok := sg.TypeOf(n.Inputs[0]); ok && t.Shape != nil && len(t.Shape) != 3 && len(t.Shape) != 4 {
			return fmt.Sprintf("ConvTranspose of rank %d (1-D and 2-D are implemented)", len(t.Shape))
		}
	case "MaxPool", "AveragePool":
		if n.AttrInt("storage_order", 0) != 0 {
			return "storage_order=1 is not implemented"
		}
		if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" {
			return fmt.Sprintf("auto_pad=%s is not implemented for pooling", ap)
		}
		if t, ok := sg.TypeOf(n.Inputs[0]); ok && t.Shape != nil && len(t.Shape) != 3 && len(t.Shape) != 4 {
			return fmt.Sprintf("pooling of rank %d (1-D and 2-D are implemented)", len(t.Shape))
		}
	case "BatchNormalization":
		for i := 1; i < 5; i++ {
			if sg.ConstOf(n.Input(i)) == nil {
				return fmt.Sprintf("input %d must be a constant (it is folded at compile)", i)
			}
		}
		if n.AttrInt("training_mode", 0) != 0 {
			return "training_mode=1 is not implemented"
		}
	case "LayerNormalization":
		if sg.ConstOf(n.Input(1)) == nil || (n.Input(2) != "" && sg.ConstOf(n.Input(2)) == nil) {
			return "scale and bias must be constants"
		}
	case "Resize":
		if m := n.AttrString("mode", "nearest"); m != "nearest" && m != "linear" {
			return fmt.Sprintf("mode=%s is not implemented (nearest, linear are)", m)
		}
		if _, ok := resizeCoord[n.AttrString("coordinate_transformation_mode", "half_pixel")]; !ok {
			return fmt.Sprintf("coordinate_transformation_mode=%s is not implemented", n.AttrString("coordinate_transformation_mode", ""))
		}
		if _, ok := resizeNearest[n.AttrString("nearest_mode", "round_prefer_floor")]; !ok {
			return fmt.Sprintf("nearest_mode=%s is not implemented", n.AttrString("nearest_mode", ""))
		}
		if n.AttrInt("antialias", 0) != 0 || n.HasAttr("axes") || n.AttrString("keep_aspect_ratio_policy", "stretch") != "stretch" {
			return "antialias, axes and keep_aspect_ratio_policy are not implemented"
		}
		if t, ok := sg.TypeOf(n.Inputs[0]); ok && t.Shape != nil && len(t.Shape) != 4 {
			return fmt.Sprintf("Resize of rank %d (4-D NCHW is implemented)", len(t.Shape))
		}
	case "Pad":
		if m := n.AttrString("mode", "constant"); m != "constant" {
			return fmt.Sprintf("mode=%s is not implemented", m)
		}
	}
	return ""
}

// locKind says where a value lives in a call.
type locKind uint8

const (
	locIn  locKind = iota // a call input (idx)
	locOut                // a call output (idx)
	locW                  // the executable's weights (off)
	locTmp                // plan scratch (idx = storage id)
)

type loc struct {
	kind locKind
	idx  int
	off  uint64
	size uint64 // bytes
}

// step is one dispatch.
type step struct {
	shader  string
	variant uint32
	wg      uint32
	binds   []loc
	push    [32]uint32
	groups  [3]uint32
	node    string
}

// lowering is the state of lowering one call signature.
type lowering struct {
	exe     *executable
	shapes  map[string][]int
	dtypes  map[string]graph.DType // the values that are not float32 (partition inputs and constants)
	locs    map[string]loc
	outIdx  map[string]int
	inplace map[int]int // output -> input: the same buffer in this call (an in-place pair)
	tmps    []uint64    // sizes by storage id
	steps   []step
	checks  []hostCheck
}

func bytesOf(shape []int) uint64 { return uint64(ops.Prod(shape)) * 4 }

func (lw *lowering) val(name string) (loc, []int, error) {
	l, ok := lw.locs[name]
	if !ok {
		return loc{}, nil, fmt.Errorf("value %q has no storage", name)
	}
	return l, lw.shapes[name], nil
}

// out gives storage to a node output: the call output when it is one,
// else scratch.
func (lw *lowering) out(name string, shape []int) loc {
	lw.shapes[name] = shape
	size := bytesOf(shape)
	if j, ok := lw.outIdx[name]; ok {
		if _, taken := lw.locs[name]; !taken {
			l := loc{kind: locOut, idx: j, size: size}
			lw.locs[name] = l
			return l
		}
	}
	lw.tmps = append(lw.tmps, size)
	l := loc{kind: locTmp, idx: len(lw.tmps) - 1, size: size}
	lw.locs[name] = l
	return l
}

func (lw *lowering) tmp(size uint64) loc {
	lw.tmps = append(lw.tmps, size)
	return loc{kind: locTmp, idx: len(lw.tmps) - 1, size: size}
}

func f32bits(v float32) uint32 { return math.Float32bits(v) }

// grid is the workgroup grid for n invocations of wg each.
func grid(n int, wg uint32) [3]uint32 {
	g := (uint64(n) + uint64(wg) - 1) / uint64(wg)
	if g == 0 {
		g = 1
	}
	x := min(g, 65535)
	return [3]uint32{uint32(x), uint32((g + x - 1) / x), 1}
}

func (lw *lowering) add(n *graph.Node, shader string, variant uint32, count int, binds []loc, push ...uint32) {
	if count == 0 {
		return
	}
	s := step{shader: shader, variant: variant, wg: workgroup, binds: binds, groups: grid(count, workgroup), node: n.Name}
	if s.node == "" {
		s.node = n.OpType
	}
	copy(s.push[:], push)
	lw.steps = append(lw.steps, s)
}

func contiguous(shape []int) []int { return ops.Strides(shape) }

// bcastStrides are the strides of an input of shape in read at the
// dims of out (aligned right; 0 where broadcast).
func bcastStrides(in, out []int) []uint32 {
	st := contiguous(in)
	r := make([]uint32, len(out))
	off := len(out) - len(in)
	for d := range out {
		k := d - off
		if k < 0 || in[k] == 1 {
			continue
		}
		r[d] = uint32(st[k])
	}
	return r
}

// copyStep records a strided copy of a region (rank <= 6).
func (lw *lowering) copyStep(n *graph.Node, src, dst loc, dims []int, sstr []int, soff int, dstr []int, doff int) error {
	if len(dims) > maxRank {
		return fmt.Errorf("copy of rank %d", len(dims))
	}
	if len(dims) == 0 {
		dims, sstr, dstr = []int{1}, []int{0}, []int{0}
	}
	cnt := ops.Prod(dims)
	if cnt == 0 {
		return nil
	}
	var p [32]uint32
	p[0], p[1] = uint32(cnt), uint32(len(dims))
	for d := range dims {
		p[2+d] = uint32(dims[d])
		p[8+d] = uint32(int32(sstr[d]))
		p[15+d] = uint32(int32(dstr[d]))
	}
	p[14], p[21] = uint32(int32(soff)), uint32(int32(doff))
	lw.add(n, "copy", 0, cnt, []loc{src, dst}, p[:22]...)
	return nil
}

func (lw *lowering) constInts(name string) []int64 {
	if c := lw.exe.consts[name]; c != nil {
		return c.Int64s()
	}
	return nil
}

// lowerNode appends the dispatches of n; outShapes are the inferred
// output shapes.
func (lw *lowering) lowerNode(n *graph.Node, outShapes [][]int) error {
	op := n.OpType
	in := func(i int) (loc, []int, error) { return lw.val(n.Inputs[i]) }
	x, xs, err := in(0)
	if err != nil {
		return err
	}
	ys := outShapes[0]
	if viewOps[op] {
		lw.locs[n.Outputs[0]] = loc{kind: x.kind, idx: x.idx, off: x.off, size: bytesOf(ys)}
		lw.shapes[n.Outputs[0]] = ys
		return nil
	}
	if ops.Prod(ys) == 0 {
		// empty outputs: storage, no work
		for j, o := range n.Outputs {
			if o != "" && j < len(outShapes) {
				lw.out(o, outShapes[j])
			}
		}
		return nil
	}
	if v, ok := binaryVariant[op]; ok {
		b, bs, err := in(1)
		if err != nil {
			return err
		}
		if len(ys) > maxRank {
			return fmt.Errorf("%s: rank %d", n.Label(), len(ys))
		}
		os := ys
		if len(os) == 0 {
			os, xs, bs = []int{1}, []int{1}, []int{1}
		}
		y := lw.out(n.Outputs[0], ys)
		var p [32]uint32
		p[0], p[1] = uint32(ops.Prod(os)), uint32(len(os))
		for d := range os {
			p[2+d] = uint32(os[d])
		}
		copy(p[8:14], bcastStrides(xs, os))
		copy(p[14:20], bcastStrides(bs, os))
		lw.add(n, "binary", v, ops.Prod(os), []loc{x, b, y}, p[:20]...)
		return nil
	}
	if v, ok := unaryVariant[op]; ok {
		al, be := float32(0), float32(0)
		switch op {
		case "Clip":
			al, be = float32(math.Inf(-1)), float32(math.Inf(1))
			if lw.exe.opset < 11 {
				al, be = n.AttrFloat("min", al), n.AttrFloat("max", be)
			}
			if c := lw.exe.consts[n.Input(1)]; c != nil {
				al = float32(c.Float64At(0))
			}
			if c := lw.exe.consts[n.Input(2)]; c != nil {
				be = float32(c.Float64At(0))
			}
		case "HardSigmoid":
			al, be = n.AttrFloat("alpha", 0.2), n.AttrFloat("beta", 0.5)
		case "LeakyRelu":
			al = n.AttrFloat("alpha", 0.01)
		case "Elu":
			al = n.AttrFloat("alpha", 1)
		}
		y := lw.out(n.Outputs[0], ys)
		cnt := ops.Prod(ys)
		lw.add(n, "unary", v, cnt, []loc{x, y}, uint32(cnt), f32bits(al), f32bits(be))
		return nil
	}
	switch op {
	case "Gather":
		return lw.gather(n, x, xs, ys)
	case "GroupQueryAttention":
		return lw.gqa(n, x, xs, ys, outShapes)
	case "MatMul", "Gemm":
		return lw.gemm(n, x, xs, ys)
	case "Conv", "ConvTranspose":
		return lw.conv(n, x, xs, ys)
	case "MaxPool", "AveragePool":
		return lw.pool(n, x, xs, ys)
	case "GlobalAveragePool", "GlobalMaxPool":
		v := uint32(1)
		if op == "GlobalMaxPool" {
			v = 2
		}
		rows := xs[0] * xs[1]
		y := lw.out(n.Outputs[0], ys)
		lw.add(n, "reduce", v, rows, []loc{x, y}, uint32(rows), uint32(ops.Prod(xs[2:])), 1)
		return nil
	case "Softmax", "LogSoftmax":
		r := len(xs)
		axis := int(n.AttrInt("axis", -1))
		if lw.exe.opset < 13 {
			axis = int(n.AttrInt("axis", 1))
		}
		a, err := ops.NormAxis(int64(axis), r)
		if err != nil {
			return err
		}
		L, inner := xs[a], ops.Prod(xs[a+1:])
		if lw.exe.opset < 13 {
			L, inner = ops.Prod(xs[a:]), 1
		}
		rows := ops.Prod(xs) / L
		v := uint32(0)
		if op == "LogSoftmax" {
			v = 1
		}
		y := lw.out(n.Outputs[0], ys)
		lw.add(n, "softmax", v, rows, []loc{x, y}, uint32(rows), uint32(L), uint32(inner))
		return nil
	case "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceSumSquare":
		return lw.reduce(n, x, xs, ys)
	case "BatchNormalization":
		w := lw.exe.weights
		s, t := w["bn.scale:"+n.Outputs[0]], w["bn.shift:"+n.Outputs[0]]
		y := lw.out(n.Outputs[0], ys)
		cnt := ops.Prod(xs)
		C := 1
		if len(xs) > 1 {
			C = xs[1]
		}
		inner := 1
		if len(xs) > 2 {
			inner = ops.Prod(xs[2:])
		}
		lw.add(n, "affine", 0, cnt, []loc{x, s, t, y}, uint32(cnt), uint32(C), uint32(inner))
		return nil
	case "LayerNormalization", "SimplifiedLayerNormalization":
		// variant 1: no mean subtracted (RMS), and no bias
		a, err := ops.NormAxis(n.AttrInt("axis", -1), len(xs))
		if err != nil {
			return err
		}
		L := ops.Prod(xs[a:])
		g, gs, err := in(1)
		if err != nil {
			return err
		}
		if ops.Prod(gs) != L {
			return fmt.Errorf("%s: scale of shape %v does not cover the normalised %d elements", n.Label(), gs, L)
		}
		v, bl, has := uint32(0), lw.exe.weights["<zero>"], uint32(0)
		if op == "SimplifiedLayerNormalization" {
			v = 1
		} else if n.Input(2) != "" {
			b, bs, err := in(2)
			if err != nil {
				return err
			}
			if ops.Prod(bs) != L {
				return fmt.Errorf("%s: bias of shape %v does not cover the normalised %d elements", n.Label(), bs, L)
			}
			bl, has = b, 1
		}
		rows := ops.Prod(xs) / max(L, 1)
		y := lw.out(n.Outputs[0], ys)
		lw.add(n, "layernorm", v, rows, []loc{x, g, bl, y}, uint32(rows), uint32(L), f32bits(n.AttrFloat("epsilon", 1e-5)), has)
		return nil
	case "Concat":
		a, err := ops.NormAxis(n.AttrInt("axis", 0), len(ys))
		if err != nil {
			return err
		}
		y := lw.out(n.Outputs[0], ys)
		ost := contiguous(ys)
		at := 0
		for i := range n.Inputs {
			l, s, err := in(i)
			if err != nil {
				return err
			}
			if err := lw.copyStep(n, l, y, s, contiguous(s), 0, ost, at*ost[a]); err != nil {
				return err
			}
			at += s[a]
		}
		return nil
	case "Split":
		a, err := ops.NormAxis(n.AttrInt("axis", 0), len(xs))
		if err != nil {
			return err
		}
		ist := contiguous(xs)
		at := 0
		for j, o := range n.Outputs {
			os := outShapes[j]
			if o == "" {
				at += os[a]
				continue
			}
			y := lw.out(o, os)
			if err := lw.copyStep(n, x, y, os, ist, at*ist[a], contiguous(os), 0); err != nil {
				return err
			}
			at += os[a]
		}
		return nil
	case "Transpose":
		perm := n.AttrInts("perm", nil)
		ist := contiguous(xs)
		src := make([]int, len(ys))
		for d := range ys {
			k := len(xs) - 1 - d
			if perm != nil {
				k = int(perm[d])
			}
			src[d] = ist[k]
		}
		y := lw.out(n.Outputs[0], ys)
		return lw.copyStep(n, x, y, ys, src, 0, contiguous(ys), 0)
	case "Expand":
		y := lw.out(n.Outputs[0], ys)
		bs := bcastStrides(xs, ys)
		src := make([]int, len(bs))
		for i, v := range bs {
			src[i] = int(v)
		}
		return lw.copyStep(n, x, y, ys, src, 0, contiguous(ys), 0)
	case "Slice":
		return lw.slice(n, x, xs, ys)
	case "Pad":
		return lw.pad(n, x, xs, ys)
	case "Resize":
		return lw.resize(n, x, xs, ys)
	}
	return fmt.Errorf("%s: not lowered", n.Label())
}

func (lw *lowering) gemm(n *graph.Node, a loc, as []int, ys []int) error {
	b, bs, err := lw.val(n.Inputs[1])
	if err != nil {
		return err
	}
	var p [32]uint32
	alpha, beta := float32(1), float32(1)
	var M, N, K int
	var biasL = lw.exe.weights["<zero>"]
	var hasBias uint32
	batch := []int{1, 1, 1}
	abst, bbst, cbst := []int{0, 0, 0}, []int{0, 0, 0}, []int{0, 0, 0}
	if n.OpType == "Gemm" {
		ta, tb := n.AttrInt("transA", 0) != 0, n.AttrInt("transB", 0) != 0
		alpha, beta = n.AttrFloat("alpha", 1), n.AttrFloat("beta", 1)
		M, K = as[0], as[1]
		p[3], p[4] = uint32(K), 1
		if ta {
			M, K = as[1], as[0]
			p[3], p[4] = 1, uint32(M)
		}
		N = bs[1]
		p[5], p[6] = uint32(N), 1
		if tb {
			N = bs[0]
			p[5], p[6] = 1, uint32(K)
		}
		if n.Input(2) != "" {
			c, cs, err := lw.val(n.Inputs[2])
			if err != nil {
				return err
			}
			st := bcastStrides(cs, []int{M, N})
			p[7], p[8] = st[0], st[1]
			biasL, hasBias = c, 1
		}
	} else {
		a2, b2 := as, bs
		if len(a2) == 1 {
			a2 = []int{1, a2[0]}
		}
		if len(b2) == 1 {
			b2 = []int{b2[0], 1}
		}
		M, K, N = a2[len(a2)-2], a2[len(a2)-1], b2[len(b2)-1]
		p[3], p[4], p[5], p[6] = uint32(K), 1, uint32(N), 1
		ab, bb := a2[:len(a2)-2], b2[:len(b2)-2]
		ob, err := ops.BroadcastShapes(ab, bb)
		if err != nil {
			return err
		}
		if len(ob) > 3 {
			return fmt.Errorf("%s: %d batch dimensions (3 are implemented)", n.Label(), len(ob))
		}
		as1 := bcastStrides(ab, ob)
		bs1 := bcastStrides(bb, ob)
		off := 3 - len(ob)
		for d := range ob {
			batch[off+d] = ob[d]
			abst[off+d] = int(as1[d]) * M * K
			bbst[off+d] = int(bs1[d]) * K * N
		}
	}
	nb := batch[0] * batch[1] * batch[2]
	if nb > 65535 {
		return fmt.Errorf("%s: %d batches, over the 65535 workgroups of one dimension", n.Label(), nb)
	}
	y := lw.out(n.Outputs[0], ys)
	p[0], p[1], p[2], p[9], p[10], p[11] = uint32(M), uint32(N), uint32(K), hasBias, f32bits(alpha), f32bits(beta)
	for d := 0; d < 3; d++ {
		p[12+d], p[15+d], p[18+d], p[21+d] = uint32(batch[d]), uint32(abst[d]), uint32(bbst[d]), uint32(cbst[d])
	}
	const tile = 16
	s := step{shader: "gemm", wg: tile, binds: []loc{a, b, biasL, y}, push: p, node: n.Name,
		groups: [3]uint32{uint32((N + tile - 1) / tile), uint32((M + tile - 1) / tile), uint32(nb)}}
	if lw.exe.d.cpuDevice() {
		// no shared-memory tiles where barriers are expensive (lavapipe)
		s.shader, s.wg = "gemmrow", workgroup
		s.groups = [3]uint32{uint32((N + 4*workgroup - 1) / (4 * workgroup)), uint32(M), uint32(nb)}
	}
	if s.groups[0] > 65535 || s.groups[1] > 65535 {
		return fmt.Errorf("%s: %dx%d output is too large for one dispatch", n.Label(), M, N)
	}
	lw.steps = append(lw.steps, s)
	return nil
}

// spatial returns the 2-D view (H, W, kernel, strides, dilations, pads
// top/left/bottom/right) of a 1-D or 2-D conv/pool.
func spatial(n *graph.Node, xs []int, kernel []int64) (h, w int, k, s, d [2]int, pads [4]int) {
	one := len(xs) == 3
	h, w = 1, xs[len(xs)-1]
	if !one {
		h = xs[2]
	}
	strides := n.AttrInts("strides", nil)
	dil := n.AttrInts("dilations", nil)
	pp := n.AttrInts("pads", nil)
	get := func(v []int64, i int, def int) int {
		if i < len(v) {
			return int(v[i])
		}
		return def
	}
	k, s, d = [2]int{1, 1}, [2]int{1, 1}, [2]int{1, 1}
	if one {
		k[1], s[1], d[1] = int(kernel[0]), get(strides, 0, 1), get(dil, 0, 1)
		pads = [4]int{0, get(pp, 0, 0), 0, get(pp, 1, 0)}
	} else {
		k = [2]int{int(kernel[0]), int(kernel[1])}
		s = [2]int{get(strides, 0, 1), get(strides, 1, 1)}
		d = [2]int{get(dil, 0, 1), get(dil, 1, 1)}
		pads = [4]int{get(pp, 0, 0), get(pp, 1, 0), get(pp, 2, 0), get(pp, 3, 0)}
	}
	return
}

func (lw *lowering) conv(n *graph.Node, x loc, xs, ys []int) error {
	wl, ws, err := lw.val(n.Inputs[1])
	if err != nil {
		return err
	}
	h, w, k, s, d, pads := spatial(n, xs, toI64(ws[2:]))
	oh, ow := 1, ys[len(ys)-1]
	if len(ys) == 4 {
		oh = ys[2]
	}
	switch n.AttrString("auto_pad", "NOTSET") {
	case "VALID":
		pads = [4]int{}
	case "SAME_UPPER", "SAME_LOWER":
		in, out := [2]int{h, w}, [2]int{oh, ow}
		for i := 0; i < 2; i++ {
			total := max(0, (out[i]-1)*s[i]+(k[i]-1)*d[i]+1-in[i])
			lo := total / 2
			if n.AttrString("auto_pad", "") == "SAME_LOWER" {
				lo = total - total/2
			}
			pads[i], pads[i+2] = lo, total-lo
		}
	}
	bias, has := lw.exe.weights["<zero>"], uint32(0)
	if n.Input(2) != "" {
		b, _, err := lw.val(n.Inputs[2])
		if err != nil {
			return err
		}
		bias, has = b, 1
	}
	y := lw.out(n.Outputs[0], ys)
	cnt := ops.Prod(ys)
	group := int(n.AttrInt("group", 1))
	shader := "conv"
	if n.OpType == "ConvTranspose" {
		shader = "convt"
	}
	lw.add(n, shader, 0, cnt, []loc{x, wl, bias, y}, uint32(xs[0]), uint32(xs[1]), uint32(h), uint32(w), uint32(ys[1]), uint32(oh), uint32(ow),
		uint32(k[0]), uint32(k[1]), uint32(s[0]), uint32(s[1]), uint32(d[0]), uint32(d[1]), uint32(pads[0]), uint32(pads[1]), uint32(group), has, uint32(cnt))
	return nil
}

func toI64(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

func (lw *lowering) pool(n *graph.Node, x loc, xs, ys []int) error {
	h, w, k, s, d, pads := spatial(n, xs, n.AttrInts("kernel_shape", nil))
	if n.AttrString("auto_pad", "NOTSET") == "VALID" {
		pads = [4]int{}
	}
	oh, ow := 1, ys[len(ys)-1]
	if len(ys) == 4 {
		oh = ys[2]
	}
	v := uint32(0)
	if n.OpType == "AveragePool" {
		v = 1
	}
	y := lw.out(n.Outputs[0], ys)
	cnt := ops.Prod(ys)
	lw.add(n, "pool", v, cnt, []loc{x, y}, uint32(cnt), uint32(h), uint32(w), uint32(oh), uint32(ow), uint32(k[0]), uint32(k[1]),
		uint32(s[0]), uint32(s[1]), uint32(pads[0]), uint32(pads[1]), uint32(d[0]), uint32(d[1]), uint32(n.AttrInt("count_include_pad", 0)),
		uint32(pads[2]), uint32(pads[3]))
	return nil
}

func (lw *lowering) reduce(n *graph.Node, x loc, xs, ys []int) error {
	var axes []int64
	if n.Input(1) != "" {
		axes = lw.constInts(n.Inputs[1])
	} else {
		axes = n.AttrInts("axes", nil)
	}
	r := len(xs)
	if len(axes) == 0 {
		if n.AttrInt("noop_with_empty_axes", 0) != 0 {
			y := lw.out(n.Outputs[0], ys)
			return lw.copyStep(n, x, y, xs, contiguous(xs), 0, contiguous(xs), 0)
		}
		for i := 0; i < r; i++ {
			axes = append(axes, int64(i))
		}
	}
	norm := make([]int, len(axes))
	for i, a := range axes {
		v, err := ops.NormAxis(a, r)
		if err != nil {
			return err
		}
		norm[i] = v
	}
	slices.Sort(norm)
	norm = slices.Compact(norm)
	if norm[len(norm)-1]-norm[0] != len(norm)-1 {
		// not contiguous: move the reduced axes last (a strided copy),
		// then reduce that run
		var perm []int
		for d := 0; d < r; d++ {
			if !slices.Contains(norm, d) {
				perm = append(perm, d)
			}
		}
		perm = append(perm, norm...)
		ist := contiguous(xs)
		ps, src := make([]int, r), make([]int, r)
		for d, k := range perm {
			ps[d], src[d] = xs[k], ist[k]
		}
		t := lw.tmp(bytesOf(ps))
		if err := lw.copyStep(n, x, t, ps, src, 0, contiguous(ps), 0); err != nil {
			return err
		}
		x, xs = t, ps
		lo := r - len(norm)
		norm = norm[:0]
		for d := lo; d < r; d++ {
			norm = append(norm, d)
		}
	}
	lo, hi := norm[0], norm[len(norm)-1]+1
	L, inner := ops.Prod(xs[lo:hi]), ops.Prod(xs[hi:])
	rows := ops.Prod(ys) // one per output element (also when L is 0)
	v := map[string]uint32{"ReduceSum": 0, "ReduceMean": 1, "ReduceMax": 2, "ReduceMin": 3, "ReduceSumSquare": 4}[n.OpType]
	y := lw.out(n.Outputs[0], ys)
	lw.add(n, "reduce", v, rows, []loc{x, y}, uint32(rows), uint32(L), uint32(inner))
	return nil
}

func (lw *lowering) slice(n *graph.Node, x loc, xs, ys []int) error {
	r := len(xs)
	// ends need not be read: the inferred output shape holds them
	var starts, axes, steps []int64
	if lw.exe.opset < 10 {
		starts, axes = n.AttrInts("starts", nil), n.AttrInts("axes", nil)
	} else {
		starts = lw.constInts(n.Input(1))
		if n.Input(3) != "" {
			axes = lw.constInts(n.Input(3))
		}
		if n.Input(4) != "" {
			steps = lw.constInts(n.Input(4))
		}
	}
	start := make([]int, r)
	step := make([]int, r)
	for i := range step {
		step[i] = 1
	}
	for i := range starts {
		a := i
		if axes != nil {
			v, err := ops.NormAxis(axes[i], r)
			if err != nil {
				return err
			}
			a = v
		}
		st := int64(1)
		if steps != nil {
			st = steps[i]
		}
		dim := int64(xs[a])
		s := starts[i]
		if s < 0 {
			s += dim
		}
		if st > 0 {
			s = max(0, min(s, dim))
		} else {
			s = max(0, min(s, dim-1))
		}
		start[a], step[a] = int(s), int(st)
	}
	ist := contiguous(xs)
	src := make([]int, r)
	off := 0
	for d := 0; d < r; d++ {
		src[d] = ist[d] * step[d]
		off += start[d] * ist[d]
	}
	y := lw.out(n.Outputs[0], ys)
	return lw.copyStep(n, x, y, ys, src, off, contiguous(ys), 0)
}

func (lw *lowering) pad(n *graph.Node, x loc, xs, ys []int) error {
	var pads []int64
	val := float32(0)
	if lw.exe.opset < 11 {
		pads = n.AttrInts("pads", nil)
		val = n.AttrFloat("value", 0)
	} else {
		pads = lw.constInts(n.Input(1))
		if c := lw.exe.consts[n.Input(2)]; c != nil && c.Len() > 0 {
			val = float32(c.Float64At(0))
		}
	}
	r := len(xs)
	full := make([]int64, 2*r)
	if n.Input(3) != "" {
		for i, a := range lw.constInts(n.Input(3)) {
			v, err := ops.NormAxis(a, r)
			if err != nil {
				return err
			}
			full[v], full[v+r] = pads[i], pads[i+len(pads)/2]
		}
	} else {
		copy(full, pads)
	}
	ost := contiguous(ys)
	off := 0
	for d := 0; d < r; d++ {
		if full[d] < 0 || full[d+r] < 0 {
			return fmt.Errorf("%s: negative pads are not implemented", n.Label())
		}
		off += int(full[d]) * ost[d]
	}
	y := lw.out(n.Outputs[0], ys)
	cnt := ops.Prod(ys)
	lw.add(n, "fill", 0, cnt, []loc{y}, uint32(cnt), f32bits(val))
	return lw.copyStep(n, x, y, xs, contiguous(xs), 0, ost, off)
}

var resizeCoord = map[string]uint32{"half_pixel": 0, "asymmetric": 1, "align_corners": 2, "pytorch_half_pixel": 3, "tf_half_pixel_for_nn": 4}

var resizeNearest = map[string]uint32{"round_prefer_floor": 0, "round_prefer_ceil": 1, "floor": 2, "ceil": 3}

func (lw *lowering) resize(n *graph.Node, x loc, xs, ys []int) error {
	if xs[0] != ys[0] || xs[1] != ys[1] {
		return fmt.Errorf("%s: resizing N or C (%v to %v) is not implemented", n.Label(), xs, ys)
	}
	ctm := n.AttrString("coordinate_transformation_mode", "half_pixel")
	if lw.exe.opset < 11 {
		ctm = "asymmetric"
	}
	sh, sw := float32(ys[2])/float32(xs[2]), float32(ys[3])/float32(xs[3])
	si := 1
	if lw.exe.opset >= 11 {
		si = 2
	}
	if c := lw.exe.consts[n.Input(si)]; c != nil && c.Len() == 4 {
		sh, sw = float32(c.Float64At(2)), float32(c.Float64At(3))
	}
	v := uint32(0)
	if n.AttrString("mode", "nearest") == "linear" {
		v = 1
	}
	y := lw.out(n.Outputs[0], ys)
	cnt := ops.Prod(ys)
	lw.add(n, "resize", v, cnt, []loc{x, y}, uint32(cnt), uint32(xs[2]), uint32(xs[3]), uint32(ys[2]), uint32(ys[3]),
		resizeCoord[ctm], resizeNearest[n.AttrString("nearest_mode", "round_prefer_floor")], f32bits(sh), f32bits(sw))
	return nil
}
