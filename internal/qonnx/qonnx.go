// Package qonnx rewrites a graph of Switchyard's int8 operators (domain
// "switchyard.quant": NHWC, TFLite's fixed-point rounding; what the TFLite
// importer lands on) into standard ONNX integer operators — QLinearConv
// (NCHW), com.microsoft QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
// QLinearSigmoid, Clip on int8 for fused activations, QuantizeLinear and
// DequantizeLinear — so that ONNX Runtime, which cannot read .tflite, runs
// the same int8 network with the same weights and quantization
// parameters. The representation carries over unchanged (value, scale,
// zero point per tensor or per output channel); the rounding does not:
// the ONNX ops requantise in floating point with ties to even where the
// source ops use TFLite's MultiplyByQuantizedMultiplier, so outputs may
// differ by a quantization step here and there (see
// core/ops/quant/onnx.go). Use it to compare engines, not to certify one.
//
// Layout: every 4-D value the source holds NHWC is held NCHW in the
// result; a Transpose NCHW→NHWC in the source becomes an alias, and
// Transposes are inserted only where a layout-sensitive op (Reshape,
// FullyConnected, an ONNX float op, a graph output) needs the source's
// layout. Ops it cannot rewrite (Sub, pools, Softmax on int8, …) are
// named in one error before anything is written.
package qonnx

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	_ "github.com/switchyard-hal/switchyard/core/ops/all" // the schemas whose shape inference infer runs
)

const quantDomain = "switchyard.quant"
const contribDomain = "com.microsoft"

var (
	toNCHW = []int64{0, 3, 1, 2}
	toNHWC = []int64{0, 2, 3, 1}
)

// value is how the result holds a source value.
type value struct {
	name    string // the result's name for it
	swapped bool   // a 4-D NHWC source value held NCHW
}

type exporter struct {
	src   *graph.Graph
	out   *graph.Graph
	vals  map[string]value
	cache map[string]string // layout conversions already emitted
	types map[string]graph.ValueType
	fresh int
	bad   map[string]int
}

// Export returns an ONNX model (default-domain opset 17, com.microsoft 1)
// computing m's int8 graph with ONNX integer ops. m must hold static
// shapes for the values the rewrite transposes or reshapes (the TFLite
// importer's output does).
func Export(m *graph.Model) (*graph.Model, error) {
	if m == nil || m.Graph == nil {
		return nil, fmt.Errorf("qonnx: no graph")
	}
	g := m.Graph
	e := &exporter{src: g, vals: map[string]value{}, cache: map[string]string{}, types: map[string]graph.ValueType{}, bad: map[string]int{}}
	e.out = &graph.Graph{Name: g.Name, Initializers: map[string]*graph.Tensor{}}
	for _, vi := range append(append(append([]graph.ValueInfo{}, g.Inputs...), g.Outputs...), g.ValueInfo...) {
		e.types[vi.Name] = vi.Type
	}
	for name, t := range g.Initializers {
		e.out.Initializers[name] = t
		e.vals[name] = value{name: name}
	}
	for _, vi := range g.Inputs {
		if _, ok := g.Initializers[vi.Name]; ok {
			continue
		}
		e.out.Inputs = append(e.out.Inputs, vi)
		e.vals[vi.Name] = value{name: vi.Name}
	}
	order, err := g.TopoSort()
	if err != nil {
		return nil, fmt.Errorf("qonnx: %w", err)
	}
	e.infer(m, order)
	for _, n := range order {
		if err := e.node(n); err != nil {
			if _, ok := err.(unsupported); ok {
				e.bad[fmt.Sprintf("%s:%s (%v)", n.Domain, n.OpType, err)]++
				for _, o := range n.Outputs {
					e.vals[o] = value{name: o} // so the scan goes on to name every such op
				}
				continue
			}
			return nil, fmt.Errorf("qonnx: node %q (%s): %w", n.Name, n.OpType, err)
		}
	}
	if len(e.bad) > 0 {
		var list []string
		for k, c := range e.bad {
			list = append(list, fmt.Sprintf("%s ×%d", k, c))
		}
		sort.Strings(list)
		return nil, fmt.Errorf("qonnx: cannot rewrite: %s", strings.Join(list, "; "))
	}
	for _, vi := range g.Outputs {
		v, ok := e.vals[vi.Name]
		if !ok {
			return nil, fmt.Errorf("qonnx: graph output %q is never computed", vi.Name)
		}
		if v.swapped {
			e.emit("Transpose", "", []string{v.name}, []string{vi.Name}, perm(toNHWC))
		} else if v.name != vi.Name {
			e.emit("Identity", "", []string{v.name}, []string{vi.Name})
		}
		e.out.Outputs = append(e.out.Outputs, vi)
	}
	// drop initializers nothing reads (weights replaced by transposed copies)
	used := map[string]bool{}
	for _, n := range e.out.Nodes {
		for _, in := range n.Inputs {
			used[in] = true
		}
	}
	for _, o := range e.out.Outputs {
		used[o.Name] = true
	}
	for name := range e.out.Initializers {
		if !used[name] {
			delete(e.out.Initializers, name)
		}
	}
	return &graph.Model{IRVersion: 8, ProducerName: "switchyard qonnx",
		Opsets: []graph.Opset{{Domain: "", Version: 17}, {Domain: contribDomain, Version: 1}}, Graph: e.out}, nil
}

// infer fills in the source's value types the rewrite reads (channel
// counts of depthwise inputs, ranks of Mean inputs).
func (e *exporter) infer(m *graph.Model, order []*graph.Node) {
	for name, t := range e.src.Initializers {
		e.types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
	}
	for _, n := range order {
		in := make([]ops.InferInput, len(n.Inputs))
		for i, name := range n.Inputs {
			if name != "" {
				in[i] = ops.InferInput{Type: e.types[name], Const: e.src.Initializers[name]}
			}
		}
		outs, ok, err := ops.Infer(n, m.OpsetVersion(n.Domain), in)
		if !ok || err != nil {
			continue
		}
		for i, name := range n.Outputs {
			if name != "" && i < len(outs) && outs[i].Shape != nil {
				e.types[name] = outs[i]
			}
		}
	}
}

type unsupported string

func (u unsupported) Error() string { return string(u) }

func perm(p []int64) *graph.Attribute {
	return &graph.Attribute{Name: "perm", Type: graph.AttrInts, Ints: p}
}

func (e *exporter) emit(op, domain string, in, out []string, attrs ...*graph.Attribute) {
	n := &graph.Node{Name: fmt.Sprintf("q%d_%s", len(e.out.Nodes), op), OpType: op, Domain: domain, Inputs: in, Outputs: out, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	e.out.Nodes = append(e.out.Nodes, n)
}

func (e *exporter) name(base string) string {
	e.fresh++
	return fmt.Sprintf("%s__q%d", base, e.fresh)
}

func (e *exporter) constant(base string, t *graph.Tensor) string {
	n := e.name(base)
	e.out.Initializers[n] = t
	return n
}

func (e *exporter) get(name string) (value, error) {
	if name == "" {
		return value{}, nil
	}
	v, ok := e.vals[name]
	if !ok {
		return value{}, fmt.Errorf("input %q is not computed before its use", name)
	}
	return v, nil
}

// nhwc is the result's name for a source value in the source's layout.
func (e *exporter) nhwc(src string) (string, error) {
	v, err := e.get(src)
	if err != nil || !v.swapped {
		return v.name, err
	}
	key := "nhwc:" + src
	if c, ok := e.cache[key]; ok {
		return c, nil
	}
	n := e.name(src + "_nhwc")
	e.emit("Transpose", "", []string{v.name}, []string{n}, perm(toNHWC))
	e.cache[key] = n
	return n, nil
}

// nchw is the result's name for a 4-D source value held NCHW.
func (e *exporter) nchw(src string) (string, error) {
	v, err := e.get(src)
	if err != nil || v.swapped {
		return v.name, err
	}
	key := "nchw:" + src
	if c, ok := e.cache[key]; ok {
		return c, nil
	}
	n := e.name(src + "_nchw")
	e.emit("Transpose", "", []string{v.name}, []string{n}, perm(toNCHW))
	e.cache[key] = n
	return n, nil
}

func (e *exporter) constOf(name string) (*graph.Tensor, error) {
	t, ok := e.src.Initializers[name]
	if !ok {
		return nil, fmt.Errorf("%q must be a constant", name)
	}
	return t, nil
}

func (e *exporter) node(n *graph.Node) error {
	in := func(i int) string {
		if i < len(n.Inputs) {
			return n.Inputs[i]
		}
		return ""
	}
	if n.Domain == quantDomain {
		switch n.OpType {
		case "Conv2D", "DepthwiseConv2D":
			return e.conv(n, n.OpType == "DepthwiseConv2D")
		case "FullyConnected":
			return e.fullyConnected(n)
		case "Add", "Mul":
			return e.binary(n)
		case "Mean":
			return e.mean(n)
		case "Logistic":
			return e.elementwise(n, "QLinearSigmoid", contribDomain, []string{in(0), in(1), in(2), in(3), in(4)})
		case "Quantize":
			return e.elementwise(n, "QuantizeLinear", "", []string{in(0), in(1), in(2)})
		case "Dequantize":
			return e.elementwise(n, "DequantizeLinear", "", []string{in(0), in(1), in(2)})
		}
		return unsupported("no ONNX integer equivalent written")
	}
	if n.Domain == "" && n.OpType == "Transpose" && len(n.Inputs) == 1 {
		return e.transpose(n)
	}
	// any other op runs in the source's layout
	ins := make([]string, len(n.Inputs))
	for i, s := range n.Inputs {
		v, err := e.nhwc(s)
		if err != nil {
			return err
		}
		ins[i] = v
	}
	c := *n
	c.Inputs = ins
	e.out.Nodes = append(e.out.Nodes, &c)
	for _, o := range n.Outputs {
		if o != "" {
			e.vals[o] = value{name: o}
		}
	}
	return nil
}

// elementwise rewrites a layout-agnostic op: the first input keeps its
// layout, the others are parameters.
func (e *exporter) elementwise(n *graph.Node, op, domain string, ins []string) error {
	v, err := e.get(ins[0])
	if err != nil {
		return err
	}
	ins[0] = v.name
	for len(ins) > 0 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	e.emit(op, domain, ins, []string{n.Outputs[0]})
	e.vals[n.Outputs[0]] = value{name: n.Outputs[0], swapped: v.swapped}
	return nil
}

func (e *exporter) transpose(n *graph.Node) error {
	p := n.AttrInts("perm", nil)
	v, err := e.get(n.Inputs[0])
	if err != nil {
		return err
	}
	same := func(a, b []int64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
	switch {
	case !v.swapped && same(p, toNHWC):
		// NCHW → NHWC in the source: the result already holds it NCHW
		e.vals[n.Outputs[0]] = value{name: v.name, swapped: true}
	case v.swapped && len(p) == 4:
		// source in = onnx in transposed by toNHWC; compose the two
		q := make([]int64, 4)
		for i, k := range p {
			q[i] = toNHWC[k]
		}
		e.emit("Transpose", "", []string{v.name}, []string{n.Outputs[0]}, perm(q))
		e.vals[n.Outputs[0]] = value{name: n.Outputs[0]}
	default:
		e.emit("Transpose", "", []string{v.name}, []string{n.Outputs[0]}, n.Attrs["perm"])
		e.vals[n.Outputs[0]] = value{name: n.Outputs[0]}
	}
	return nil
}

// activation clamps a quantized value as the source op's fused
// activation does: zp + round(bound/scale), half away from zero, within
// the int8 range (the rule of core/kernels/quant).
func (e *exporter) activation(n *graph.Node, y string, ysName, yzName string) (string, error) {
	act := n.AttrString("activation", "NONE")
	if act == "" || act == "NONE" {
		return y, nil
	}
	ys, err := e.constOf(ysName)
	if err != nil {
		return "", err
	}
	yz, err := e.constOf(yzName)
	if err != nil {
		return "", err
	}
	s, z := float64(ys.Data.([]float32)[0]), int64(yz.Int64At(0))
	q := func(f float64) int64 { return z + int64(math.Round(float64(float32(f)/float32(s)))) }
	lo, hi := int64(-128), int64(127)
	switch act {
	case "RELU":
		lo = max(lo, q(0))
	case "RELU6":
		lo, hi = max(lo, q(0)), min(hi, q(6))
	case "RELU_N1_TO_1":
		lo, hi = max(lo, q(-1)), min(hi, q(1))
	default:
		return "", unsupported("activation " + act)
	}
	if lo == -128 && hi == 127 {
		return y, nil
	}
	out := e.name(y + "_clip")
	e.emit("Clip", "", []string{y, e.constant("lo", graph.Scalar(int8(lo))), e.constant("hi", graph.Scalar(int8(hi)))}, []string{out})
	return out, nil
}

// finish binds a source output to the result's value, through the fused
// activation's Clip when there is one.
func (e *exporter) finish(n *graph.Node, tmp string, swapped bool) error {
	y, err := e.activation(n, tmp, n.Inputs[6], n.Inputs[7]) // ys, yz of every op with a fused activation
	if err != nil {
		return err
	}
	e.vals[n.Outputs[0]] = value{name: y, swapped: swapped}
	return nil
}

func (e *exporter) conv(n *graph.Node, depthwise bool) error {
	if len(n.Inputs) < 8 {
		return fmt.Errorf("needs 8 inputs")
	}
	x, err := e.nchw(n.Inputs[0])
	if err != nil {
		return err
	}
	w, err := e.constOf(n.Inputs[3])
	if err != nil {
		return err
	}
	wd, ok := w.Data.([]int8)
	if !ok || len(w.Shape) != 4 {
		return fmt.Errorf("filter must be 4-D int8, got %v%v", w.DType, w.Shape)
	}
	O, KH, KW, I := w.Shape[0], w.Shape[1], w.Shape[2], w.Shape[3]
	group := int64(1)
	var ow *graph.Tensor
	if depthwise {
		// 1HWC → [C, 1, H, W], one group per input channel
		C := I
		od := make([]int8, len(wd))
		for ky := 0; ky < KH; ky++ {
			for kx := 0; kx < KW; kx++ {
				for c := 0; c < C; c++ {
					od[(c*KH+ky)*KW+kx] = wd[(ky*KW+kx)*C+c]
				}
			}
		}
		ow = graph.MustFromSlice([]int{C, 1, KH, KW}, od)
		xt := e.types[n.Inputs[0]]
		if len(xt.Shape) != 4 || !xt.Shape[3].Static() {
			return fmt.Errorf("depthwise input %q needs a static channel count", n.Inputs[0])
		}
		group = xt.Shape[3].Value
	} else {
		// OHWI → OIHW
		od := make([]int8, len(wd))
		for o := 0; o < O; o++ {
			for ky := 0; ky < KH; ky++ {
				for kx := 0; kx < KW; kx++ {
					for i := 0; i < I; i++ {
						od[((o*I+i)*KH+ky)*KW+kx] = wd[((o*KH+ky)*KW+kx)*I+i]
					}
				}
			}
		}
		ow = graph.MustFromSlice([]int{O, I, KH, KW}, od)
		if xt := e.types[n.Inputs[0]]; len(xt.Shape) == 4 && xt.Shape[3].Static() && xt.Shape[3].Value != int64(I) {
			group = xt.Shape[3].Value / int64(I)
		}
	}
	ins := []string{x, n.Inputs[1], n.Inputs[2], e.constant(n.Inputs[3]+"_oihw", ow), n.Inputs[4], n.Inputs[5], n.Inputs[6], n.Inputs[7]}
	if len(n.Inputs) > 8 && n.Inputs[8] != "" {
		ins = append(ins, n.Inputs[8])
	}
	attrs := []*graph.Attribute{
		{Name: "strides", Type: graph.AttrInts, Ints: n.AttrInts("strides", []int64{1, 1})},
		{Name: "dilations", Type: graph.AttrInts, Ints: n.AttrInts("dilations", []int64{1, 1})},
		{Name: "pads", Type: graph.AttrInts, Ints: n.AttrInts("pads", []int64{0, 0, 0, 0})}, // t,l,b,r = H begin, W begin, H end, W end
		{Name: "group", Type: graph.AttrInt, I: group},
	}
	tmp := e.name(n.Outputs[0] + "_conv")
	e.emit("QLinearConv", "", ins, []string{tmp}, attrs...)
	return e.finish(n, tmp, true)
}

// fullyConnected is a 1×1 QLinearConv on x read as [rows, depth, 1, 1]:
// the same accumulator (bias + Σ (w−wz)(x−xz)) as the source op.
func (e *exporter) fullyConnected(n *graph.Node) error {
	if len(n.Inputs) < 8 {
		return fmt.Errorf("needs 8 inputs")
	}
	x, err := e.nhwc(n.Inputs[0])
	if err != nil {
		return err
	}
	w, err := e.constOf(n.Inputs[3])
	if err != nil {
		return err
	}
	if len(w.Shape) != 2 {
		return fmt.Errorf("weights must be 2-D, got %v", w.Shape)
	}
	units, depth := w.Shape[0], w.Shape[1]
	x4 := e.name(n.Inputs[0] + "_rows")
	e.emit("Reshape", "", []string{x, e.constant("shape", graph.MustFromSlice([]int{4}, []int64{-1, int64(depth), 1, 1}))}, []string{x4})
	w4 := e.constant(n.Inputs[3]+"_1x1", graph.MustFromSlice([]int{units, depth, 1, 1}, w.Data.([]int8)))
	ins := []string{x4, n.Inputs[1], n.Inputs[2], w4, n.Inputs[4], n.Inputs[5], n.Inputs[6], n.Inputs[7]}
	if len(n.Inputs) > 8 && n.Inputs[8] != "" {
		ins = append(ins, n.Inputs[8])
	}
	c := e.name(n.Outputs[0] + "_fc")
	e.emit("QLinearConv", "", ins, []string{c})
	shape := []int64{-1, int64(units)}
	if s := n.AttrInts("output_shape", nil); len(s) > 0 {
		shape = s
	}
	r := e.name(n.Outputs[0] + "_fcr")
	e.emit("Reshape", "", []string{c, e.constant("shape", graph.MustFromSlice([]int{len(shape)}, shape))}, []string{r})
	return e.finish(n, r, false)
}

func (e *exporter) binary(n *graph.Node) error {
	if len(n.Inputs) != 8 {
		return fmt.Errorf("needs 8 inputs")
	}
	a, err := e.get(n.Inputs[0])
	if err != nil {
		return err
	}
	b, err := e.get(n.Inputs[3])
	if err != nil {
		return err
	}
	var an, bn string
	swapped := a.swapped && b.swapped
	if swapped {
		an, bn = a.name, b.name
	} else {
		if an, err = e.nhwc(n.Inputs[0]); err != nil {
			return err
		}
		if bn, err = e.nhwc(n.Inputs[3]); err != nil {
			return err
		}
	}
	tmp := e.name(n.Outputs[0] + "_" + strings.ToLower(n.OpType))
	e.emit("QLinear"+n.OpType, contribDomain, []string{an, n.Inputs[1], n.Inputs[2], bn, n.Inputs[4], n.Inputs[5], n.Inputs[6], n.Inputs[7]}, []string{tmp})
	return e.finish(n, tmp, swapped)
}

// mean over the spatial axes of an NHWC value is a global average pool.
func (e *exporter) mean(n *graph.Node) error {
	axes := n.AttrInts("axes", nil)
	sort.Slice(axes, func(i, j int) bool { return axes[i] < axes[j] })
	xt := e.types[n.Inputs[0]]
	if len(xt.Shape) != 4 || fmt.Sprint(axes) != "[1 2]" {
		return unsupported(fmt.Sprintf("Mean over axes %v of a rank-%d value (only the spatial axes of NHWC)", axes, len(xt.Shape)))
	}
	x, err := e.nchw(n.Inputs[0])
	if err != nil {
		return err
	}
	p := e.name(n.Outputs[0] + "_gap")
	e.emit("QLinearGlobalAveragePool", contribDomain, []string{x, n.Inputs[1], n.Inputs[2], n.Inputs[3], n.Inputs[4]}, []string{p})
	if n.AttrInt("keepdims", 0) != 0 {
		e.vals[n.Outputs[0]] = value{name: p, swapped: true} // [N,C,1,1] holds NHWC [N,1,1,C]
		return nil
	}
	r := e.name(n.Outputs[0] + "_flat")
	e.emit("Reshape", "", []string{p, e.constant("shape", graph.MustFromSlice([]int{2}, []int64{0, -1}))}, []string{r})
	e.vals[n.Outputs[0]] = value{name: r}
	return nil
}
