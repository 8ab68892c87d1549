package control

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "If", ifKernel)
	kernels.RegisterKernel("", "Loop", loopKernel)
}

func scalarBool(t *graph.Tensor) (bool, bool) {
	if t == nil || t.Len() != 1 {
		return false, false
	}
	return t.Float64At(0) != 0, true
}

func ifKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	cond, ok := scalarBool(in[0])
	if !ok {
		return nil, kernels.Invalidf(n, "cond must hold exactly one element, got shape %v", shapeOf(in[0]))
	}
	branch := "else_branch"
	if cond {
		branch = "then_branch"
	}
	g := n.AttrGraph(branch)
	if g == nil {
		return nil, kernels.Invalidf(n, "missing %s attribute", branch)
	}
	if ctx.RunSubgraph == nil {
		return nil, kernels.Unsupportedf(n, "no subgraph runner in this context")
	}
	if len(g.Outputs) != len(n.Outputs) {
		return nil, kernels.Invalidf(n, "%s has %d outputs, node has %d", branch, len(g.Outputs), len(n.Outputs))
	}
	return ctx.RunSubgraph(ctx, g, nil)
}

func shapeOf(t *graph.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

func loopKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	body := n.AttrGraph("body")
	if body == nil {
		return nil, kernels.Invalidf(n, "missing body attribute")
	}
	if ctx.RunSubgraph == nil {
		return nil, kernels.Unsupportedf(n, "no subgraph runner in this context")
	}
	nCarried := len(in) - 2
	if len(body.Inputs) != nCarried+2 {
		return nil, kernels.Invalidf(n, "body takes %d inputs, loop provides %d", len(body.Inputs), nCarried+2)
	}
	nScan := len(body.Outputs) - 1 - nCarried
	if nScan < 0 || len(n.Outputs) > nCarried+nScan {
		return nil, kernels.Invalidf(n, "body has %d outputs for %d loop-carried values and %d node outputs", len(body.Outputs), nCarried, len(n.Outputs))
	}
	maxTrip := int64(-1)
	if t := in[0]; t != nil {
		if t.Len() != 1 {
			return nil, kernels.Invalidf(n, "M must be a scalar")
		}
		maxTrip = t.Int64At(0)
	}
	cond := true
	var condT *graph.Tensor
	if t := in[1]; t != nil {
		c, ok := scalarBool(t)
		if !ok {
			return nil, kernels.Invalidf(n, "cond must be a scalar")
		}
		cond, condT = c, t
	}
	carried := append([]*graph.Tensor{}, in[2:]...)
	for i, t := range carried {
		if t == nil {
			return nil, kernels.Unsupportedf(n, "loop-carried value %d is absent (optional types are not supported)", i)
		}
	}
	// fromBody[i]: carried[i] is a body output (not the Loop's input), so
	// its buffer is released as soon as the next iteration replaces it:
	// memory stays bounded by one iteration's values however long the loop
	fromBody := make([]bool, nCarried)
	scans := make([][]*graph.Tensor, nScan)
	for iter := int64(0); (maxTrip < 0 || iter < maxTrip) && cond; iter++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: stopped at iteration %d: %w", n.Label(), iter, err)
		}
		iterT := graph.Scalar(iter)
		condIn := graph.Scalar(cond)
		if condT != nil && condT.DType != graph.Bool {
			condIn = condT
		}
		args := append([]*graph.Tensor{iterT, condIn}, carried...)
		outs, err := ctx.RunSubgraph(ctx, body, args)
		if err != nil {
			return nil, err
		}
		c, ok := scalarBool(outs[0])
		if !ok {
			return nil, kernels.Invalidf(n, "body's cond output must be a scalar")
		}
		cond = c
		ctx.Release(outs[0])
		for i := range carried {
			if fromBody[i] {
				ctx.Release(carried[i])
			}
			carried[i], fromBody[i] = outs[1+i], true
		}
		for k := 0; k < nScan; k++ {
			s := outs[1+nCarried+k]
			if len(scans[k]) > 0 && (scans[k][0].DType != s.DType || !graph.SameShape(scans[k][0].Shape, s.Shape)) {
				return nil, kernels.Invalidf(n, "scan output %d changes shape from %v to %v at iteration %d", k, scans[k][0].Shape, s.Shape, iter)
			}
			scans[k] = append(scans[k], s)
		}
	}
	res := make([]*graph.Tensor, len(n.Outputs))
	for i := 0; i < nCarried && i < len(res); i++ {
		res[i] = carried[i]
	}
	for k := 0; k < nScan && nCarried+k < len(res); k++ {
		var elem []int
		dt := body.Outputs[1+nCarried+k].Type.DType
		if len(scans[k]) > 0 {
			elem, dt = scans[k][0].Shape, scans[k][0].DType
		} else if s, ok := body.Outputs[1+nCarried+k].Type.Shape.Ints(); ok {
			elem = s
		}
		if dt == graph.Undefined {
			dt = graph.Float32
		}
		shape := append([]int{len(scans[k])}, elem...)
		t, err := ctx.New(dt, shape)
		if err != nil {
			return nil, err
		}
		off := 0
		for _, s := range scans[k] {
			graph.CopyRange(t.Data, off, s.Data, 0, s.Len())
			off += s.Len()
			ctx.Release(s)
		}
		res[nCarried+k] = t
	}
	return res, nil
}
