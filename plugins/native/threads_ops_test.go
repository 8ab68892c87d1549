package native_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// TestConvThreadsIdentical: every convolution case gives bit for bit the
// same output at 1, 2 and 3 threads (the pool splits rows, columns and
// planes, never a sum), also with the indirect GEMM off.
func TestConvThreadsIdentical(t *testing.T) {
	testThreadsIdentical(t, convCases())
	if native.UseIndirect(false) {
		defer native.UseIndirect(true)
		testThreadsIdentical(t, convCases())
	}
}

func testThreadsIdentical(t *testing.T, cases []opCase) {
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := func(shape []int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return graph.MustFromSlice(shape, v)
	}
	var nbs []*native.Backend
	for threads := 1; threads <= 3; threads++ {
		nb := native.New(native.Options{Threads: threads})
		defer nb.Close()
		nbs = append(nbs, nb)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &graph.Graph{Name: c.name, Nodes: c.nodes, Initializers: map[string]*graph.Tensor{}, Outputs: []graph.ValueInfo{{Name: c.out}}}
			var ins []*graph.Tensor
			for _, name := range sortedNames(c.inputs) {
				x := rnd(c.inputs[name])
				ins = append(ins, x)
				g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(x.Shape...)}})
			}
			for name, shape := range c.consts {
				g.Initializers[name] = rnd(shape)
			}
			for name, v := range c.fixed {
				g.Initializers[name] = v
			}
			sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
			types, issues := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
			if len(issues) > 0 {
				t.Fatalf("inference: %v", issues)
			}
			for _, n := range g.Nodes {
				for _, o := range n.Outputs {
					g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
				}
			}
			var want []float32
			for i, nb := range nbs {
				e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				out := []*graph.Tensor{{}}
				err = e.Execute(context.Background(), ins, out)
				e.Release()
				if err != nil {
					t.Fatal(err)
				}
				got := graph.Data[float32](out[0])
				if i == 0 {
					want = got
					continue
				}
				if len(got) != len(want) {
					t.Fatalf("%d threads: %d values, 1 thread %d", i+1, len(got), len(want))
				}
				for j := range want {
					if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
						t.Fatalf("%d threads: element %d is %v, at 1 thread %v", i+1, j, got[j], want[j])
					}
				}
			}
		})
	}
}
