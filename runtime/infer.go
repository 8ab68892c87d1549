package runtime

import (
	"slices"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
)

// InferenceIssue records a node whose shape inference failed; the model may
// still run (run-time shapes are authoritative), but tools show these.
type InferenceIssue struct {
	Node string
	Err  error
}

// inferTypes runs each op's shape/type inference over the main graph, in
// order, starting from declared input types and initializer values.
func inferTypes(ir *graph.Model) map[string]graph.ValueType {
	types, _ := InferTypes(ir)
	return types
}

// InferTypes infers the type of every value of the model's main graph. It
// returns the types and the nodes whose inference failed.
func InferTypes(ir *graph.Model) (map[string]graph.ValueType, []InferenceIssue) {
	g := ir.Graph
	types := map[string]graph.ValueType{}
	consts := map[string]*graph.Tensor{}
	for _, vi := range g.Inputs {
		types[vi.Name] = vi.Type
	}
	for _, vi := range g.ValueInfo {
		types[vi.Name] = vi.Type
	}
	for name, t := range g.Initializers {
		if vt, isIn := types[name]; isIn && slices.ContainsFunc(g.Inputs, func(v graph.ValueInfo) bool { return v.Name == name }) {
			// an input's default: the caller may feed another value, of
			// the declared type
			if vt.DType == graph.Undefined {
				types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
			}
			continue
		}
		types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
		consts[name] = t
	}
	order, err := g.TopoSort()
	if err != nil {
		return types, []InferenceIssue{{Err: err}}
	}
	var issues []InferenceIssue
	for _, n := range order {
		if n.OpType == "Constant" && n.Domain == "" && len(n.Outputs) == 1 {
			if t, err := shapeops.ConstantValue(n); err == nil {
				consts[n.Outputs[0]] = t
			}
		}
		in := make([]ops.InferInput, len(n.Inputs))
		for i, name := range n.Inputs {
			if name == "" {
				continue
			}
			in[i] = ops.InferInput{Type: types[name], Const: consts[name]}
		}
		outs, ok, err := ops.Infer(n, ir.OpsetVersion(n.Domain), in)
		if !ok {
			if n.OpType == "Loop" && (n.Domain == "" || n.Domain == "ai.onnx") {
				loopTypes(ir, n, types, consts) // the schema has no inference
			}
			continue
		}
		if err != nil {
			issues = append(issues, InferenceIssue{Node: n.Label(), Err: err})
			continue
		}
		for i, name := range n.Outputs {
			if name == "" || i >= len(outs) {
				continue
			}
			if old, ok := types[name]; ok && old.DType != graph.Undefined && outs[i].DType == graph.Undefined {
				continue
			}
			types[name] = outs[i]
		}
		if n.Domain == "" || n.Domain == "ai.onnx" {
			switch n.OpType {
			case "If":
				ifShapes(ir, n, types, consts)
			case "Loop":
				loopTypes(ir, n, types, consts) // should the schema infer some
			}
		}
	}
	return types, issues
}

// ifShapes gives the outputs of an If whose schema left their dtypes or
// shapes unknown what its two branches agree on: each branch, closed
// over what it captures (bodies.go), is inferred; where both give an
// output the same dtype, that dtype; the same rank, that rank with the
// dims they share (the others unknown).
func ifShapes(ir *graph.Model, n *graph.Node, types map[string]graph.ValueType, consts map[string]*graph.Tensor) {
	var branch [2][]graph.ValueType
	for k, attr := range []string{"then_branch", "else_branch"} {
		body := n.AttrGraph(attr)
		if body == nil || len(body.Outputs) != len(n.Outputs) {
			return
		}
		bt, _ := InferTypes(&graph.Model{Graph: closeBody(n, body, types, consts, ir.Opsets), Opsets: ir.Opsets})
		for _, o := range body.Outputs {
			t := o.Type
			if it, ok := bt[o.Name]; ok {
				if t.DType == graph.Undefined {
					t.DType = it.DType
				}
				if t.Shape == nil {
					t.Shape = it.Shape
				}
			}
			branch[k] = append(branch[k], t)
		}
	}
	for i, name := range n.Outputs {
		t, ok := types[name]
		if name == "" || !ok {
			continue
		}
		a, b := branch[0][i], branch[1][i]
		if t.DType == graph.Undefined && a.DType == b.DType {
			t.DType = a.DType
		}
		if t.Shape == nil && a.Shape != nil && b.Shape != nil && len(a.Shape) == len(b.Shape) {
			s := make(graph.Shape, len(a.Shape))
			for j := range a.Shape {
				if a.Shape[j] == b.Shape[j] {
					s[j] = a.Shape[j]
				} else {
					s[j] = graph.Dim{Value: -1}
				}
			}
			t.Shape = s
		}
		if t.Kind == "" {
			t.Kind = "tensor"
		}
		types[name] = t
	}
}
