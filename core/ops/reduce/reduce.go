package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// Kind selects the reduction a Reduce* op performs.
type Kind int

const (
	Sum Kind = iota
	Mean
	Max
	Min
	Prod
	L1
	L2
	LogSum
	LogSumExp
	SumSquare
)

// Op describes one Reduce* operator.
type Op struct {
	Name string
	Kind Kind
	// InputAxes is the first opset in which axes is an input (13 for
	// ReduceSum, 18 for the others) rather than an attribute.
	InputAxes int64
}

var Ops = []Op{
	{"ReduceSum", Sum, 13},
	{"ReduceMean", Mean, 18},
	{"ReduceMax", Max, 18},
	{"ReduceMin", Min, 18},
	{"ReduceProd", Prod, 18},
	{"ReduceL1", L1, 18},
	{"ReduceL2", L2, 18},
	{"ReduceLogSum", LogSum, 18},
	{"ReduceLogSumExp", LogSumExp, 18},
	{"ReduceSumSquare", SumSquare, 18},
}

func init() {
	for _, op := range Ops {
		types := numericTypes
		if op.Kind == Max || op.Kind == Min {
			types = numericBool
		}
		ops.Register(ops.Schema{
			OpType: op.Name, MinOpset: 1, MinInputs: 1, MaxInputs: 2,
			Types: types, Infer: op.infer,
		})
	}
}

// AxesSpec is a node's requested axes: the axes attribute in older opsets,
// the optional second input in newer ones.
// AxesSpec returns a node's requested axes (see Op).
func (op Op) AxesSpec(n *graph.Node, opset int64, axesInput *graph.Tensor, haveInput bool) (axes []int64, known, noop bool) {
	if opset >= op.InputAxes {
		noop = n.AttrInt("noop_with_empty_axes", 0) != 0
		if haveInput {
			if axesInput == nil {
				return nil, false, noop
			}
			return axesInput.Int64s(), true, noop
		}
		// Tolerate exporters that still write the attribute.
		return n.AttrInts("axes", nil), true, noop
	}
	return n.AttrInts("axes", nil), true, false
}

// ReducedMask turns axes into a per-dimension mask; empty axes reduce every
// dimension. It reports invalid (out-of-range or repeated) axes.
func ReducedMask(n *graph.Node, axes []int64, rank int) ([]bool, error) {
	mask := make([]bool, rank)
	if len(axes) == 0 {
		for i := range mask {
			mask[i] = true
		}
		return mask, nil
	}
	for _, a := range axes {
		ax, err := ops.NormAxis(a, rank)
		if err != nil {
			return nil, ops.Invalidf(n, "axes %v: axis %d out of range for rank %d", axes, a, rank)
		}
		if mask[ax] {
			return nil, ops.Invalidf(n, "axes %v repeat axis %d", axes, a)
		}
		mask[ax] = true
	}
	return mask, nil
}

func (op Op) infer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	dt := x.DType
	if x.Shape == nil {
		return []graph.ValueType{tensorType(dt, nil)}, nil
	}
	keep := n.AttrInt("keepdims", 1) != 0
	haveInput := n.Input(1) != ""
	axes, known, noop := op.AxesSpec(n, opset, inConst(in, 1), haveInput)
	if !known {
		if keep {
			return []graph.ValueType{tensorType(dt, unknownDims(len(x.Shape)))}, nil
		}
		return []graph.ValueType{tensorType(dt, nil)}, nil
	}
	if len(axes) == 0 && noop {
		return []graph.ValueType{tensorType(dt, copyShape(x.Shape))}, nil
	}
	mask, err := ReducedMask(n, axes, len(x.Shape))
	if err != nil {
		return nil, err
	}
	out := graph.Shape{}
	for i, d := range x.Shape {
		switch {
		case !mask[i]:
			out = append(out, d)
		case keep:
			out = append(out, graph.Dim{Value: 1})
		}
	}
	return []graph.ValueType{tensorType(dt, out)}, nil
}
