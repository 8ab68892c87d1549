// Package opcost measures the work a node of a graph does — arithmetic
// operations and bytes read and written — from the types inferred for its
// inputs and outputs. It knows nothing of devices: a backend turns work into
// time with rates calibrated for its own kernels (plugins/cpu/cost.go,
// plugins/xnnpack/cost.go), so two backends price the same nodes from the
// same counts.
//
// Contracts:
//   - Of never panics and never fails: a dimension it cannot know (unknown
//     rank, symbolic size) counts as 1 and Work.Exact is false.
//   - The counts are deterministic functions of the node and the types.
package opcost

import (
	"github.com/switchyard-hal/switchyard/core/graph"
)

// Class groups ops whose time grows with the same quantity, so one rate
// per class (per backend) prices them.
type Class string

const (
	// Conv is a dense convolution (Conv with few groups, ConvTranspose):
	// time grows with FLOPs.
	Conv Class = "conv"
	// DepthwiseConv is a convolution with one input channel per group:
	// FLOPs are few per byte, so bandwidth and loop overhead dominate.
	DepthwiseConv Class = "dwconv"
	// Gemm is a matrix product (MatMul, Gemm, recurrent cells).
	Gemm Class = "gemm"
	// Elementwise is cheap arithmetic per output element (Add, Relu, Clip…).
	Elementwise Class = "elementwise"
	// Transcendental is per-element work through exp, log, pow, erf…
	Transcendental Class = "transcendental"
	// Reduce reads every input element once into fewer outputs
	// (reductions, global pools, softmax, normalisations).
	Reduce Class = "reduce"
	// Pool is a windowed pool: time grows with outputs × window.
	Pool Class = "pool"
	// Move copies data into another arrangement (Transpose, Concat, Slice,
	// Gather, Pad, Resize…): time grows with bytes.
	Move Class = "move"
	// View changes only the shape (Reshape, Squeeze, Flatten, Identity):
	// at most a copy.
	View Class = "view"
	// Meta computes on shapes and small index tensors (Shape, Constant,
	// Range…): per-node overhead only.
	Meta Class = "meta"
	// Control is If/Loop/Scan: the work of their bodies.
	Control Class = "control"
	// Other is any op this package has no formula for: one FLOP per
	// output element.
	Other Class = "other"
)

// Work is what one node does once.
type Work struct {
	Class Class `json:"class"`
	// FLOPs counts arithmetic operations (a multiply-add is two).
	FLOPs float64 `json:"flops"`
	// BytesIn and BytesOut are the bytes of the node's inputs (constants
	// included) and outputs.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// Elems is the number of output elements (of the first output).
	Elems int64 `json:"elems"`
	// InElems is the number of elements of the data input (the first):
	// what a kernel reads, pads or packs once per call whatever its
	// arithmetic (a convolution's input planes).
	InElems int64 `json:"in_elems,omitempty"`
	// ParamBytes are the bytes of the inputs after the first (a
	// convolution's or a product's weights and bias): streamed once per
	// call whatever the image size, so they weigh most where the image is
	// small (a 1×1 convolution over 7×7 with 320→1280 channels).
	ParamBytes int64 `json:"param_bytes,omitempty"`
	// Exact is false when some dimension was unknown and counted as 1.
	Exact bool `json:"exact"`
}

// Add accumulates w into the receiver (the class becomes Control when the
// classes differ, as for a body of mixed ops).
func (w *Work) Add(o Work) {
	if w.Class == "" {
		w.Class = o.Class
	} else if w.Class != o.Class {
		w.Class = Control
	}
	w.FLOPs += o.FLOPs
	w.BytesIn += o.BytesIn
	w.BytesOut += o.BytesOut
	w.Elems += o.Elems
	w.InElems += o.InElems
	w.ParamBytes += o.ParamBytes
	w.Exact = w.Exact && o.Exact
}

// Types answers the type of a value by name (*hal.Subgraph does).
type Types interface {
	TypeOf(name string) (graph.ValueType, bool)
}

// shapeOf returns the dims of a value, unknown dims as 1, and whether all
// were known.
func shapeOf(ts Types, name string) ([]int, bool) {
	if name == "" {
		return nil, true
	}
	t, ok := ts.TypeOf(name)
	if !ok || t.Shape == nil {
		return nil, false
	}
	out := make([]int, len(t.Shape))
	exact := true
	for i, d := range t.Shape {
		if d.Static() {
			out[i] = int(d.Value)
		} else {
			out[i], exact = 1, false
		}
	}
	return out, exact
}

func bytesOf(ts Types, name string) (int64, bool) {
	if name == "" {
		return 0, true
	}
	t, ok := ts.TypeOf(name)
	if !ok {
		return 0, false
	}
	dims, exact := shapeOf(ts, name)
	size := t.DType.Size()
	if size <= 0 {
		size, exact = 4, false
	}
	return prod(dims) * int64(size), exact
}

func prod(dims []int) int64 {
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	return n
}

var elementwise = map[string]float64{ // FLOPs per output element
	"Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Neg": 1, "Abs": 1, "Relu": 1, "LeakyRelu": 2, "PRelu": 2,
	"Clip": 2, "Max": 1, "Min": 1, "Sum": 1, "Mean": 1, "Floor": 1, "Ceil": 1, "Round": 1, "Sign": 1,
	"Equal": 1, "Less": 1, "Greater": 1, "LessOrEqual": 1, "GreaterOrEqual": 1, "And": 1, "Or": 1, "Xor": 1, "Not": 1,
	"Where": 1, "Cast": 1, "HardSigmoid": 3, "HardSwish": 4, "Reciprocal": 1, "Mod": 2, "BitShift": 1,
	"IsNaN": 1, "IsInf": 1, "Square": 1, "ThresholdedRelu": 1, "Shrink": 2, "Celu": 3, "Selu": 3, "Elu": 3,
}

var transcendental = map[string]float64{ // FLOPs per output element (an exp counts about 10)
	"Exp": 10, "Log": 10, "Pow": 20, "Sqrt": 4, "Sigmoid": 12, "Tanh": 12, "Erf": 12, "Gelu": 14,
	"Softplus": 20, "Softsign": 3, "Sin": 10, "Cos": 10, "Tan": 12, "Asin": 12, "Acos": 12, "Atan": 12,
	"Sinh": 12, "Cosh": 12, "Asinh": 14, "Acosh": 14, "Atanh": 14, "Mish": 30, "Swish": 12,
}

var moves = map[string]bool{
	"Transpose": true, "Concat": true, "Split": true, "Slice": true, "Gather": true, "GatherElements": true,
	"GatherND": true, "Pad": true, "Expand": true, "Tile": true, "DepthToSpace": true, "SpaceToDepth": true,
	"ScatterElements": true, "ScatterND": true, "ReverseSequence": true, "Compress": true, "Trilu": true,
	"OneHot": true,
}

var views = map[string]bool{
	"Reshape": true, "Squeeze": true, "Unsqueeze": true, "Flatten": true, "Identity": true, "Dropout": true,
}

var meta = map[string]bool{
	"Shape": true, "Size": true, "Constant": true, "ConstantOfShape": true, "Range": true, "NonZero": true,
	"EyeLike": true,
}

var reductions = map[string]float64{ // FLOPs per input element
	"ReduceMean": 1, "ReduceSum": 1, "ReduceMax": 1, "ReduceMin": 1, "ReduceProd": 1, "ReduceL1": 2,
	"ReduceL2": 2, "ReduceSumSquare": 2, "ReduceLogSum": 1, "ReduceLogSumExp": 11, "ArgMax": 1, "ArgMin": 1,
	"GlobalAveragePool": 1, "GlobalMaxPool": 1, "GlobalLpPool": 3, "Softmax": 14, "LogSoftmax": 14,
	"Hardmax": 2, "BatchNormalization": 2, "InstanceNormalization": 5, "LayerNormalization": 6,
	"GroupNormalization": 6, "LpNormalization": 4, "MeanVarianceNormalization": 6, "LRN": 8, "CumSum": 1,
	"TopK": 4,
}

// Of returns the work of node n, reading value types from ts.
func Of(n *graph.Node, ts Types) Work {
	w := Work{Exact: true}
	for i, in := range n.Inputs {
		b, ok := bytesOf(ts, in)
		w.BytesIn += b
		if i > 0 {
			w.ParamBytes += b
		}
		w.Exact = w.Exact && ok
	}
	for _, o := range n.Outputs {
		b, ok := bytesOf(ts, o)
		w.BytesOut += b
		w.Exact = w.Exact && ok
	}
	out0 := ""
	if len(n.Outputs) > 0 {
		out0 = n.Outputs[0]
	}
	y, yok := shapeOf(ts, out0)
	w.Exact = w.Exact && yok
	w.Elems = prod(y)
	if x, ok := shapeOf(ts, n.Input(0)); ok && len(n.Inputs) > 0 {
		w.InElems = prod(x)
	}
	if n.Domain == "switchyard.quant" && n.OpType == "LSTM" {
		// the integer LSTM: two int8 matrix-vector products per step and
		// sequence, not one operation per output element
		x, xok := shapeOf(ts, n.Input(0))
		wt, wok := shapeOf(ts, n.Input(3))
		r, rok := shapeOf(ts, n.Input(4))
		w.Exact = w.Exact && xok && wok && rok
		w.Class, w.FLOPs = Other, float64(w.Elems)
		if len(x) == 3 && len(wt) == 3 && len(r) == 3 {
			w.FLOPs = 2 * float64(x[0]) * float64(x[1]) * float64(wt[0]) * float64(wt[1]) * float64(wt[2]+r[2])
		}
		return w
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		w.Class, w.FLOPs = Other, float64(w.Elems)
		return w
	}
	op := n.OpType
	switch {
	case op == "Conv":
		x, xok := shapeOf(ts, n.Input(0))
		k, kok := shapeOf(ts, n.Input(1))
		w.Exact = w.Exact && xok && kok
		perOut := int64(1)
		if len(k) >= 2 {
			perOut = prod(k[1:]) // input channels per group × kernel
		}
		w.FLOPs = 2 * float64(w.Elems) * float64(perOut)
		group := n.AttrInt("group", 1)
		if len(x) >= 2 && len(k) >= 2 && group > 1 && k[1] == 1 && int64(x[1]) == group {
			w.Class = DepthwiseConv
		} else {
			w.Class = Conv
		}
	case op == "ConvTranspose":
		x, xok := shapeOf(ts, n.Input(0))
		k, kok := shapeOf(ts, n.Input(1))
		w.Exact = w.Exact && xok && kok
		perIn := int64(1)
		if len(k) >= 2 {
			perIn = prod(k[1:]) // output channels per group × kernel
		}
		w.Class, w.FLOPs = Conv, 2*float64(prod(x))*float64(perIn)
	case op == "MatMul" || op == "Gemm" || op == "MatMulInteger" || op == "QLinearMatMul":
		a, aok := shapeOf(ts, n.Input(0))
		w.Exact = w.Exact && aok
		kdim := 1
		if len(a) >= 1 {
			kdim = a[len(a)-1]
			if op == "Gemm" && n.AttrInt("transA", 0) != 0 && len(a) == 2 {
				kdim = a[0]
			}
		}
		w.Class, w.FLOPs = Gemm, 2*float64(w.Elems)*float64(kdim)
	case op == "LSTM" || op == "GRU" || op == "RNN":
		x, xok := shapeOf(ts, n.Input(0))
		wt, wok := shapeOf(ts, n.Input(1))
		r, rok := shapeOf(ts, n.Input(2))
		w.Exact = w.Exact && xok && wok && rok
		if len(x) == 3 && len(wt) == 3 && len(r) == 3 {
			steps := float64(x[0]) * float64(x[1]) * float64(wt[0])
			w.FLOPs = 2 * steps * float64(wt[1]) * float64(wt[2]+r[2])
		}
		w.Class = Gemm
	case op == "MaxPool" || op == "AveragePool" || op == "LpPool":
		window := int64(1)
		for _, k := range n.AttrInts("kernel_shape", nil) {
			window *= k
		}
		w.Class, w.FLOPs = Pool, float64(w.Elems)*float64(window)
	case elementwise[op] > 0:
		w.Class, w.FLOPs = Elementwise, float64(w.Elems)*elementwise[op]
	case transcendental[op] > 0:
		w.Class, w.FLOPs = Transcendental, float64(w.Elems)*transcendental[op]
	case reductions[op] > 0:
		x, xok := shapeOf(ts, n.Input(0))
		w.Exact = w.Exact && xok
		w.Class, w.FLOPs = Reduce, float64(prod(x))*reductions[op]
	case op == "Resize" || op == "Upsample":
		w.Class, w.FLOPs = Move, 8*float64(w.Elems) // bilinear: four taps
	case moves[op]:
		w.Class = Move
	case views[op]:
		w.Class = View
	case meta[op]:
		w.Class = Meta
	case op == "If" || op == "Loop" || op == "Scan":
		w.Class, w.Exact = Control, false
		w.FLOPs = 0
		for _, body := range n.Subgraphs() {
			bw := Graph(body, bodyTypes{body, ts})
			// If runs one branch: price the dearer one
			if bw.FLOPs > w.FLOPs {
				w.FLOPs = bw.FLOPs
			}
		}
	default:
		w.Class, w.FLOPs = Other, float64(w.Elems)
	}
	return w
}

// Graph sums the work of every node of g (nested bodies included through
// their control-flow node).
func Graph(g *graph.Graph, ts Types) Work {
	w := Work{Exact: true}
	for _, n := range g.Nodes {
		w.Add(Of(n, ts))
	}
	return w
}

// bodyTypes answers a nested graph's values from its own declarations,
// then from the enclosing graph.
type bodyTypes struct {
	g     *graph.Graph
	outer Types
}

func (b bodyTypes) TypeOf(name string) (graph.ValueType, bool) {
	if c, ok := b.g.Initializers[name]; ok {
		return graph.ValueType{Kind: "tensor", DType: c.DType, Shape: graph.StaticShape(c.Shape...)}, true
	}
	for _, list := range [][]graph.ValueInfo{b.g.Inputs, b.g.Outputs, b.g.ValueInfo} {
		for _, vi := range list {
			if vi.Name == name && (vi.Type.DType != graph.Undefined || vi.Type.Shape != nil) {
				return vi.Type, true
			}
		}
	}
	return b.outer.TypeOf(name)
}

// Compute is the time of w's work at r, in ns (the fixed part aside).
func (r Rate) Compute(w Work) float64 {
	return w.FLOPs*r.PerFLOP + float64(w.BytesIn+w.BytesOut)*r.PerByte + float64(w.Elems)*r.PerElem + float64(w.InElems)*r.PerInElem +
		float64(w.ParamBytes)*r.PerParamByte
}

// RateOf looks up the rate of a node of op op and class c in a backend's
// price lists: a convolution by its class (dense and depthwise differ,
// whatever the op), any other op by its own rate where measured, else by
// its class, else at the Other class's rate.
func RateOf(ops map[string]Rate, classes map[Class]Rate, op string, c Class) Rate {
	if c == Conv || c == DepthwiseConv {
		return classes[c]
	}
	if r, ok := ops[op]; ok {
		return r
	}
	if r, ok := classes[c]; ok {
		return r
	}
	return classes[Other]
}

// Spread is the time of work spread over threads goroutines (85%
// efficient: hand-off and imbalance).
func Spread(work float64, threads int) float64 {
	if threads > 1 {
		return work / (0.85 * float64(threads))
	}
	return work
}
