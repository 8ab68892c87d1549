package rnn

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// CellKind selects the recurrence: simple RNN, GRU or LSTM.
type CellKind int

const (
	KindRNN CellKind = iota
	KindGRU
	KindLSTM
)

// cellInfo holds what differs between the three ops' interfaces.
type cellInfo struct {
	Gates       int      // gate blocks stacked in W and R
	Nact        int      // activation functions per direction
	defaultActs []string // default activations for one direction
	maxInputs   int
	maxOutputs  int
}

var cells = map[CellKind]cellInfo{
	KindRNN:  {Gates: 1, Nact: 1, defaultActs: []string{"Tanh"}, maxInputs: 6, maxOutputs: 2},
	KindGRU:  {Gates: 3, Nact: 2, defaultActs: []string{"Sigmoid", "Tanh"}, maxInputs: 6, maxOutputs: 2},
	KindLSTM: {Gates: 4, Nact: 3, defaultActs: []string{"Sigmoid", "Tanh", "Tanh"}, maxInputs: 8, maxOutputs: 3},
}

func init() {
	for op, k := range map[string]CellKind{"RNN": KindRNN, "GRU": KindGRU, "LSTM": KindLSTM} {
		ci := cells[k]
		ops.Register(ops.Schema{
			OpType:     op,
			MinOpset:   1,
			MinInputs:  3,
			MaxInputs:  ci.maxInputs,
			MinOutputs: 0,
			MaxOutputs: ci.maxOutputs,
			Types:      ops.FloatTypes,

			Infer: makeInfer(k),
		})
	}
}

// Attrs are the attribute-derived settings shared by kernel and inference.
type Attrs struct {
	Kind        CellKind
	Ci          cellInfo
	Dirs        int  // num_directions
	Reverse     bool // direction == "reverse"
	Layout      int  // 0: seq-major, 1: batch-major (opset 14+)
	Hidden      int  // hidden_size attribute, -1 when absent
	HasClip     bool
	Clip        float64
	InputForget bool // LSTM
	Lbr         bool // GRU linear_before_reset
}

func ParseAttrs(n *graph.Node, opset int64, kind CellKind) (*Attrs, error) {
	a := &Attrs{Kind: kind, Ci: cells[kind], Dirs: 1, Hidden: -1}
	switch d := n.AttrString("direction", "forward"); d {
	case "forward":
	case "reverse":
		a.Reverse = true
	case "bidirectional":
		a.Dirs = 2
	default:
		return nil, ops.Invalidf(n, "direction %q must be forward, reverse or bidirectional", d)
	}
	if opset >= 14 {
		switch l := n.AttrInt("layout", 0); l {
		case 0, 1:
			a.Layout = int(l)
		default:
			return nil, ops.Invalidf(n, "layout %d must be 0 or 1", l)
		}
	}
	if n.HasAttr("hidden_size") {
		h := n.AttrInt("hidden_size", 0)
		if h <= 0 || h > math.MaxInt32 {
			return nil, ops.Invalidf(n, "hidden_size %d must be positive", h)
		}
		a.Hidden = int(h)
	}
	if n.HasAttr("clip") {
		c := float64(n.AttrFloat("clip", 0))
		if !(c >= 0) {
			return nil, ops.Invalidf(n, "clip %v must be non-negative", c)
		}
		a.HasClip, a.Clip = true, c
	}
	if kind == KindLSTM {
		a.InputForget = n.AttrInt("input_forget", 0) != 0
	}
	if kind == KindGRU && opset >= 3 {
		a.Lbr = n.AttrInt("linear_before_reset", 0) != 0
	}
	return a, nil
}

// Activations resolves the activations attribute into dirs*nact functions.
func (a *Attrs) Activations(n *graph.Node) ([]Activation, error) {
	names := n.AttrStrings("activations", nil)
	k := a.Ci.Nact
	switch {
	case names == nil:
		names = a.Ci.defaultActs
	case len(names) == k*a.Dirs || len(names) == k:
	default:
		return nil, ops.Invalidf(n, "activations lists %d functions, expected %d", len(names), k*a.Dirs)
	}
	acts, bad := resolveActivations(names, n.AttrFloats("activation_alpha", nil), n.AttrFloats("activation_beta", nil))
	if acts == nil {
		return nil, ops.Unsupportedf(n, "activation function %q", bad)
	}
	if len(acts) < k*a.Dirs { // one set given for both directions
		acts = append(acts, acts...)
	}
	return acts, nil
}

func makeInfer(kind CellKind) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		a, err := ParseAttrs(n, opset, kind)
		if err != nil {
			return nil, err
		}
		inShape := func(i int) graph.Shape {
			if i < len(in) {
				return in[i].Type.Shape
			}
			return nil
		}
		var dt graph.DType
		if len(in) > 0 {
			dt = in[0].Type.DType
		}
		unk := graph.Dim{Value: -1}
		S, B, H := unk, unk, unk
		if xs := inShape(0); len(xs) == 3 {
			S, B = xs[0], xs[1]
			if a.Layout == 1 {
				S, B = B, S
			}
		} else if xs != nil {
			return nil, ops.Invalidf(n, "X must have rank 3, has shape %v", xs)
		}
		switch rs, ws := inShape(2), inShape(1); {
		case a.Hidden > 0:
			H = graph.Dim{Value: int64(a.Hidden)}
		case len(rs) == 3:
			H = rs[2]
		case len(ws) == 3 && ws[1].Static():
			H = graph.Dim{Value: ws[1].Value / int64(cells[kind].Gates)}
		}
		D := graph.Dim{Value: int64(a.Dirs)}
		y := graph.Shape{S, D, B, H}
		st := graph.Shape{D, B, H}
		if a.Layout == 1 {
			y = graph.Shape{B, S, D, H}
			st = graph.Shape{B, D, H}
		}
		outs := make([]graph.ValueType, len(n.Outputs))
		for i := range outs {
			shape := st
			if i == 0 {
				shape = y
			}
			outs[i] = graph.ValueType{Kind: "tensor", DType: dt, Shape: append(graph.Shape{}, shape...)}
		}
		return outs, nil
	}
}
