package xnnpack

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// typeInfo answers what Supports knows about a value of the graph being
// asked about: its inferred type and whether it is a constant (an
// initializer or the output of a Constant node).
type typeInfo interface {
	typeOf(name string) graph.ValueType
	constant(name string) *graph.Tensor // nil when not known at load
	isConst(name string) bool
}

// staticInputs lists, per op, the input positions that must be known when
// the partition is compiled (weights, shapes, pads, bounds). A partition
// input in such a position is captured at the first run and checked on
// every later run.
var staticInputs = map[string][]int{
	"Conv": {1, 2}, "Gemm": {1, 2}, "MatMul": {1}, "Reshape": {1}, "Pad": {1, 2, 3},
	"Clip": {1, 2}, "BatchNormalization": {1, 2, 3, 4}, "PRelu": {1}, "Squeeze": {1}, "Unsqueeze": {1},
	"Resize": {1, 2, 3}, "ConvTranspose": {1, 2}, "Split": {1}, "Slice": {1, 2, 3, 4}, "Upsample": {1},
}

var unaryOps = map[string]bool{"Abs": true, "Ceil": true, "Floor": true, "Neg": true, "Sigmoid": true, "Sqrt": true, "HardSwish": true, "Relu": true, "Round": true, "Tanh": true}
var binaryOps = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true}

// declined ops, with the reason a user sees in the placement report.
var knownGaps = map[string]string{
	"Max":  "Max is not claimed: xnn_maximum2 of this libXNNPACK disagreed with the reference on broadcast inputs in the conformance suite",
	"Min":  "Min is not claimed: xnn_minimum2 of this libXNNPACK disagreed with the reference on broadcast inputs in the conformance suite",
	"Tanh": "Tanh is not claimed: this libXNNPACK has no f32 tanh, and 2·sigmoid(2x)−1 loses relative precision near 0 (test_mish_expanded fails by 0.2%)",
}

// check returns "" when the backend takes n, else the exact reason.
func check(n *graph.Node, opset int64, ti typeInfo) string {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return fmt.Sprintf("domain %q is not mapped", n.Domain)
	}
	if r, ok := knownGaps[n.OpType]; ok {
		return r
	}
	if !supportedOp(n.OpType) {
		return fmt.Sprintf("op %s is not mapped to XNNPACK", n.OpType)
	}
	// dtypes: float32 data everywhere (shape/pads/axes inputs are int64)
	static := map[int]bool{}
	for _, i := range staticInputs[n.OpType] {
		static[i] = true
	}
	dynamic := 0
	for i, in := range n.Inputs {
		if in == "" {
			continue
		}
		t := ti.typeOf(in)
		if static[i] {
			if !ti.isConst(in) {
				return fmt.Sprintf("input %d (%q) must be a constant (weights/shape known at load), it is computed at run time", i, in)
			}
			continue
		}
		if t.DType != graph.Float32 {
			return fmt.Sprintf("input %q is %v; only float32 is mapped", in, t.DType)
		}
		if t.Shape == nil {
			return fmt.Sprintf("input %q has unknown rank", in)
		}
		if len(t.Shape) > xnnMaxTensorDims {
			return fmt.Sprintf("input %q has rank %d; XNNPACK takes at most %d", in, len(t.Shape), xnnMaxTensorDims)
		}
		for a, d := range t.Shape {
			if d.Static() && d.Value == 0 && !(n.OpType == "Concat" && a == concatAxis(n, len(t.Shape))) {
				return fmt.Sprintf("input %q has an empty dimension %v", in, t.Shape)
			}
		}
		if !ti.isConst(in) {
			dynamic++
		}
	}
	if dynamic == 0 {
		return "every input is a constant (nothing to accelerate; constant folding belongs to the loader)"
	}
	for i, o := range n.Outputs {
		if o == "" {
			continue
		}
		if i > 0 && n.OpType != "Split" {
			return fmt.Sprintf("optional output %d (%q) is not mapped", i, o)
		}
		if t := ti.typeOf(o); t.DType != graph.Undefined && t.DType != graph.Float32 {
			return fmt.Sprintf("output %q is %v; only float32 is mapped", o, t.DType)
		}
	}
	rank := len(ti.typeOf(n.Input(0)).Shape)
	switch n.OpType {
	case "Conv":
		if rank != 4 {
			return fmt.Sprintf("Conv on a rank-%d input; only 2D convolution (rank 4, NCHW) is mapped", rank)
		}
		w := ti.constant(n.Input(1))
		if w == nil || w.DType != graph.Float32 || len(w.Shape) != 4 {
			return "Conv weights must be a float32 rank-4 constant"
		}
		if b := n.Input(2); b != "" {
			if bt := ti.constant(b); bt == nil || bt.DType != graph.Float32 {
				return "Conv bias must be a float32 constant"
			}
		}
		return checkSpatial(n, true)
	case "ConvTranspose":
		return checkConvTranspose(n, rank, ti)
	case "Resize", "Upsample":
		if _, near := nearestAttrs(n, opset); near {
			return checkNearest(n, opset, ti)
		}
		if n.OpType == "Upsample" {
			if opset < 9 {
				return "Upsample before opset 9 (scales as an attribute) is not mapped"
			}
			// Upsample-9 is Resize-10: asymmetric, scales at input 1
			return checkResize(n, 10, ti)
		}
		return checkResize(n, opset, ti)
	case "Slice":
		return checkSlice(n, opset, ti)
	case "Split":
		if len(n.Inputs) > 1 && n.Inputs[1] != "" {
			if s := ti.constant(n.Input(1)); s == nil || s.DType != graph.Int64 {
				return "Split sizes must be an int64 constant"
			}
		}
	case "MaxPool":
		if rank != 4 {
			return fmt.Sprintf("MaxPool on a rank-%d input; only 2D pooling is mapped", rank)
		}
		if n.AttrInt("storage_order", 0) != 0 {
			return "MaxPool storage_order=1 is not mapped"
		}
		if k := n.AttrInts("kernel_shape", nil); len(k) == 2 && k[0]*k[1] <= 1 {
			return "MaxPool with a 1x1 window is not mapped (XNNPACK has no 1x1 max pooling)"
		}
		return checkSpatial(n, true)
	case "AveragePool":
		if rank != 4 {
			return fmt.Sprintf("AveragePool on a rank-%d input; only 2D pooling is mapped", rank)
		}
		for _, d := range n.AttrInts("dilations", nil) {
			if d != 1 {
				return fmt.Sprintf("AveragePool dilations=%v: XNNPACK average pooling has no dilation", n.AttrInts("dilations", nil))
			}
		}
		if n.AttrInt("count_include_pad", 0) != 0 {
			for _, p := range n.AttrInts("pads", nil) {
				if p != 0 {
					return "AveragePool count_include_pad=1 with padding: XNNPACK excludes padding from the average"
				}
			}
			if ap := n.AttrString("auto_pad", "NOTSET"); ap == "SAME_UPPER" || ap == "SAME_LOWER" {
				return "AveragePool count_include_pad=1 with auto_pad " + ap + ": XNNPACK excludes padding from the average"
			}
		}
		return checkSpatial(n, false)
	case "GlobalAveragePool":
		if rank != 4 {
			return fmt.Sprintf("GlobalAveragePool on a rank-%d input; only rank 4 is mapped", rank)
		}
	case "BatchNormalization":
		if rank != 4 {
			return fmt.Sprintf("BatchNormalization on a rank-%d input; only rank 4 is mapped", rank)
		}
		if n.AttrInt("training_mode", 0) != 0 {
			return "BatchNormalization training_mode=1 is not mapped"
		}
		if len(n.Outputs) > 1 {
			for _, o := range n.Outputs[1:] {
				if o != "" {
					return "BatchNormalization with running mean/var outputs is not mapped"
				}
			}
		}
	case "PRelu":
		if rank != 4 {
			return fmt.Sprintf("PRelu on a rank-%d input; XNNPACK PReLU takes rank 4", rank)
		}
		s := ti.constant(n.Input(1))
		if s == nil || s.DType != graph.Float32 {
			return "PRelu slope must be a float32 constant"
		}
		if !perChannel(s.Shape, rank) && !lastAxisSlope(s.Shape, ti.typeOf(n.Input(0)).Shape) {
			return "PRelu slope must be a constant of shape [C,1,1], [1,C,1,1], [1], [] (channels on dim 1) or [1,1,C], [C] (channels last, TFLite's layout)"
		}
	case "Softmax":
		if rank < 1 {
			return "Softmax on a scalar"
		}
	case "Gemm":
		if n.AttrInt("transA", 0) != 0 {
			return "Gemm transA=1 is not mapped"
		}
		if rank != 2 {
			return fmt.Sprintf("Gemm on a rank-%d input", rank)
		}
		b := ti.constant(n.Input(1))
		if b == nil || len(b.Shape) != 2 || b.DType != graph.Float32 {
			return "Gemm B must be a float32 rank-2 constant"
		}
		if c := n.Input(2); c != "" {
			ct := ti.constant(c)
			nOut := b.Shape[1]
			if n.AttrInt("transB", 0) != 0 {
				nOut = b.Shape[0]
			}
			if ct == nil || ct.DType != graph.Float32 || !rowVector(ct.Shape, nOut) {
				return fmt.Sprintf("Gemm C must be a float32 constant of shape [N], [1,N] or a scalar (got %v)", shapeOf(ct))
			}
		}
	case "MatMul":
		b := ti.constant(n.Input(1))
		if b == nil || len(b.Shape) != 2 || b.DType != graph.Float32 {
			return "MatMul B must be a float32 rank-2 constant (this libXNNPACK has no batch matmul)"
		}
		if rank < 2 {
			return fmt.Sprintf("MatMul A of rank %d is not mapped", rank)
		}
	case "Pad":
		if m := n.AttrString("mode", "constant"); m != "constant" {
			return fmt.Sprintf("Pad mode=%q: only constant padding is mapped", m)
		}
		if len(n.Inputs) > 3 && n.Inputs[3] != "" {
			return "Pad with axes is not mapped"
		}
		pads := n.AttrInts("pads", nil)
		if opset >= 11 {
			p := ti.constant(n.Input(1))
			if p == nil {
				return "Pad pads must be a constant"
			}
			pads = p.Int64s()
		}
		for _, p := range pads {
			if p < 0 {
				return fmt.Sprintf("Pad pads=%v: negative pads (cropping) are not mapped", pads)
			}
		}
	case "Clip":
		// min/max as attributes (opset < 11) or constant inputs
	case "LeakyRelu", "Elu", "HardSigmoid", "Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat":
		if n.OpType == "Dropout" && n.AttrInt("training_mode", 0) != 0 {
			return "Dropout in training mode"
		}
		if n.OpType == "Reshape" || n.OpType == "Flatten" || n.OpType == "Squeeze" || n.OpType == "Unsqueeze" || n.OpType == "Concat" {
			if t := ti.typeOf(n.Outputs[0]); t.DType != graph.Undefined && t.Shape == nil {
				return fmt.Sprintf("%s output has unknown rank", n.OpType)
			}
		}
	case "DepthToSpace":
		if rank != 4 {
			return "DepthToSpace on a non-4D input"
		}
		if m := n.AttrString("mode", "DCR"); m != "DCR" {
			return fmt.Sprintf("DepthToSpace mode=%q: XNNPACK implements DCR only", m)
		}
	}
	return ""
}

// mappedOps is the one table of the float32 ops this backend maps, with
// the highest input rank each takes: check (Supports) and Capabilities
// both read it, so what is advertised is what is claimed. An op with a
// known gap is neither.
var mappedOps = func() map[string]int {
	m := map[string]int{}
	for op := range unaryOps {
		m[op] = xnnMaxTensorDims
	}
	for op := range binaryOps {
		m[op] = xnnMaxTensorDims
	}
	for _, op := range []string{"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "PRelu", "DepthToSpace", "Resize", "Upsample"} {
		m[op] = 4
	}
	for _, op := range []string{"Softmax", "Gemm", "MatMul", "Pad", "Clip", "LeakyRelu", "Elu", "HardSigmoid", "Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split", "Slice"} {
		m[op] = xnnMaxTensorDims
	}
	for op := range knownGaps {
		delete(m, op)
	}
	return m
}()

func supportedOp(op string) bool {
	_, ok := mappedOps[op]
	return ok
}

func checkSpatial(n *graph.Node, dilated bool) string {
	if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER" {
		return fmt.Sprintf("auto_pad=%q is not mapped", ap)
	}
	if ks := n.AttrInts("kernel_shape", nil); ks != nil && len(ks) != 2 {
		return fmt.Sprintf("kernel_shape=%v: only 2D kernels are mapped", ks)
	}
	for _, p := range n.AttrInts("pads", nil) {
		if p < 0 {
			return fmt.Sprintf("pads=%v: negative pads are not mapped", n.AttrInts("pads", nil))
		}
	}
	for _, s := range n.AttrInts("strides", nil) {
		if s < 1 {
			return fmt.Sprintf("strides=%v must be positive", n.AttrInts("strides", nil))
		}
	}
	if !dilated {
		return ""
	}
	for _, d := range n.AttrInts("dilations", nil) {
		if d < 1 {
			return fmt.Sprintf("dilations=%v must be positive", n.AttrInts("dilations", nil))
		}
	}
	return ""
}

// perChannel reports whether a per-channel parameter of shape s broadcasts
// over a rank-r NCHW tensor along C only (or is a scalar).
func perChannel(s []int, r int) bool {
	if len(s) == 0 || (len(s) == 1 && s[0] == 1) {
		return true
	}
	if len(s) == r-1 || len(s) == r {
		off := len(s) - (r - 1)
		if off == 1 && s[0] != 1 {
			return false
		}
		for _, d := range s[off+1:] {
			if d != 1 {
				return false
			}
		}
		return true
	}
	return false
}

// lastAxisSlope: a PRelu slope that varies along x's last dim only
// ([1,1,C], [C], [1,1,1,C]), x of static last dim C > 1: channels last,
// as TFLite lays out its PRELU (XNNPACK's own layout: the input goes as
// it is).
func lastAxisSlope(s []int, x graph.Shape) bool {
	if len(s) == 0 || len(s) > len(x) {
		return false
	}
	last := x[len(x)-1]
	if last.Param != "" || last.Value <= 1 || s[len(s)-1] != int(last.Value) {
		return false
	}
	for _, d := range s[:len(s)-1] {
		if d != 1 {
			return false
		}
	}
	return true
}

func rowVector(s []int, n int) bool {
	switch len(s) {
	case 0:
		return true
	case 1:
		return s[0] == n || s[0] == 1
	case 2:
		return s[0] == 1 && (s[1] == n || s[1] == 1)
	}
	return false
}

func shapeOf(t *graph.Tensor) string {
	if t == nil {
		return "not a constant"
	}
	return fmt.Sprint(t.Shape)
}

// concatAxis is a Concat's axis, made non-negative for rank r. An input
// empty along it contributes nothing and is dropped when lowered.
func concatAxis(n *graph.Node, r int) int {
	a := int(n.AttrInt("axis", 0))
	if a < 0 {
		a += r
	}
	return a
}
