// Package partitionertest holds helpers for testing placement: random DAGs,
// candidates claiming fixed op sets, and a checker of a plan's invariants.
package partitionertest

import (
	"fmt"
	"math/rand/v2"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// RandomDAG builds a random graph of unary and binary ops over one input.
func RandomDAG(rng *rand.Rand, n int) *graph.Graph {
	unary := []string{"Relu", "Neg", "Sigmoid", "Abs", "Tanh"}
	binary := []string{"Add", "Mul", "Sub", "Max"}
	g := &graph.Graph{Name: "random", Inputs: []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}}}
	values := []string{"x"}
	used := map[string]bool{}
	for i := 0; i < n; i++ {
		out := fmt.Sprintf("v%d", i)
		pick := func() string {
			// favour recent values so chains form, but reach back too
			k := len(values) - 1 - rng.IntN(min(len(values), 6))
			if rng.IntN(4) == 0 {
				k = rng.IntN(len(values))
			}
			used[values[k]] = true
			return values[k]
		}
		var nd *graph.Node
		if rng.IntN(2) == 0 {
			nd = &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: unary[rng.IntN(len(unary))], Inputs: []string{pick()}, Outputs: []string{out}}
		} else {
			nd = &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: binary[rng.IntN(len(binary))], Inputs: []string{pick(), pick()}, Outputs: []string{out}}
		}
		g.Nodes = append(g.Nodes, nd)
		values = append(values, out)
	}
	for _, v := range values[1:] {
		if !used[v] || rng.IntN(10) == 0 {
			g.Outputs = append(g.Outputs, graph.ValueInfo{Name: v, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}})
		}
	}
	// shuffle node order: the partitioner must not rely on file order
	rng.Shuffle(len(g.Nodes), func(i, j int) { g.Nodes[i], g.Nodes[j] = g.Nodes[j], g.Nodes[i] })
	return g
}

// Claims returns verdicts claiming exactly ops.
func Claims(g *graph.Graph, backend string, ops map[string]bool) partitioner.Candidate {
	c := partitioner.Candidate{Backend: backend}
	for _, n := range g.Nodes {
		if ops[n.OpType] {
			c.Verdicts = append(c.Verdicts, hal.Verdict{Supported: true})
		} else {
			c.Verdicts = append(c.Verdicts, hal.Verdict{Reason: backend + " does not take " + n.OpType})
		}
	}
	return c
}

// CheckPlan verifies the plan's invariants: every node in exactly one
// partition, each partition on one backend and convex, partitions in a
// valid execution order, boundaries complete.
func CheckPlan(g *graph.Graph, p *partitioner.Plan) error {
	owner := make([]int, len(g.Nodes))
	for i := range owner {
		owner[i] = -1
	}
	for k, part := range p.Partitions {
		if part.ID != k {
			return fmt.Errorf("partition %d has ID %d", k, part.ID)
		}
		for _, v := range part.Nodes {
			if owner[v] >= 0 {
				return fmt.Errorf("node %d in partitions %d and %d", v, owner[v], k)
			}
			owner[v] = k
			if p.Nodes[v].Backend != part.Backend || p.Nodes[v].Partition != k {
				return fmt.Errorf("node %d report says %s/%d, partition %d on %s", v, p.Nodes[v].Backend, p.Nodes[v].Partition, k, part.Backend)
			}
		}
	}
	for v, o := range owner {
		if o < 0 {
			return fmt.Errorf("node %d is in no partition", v)
		}
	}
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			producer[o] = i
		}
	}
	succ := make([][]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			if p, ok := producer[in]; ok {
				succ[p] = append(succ[p], i)
			}
		}
	}
	// convexity: no path leaves a partition and comes back
	for k, part := range p.Partitions {
		var stack []int
		seen := map[int]bool{}
		for _, v := range part.Nodes {
			for _, s := range succ[v] {
				if owner[s] != k && !seen[s] {
					seen[s] = true
					stack = append(stack, s)
				}
			}
		}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, s := range succ[v] {
				if owner[s] == k {
					return fmt.Errorf("partition %d is not convex: a path leaves it and re-enters at node %d", k, s)
				}
				if !seen[s] {
					seen[s] = true
					stack = append(stack, s)
				}
			}
		}
	}
	// order: a partition only reads values of earlier partitions or inputs
	for k, part := range p.Partitions {
		for _, in := range part.Inputs {
			if pr, ok := producer[in]; ok && owner[pr] >= k {
				return fmt.Errorf("partition %d reads %q from partition %d, which is not earlier", k, in, owner[pr])
			}
		}
	}
	return nil
}
