package calibrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// NodeCases are the cases of a real model's nodes: each node of ir whose
// family is in fams (all when nil) becomes a case of its own, a fan of n
// copies of the node over the same inputs (the node's non-constant inputs
// become the model's, its constants stay constants), so a node is measured
// and priced at the exact shapes, attributes and weights the model gives
// it. Nodes whose inputs' types are not all known are left out.
func NodeCases(ir *graph.Model, fams map[string]bool) []Case {
	types, _ := runtime.InferTypes(ir)
	ts := typeMap(types)
	var cs []Case
	for _, n := range ir.Graph.Nodes {
		if len(n.Subgraphs()) > 0 || len(n.Outputs) == 0 {
			continue
		}
		fam := opcost.Family(n, ts)
		if fams != nil && !fams[fam] {
			continue
		}
		var ins []graph.ValueInfo
		known := true
		for _, in := range n.Inputs {
			if in == "" {
				continue
			}
			if _, c := ir.Graph.Initializers[in]; c {
				continue
			}
			t, ok := types[in]
			if _, static := t.Shape.Ints(); !ok || !static || t.DType != graph.Float32 {
				known = false
				break
			}
			if !containsValue(ins, in) {
				ins = append(ins, graph.ValueInfo{Name: in, Type: t})
			}
		}
		var outs []graph.ValueType
		for _, o := range n.Outputs {
			t, ok := types[o]
			if _, static := t.Shape.Ints(); !ok || !static {
				known = false
			}
			outs = append(outs, t)
		}
		if !known || len(ins) == 0 {
			continue
		}
		shape, _ := ins[0].Type.Shape.Ints()
		node := n
		cs = append(cs, Case{Family: fam, Shape: shape, Name: n.Name, Build: func(k int) *graph.Model {
			return nodeFan(ir, node, ins, outs, k)
		}})
	}
	return cs
}

func containsValue(vs []graph.ValueInfo, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}

// nodeFan is k copies of n reading the same inputs, every output a graph
// output.
func nodeFan(ir *graph.Model, n *graph.Node, ins []graph.ValueInfo, outs []graph.ValueType, k int) *graph.Model {
	g := &graph.Graph{Name: "calibrate", Initializers: map[string]*graph.Tensor{}}
	for _, in := range n.Inputs {
		if c, ok := ir.Graph.Initializers[in]; ok {
			g.Initializers[in] = c
		}
	}
	// the data inputs are renamed x, x1, x2… (load feeds every input)
	rename := map[string]string{}
	for i, in := range ins {
		name := "x"
		if i > 0 {
			name = fmt.Sprintf("x%d", i)
		}
		rename[in.Name] = name
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: in.Type})
	}
	for i := 0; i < k; i++ {
		c := *n
		c.Name = fmt.Sprintf("n%d", i)
		c.Inputs = make([]string, len(n.Inputs))
		for j, in := range n.Inputs {
			if r, ok := rename[in]; ok {
				c.Inputs[j] = r
			} else {
				c.Inputs[j] = in
			}
		}
		c.Outputs = make([]string, len(n.Outputs))
		for j := range n.Outputs {
			c.Outputs[j] = fmt.Sprintf("y%d_%d", i, j)
			if n.Outputs[j] == "" {
				c.Outputs[j] = ""
				continue
			}
			g.Outputs = append(g.Outputs, graph.ValueInfo{Name: c.Outputs[j], Type: outs[j]})
		}
		g.Nodes = append(g.Nodes, &c)
	}
	return &graph.Model{IRVersion: ir.IRVersion, Opsets: ir.Opsets, Graph: g}
}

// RunCases measures the given cases on every device, as Run does with
// Cases.
func RunCases(ctx context.Context, devs map[string]*hal.Device, order []string, cases []Case, opts Options) ([]Sample, error) {
	if opts.Runs <= 0 {
		opts.Runs = 15
	}
	if opts.Budget <= 0 {
		opts.Budget = 2 * time.Second
	}
	if opts.Passes <= 0 {
		opts.Passes = 2
	}
	// pass after pass over every case, each keeping its least time: a
	// burst of load that spoils one case's window in one pass rarely
	// spoils it in the next
	samples := make([]Sample, 0, len(order)*len(cases))
	for pass := 0; pass < opts.Passes; pass++ {
		i := 0
		for _, name := range order {
			for _, c := range cases {
				if err := ctx.Err(); err != nil {
					return samples, err
				}
				s := measureCase(ctx, name, devs[name], c, opts)
				if pass == 0 {
					samples = append(samples, s)
				} else if old := &samples[i]; old.Skipped == "" && s.Skipped == "" && s.Node < old.Node {
					old.Node, old.Call = s.Node, s.Call
				} else if old.Skipped != "" && s.Skipped == "" {
					*old = s
				}
				if opts.Progress != nil && pass == opts.Passes-1 {
					opts.Progress(describe(samples[i], c))
				}
				i++
			}
		}
	}
	return samples, nil
}

func describe(s Sample, c Case) string {
	name := c.Family
	if c.Name != "" {
		name = c.Name + " (" + c.Family + ")"
	}
	if s.Skipped != "" {
		return fmt.Sprintf("%-8s %-10s %v: skipped: %s", s.Backend, name, c.Shape, strings.SplitN(s.Skipped, "\n", 2)[0])
	}
	return fmt.Sprintf("%-8s %-10s %-18v %9.1f µs a node, estimated %9.1f (%.3g MFLOP, %.3g MB)", s.Backend, name, fmt.Sprint(c.Shape),
		float64(s.Node)/1e3, float64(s.Estimate)/1e3, s.Work.FLOPs/1e6, float64(s.Work.BytesIn+s.Work.BytesOut)/1e6)
}
