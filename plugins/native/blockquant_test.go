package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	cexec "github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// bqCase is one BlockQuantMatMul: W [n, k] in blocks of block, A of
// shape a (last dim k).
type bqCase struct {
	n, k, bits, block int
	a                 []int
}

// bqGraph is a one-node BlockQuantMatMul graph with random weights (every
// quantized value, scales of both signs) and a random A.
func bqGraph(rng *rand.Rand, c bqCase) (*hal.Subgraph, *graph.Tensor) {
	nb := c.n * c.k / c.block
	sc := make([]float32, nb)
	for i := range sc {
		sc[i] = float32(rng.NormFloat64() * 0.05)
	}
	var b *graph.Tensor
	if c.bits == 8 {
		q := make([]int8, c.n*c.k)
		for i := range q {
			q[i] = int8(rng.IntN(256) - 128)
		}
		b = graph.MustFromSlice([]int{c.n, c.k}, q)
	} else {
		q := make([]uint8, c.n*c.k/2)
		for i := range q {
			q[i] = uint8(rng.IntN(256))
		}
		b = graph.MustFromSlice([]int{len(q)}, q)
	}
	at := map[string]*graph.Attribute{}
	for k, v := range map[string]int{"N": c.n, "K": c.k, "bits": c.bits, "block_size": c.block} {
		at[k] = &graph.Attribute{Name: k, Type: graph.AttrInt, I: int64(v)}
	}
	g := &graph.Graph{Name: "bq", Initializers: map[string]*graph.Tensor{"b": b, "s": graph.MustFromSlice([]int{nb}, sc)},
		Inputs:  []graph.ValueInfo{{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.a...)}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes: []*graph.Node{{Name: "bq", OpType: blockquant.OpType, Domain: blockquant.Domain,
			Inputs: []string{"a", "b", "s"}, Outputs: []string{"y"}, Attrs: at}}}
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
	av := make([]float32, kernelsProd(c.a))
	for i := range av {
		av[i] = float32(rng.NormFloat64())
	}
	return sg, graph.MustFromSlice(c.a, av)
}

func kernelsProd(s []int) int {
	p := 1
	for _, d := range s {
		p *= d
	}
	return p
}

// TestBlockQuantMatchesReference: the native kernel (assembly and Go
// paths) against the reference kernel (dequantise-then-multiply, summed in
// float64) on random blocks: Q8 and Q4, rows that are whole blocks of 32
// and 64, K not a multiple of 32 with blocks spanning rows (llama2.c's
// int8 export allows it; GGUF does not), M = 1 (a decode step) and M > 1
// (prefill), and one pool thread and two. The bound per output is the
// float32 dot product's, (K+2)·2⁻²⁴·Σ|a·w| (Higham's γ_{K+2}: K
// products summed, one scale product per block and the block sums'
// addition), doubled for slack; a wrong block, scale or nibble is off by
// far more.
func TestBlockQuantMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 4))
	var cases []bqCase
	for _, bits := range []int{8, 4} {
		cases = append(cases,
			bqCase{7, 64, bits, 32, []int{1, 1, 64}},     // decode
			bqCase{9, 96, bits, 32, []int{1, 5, 96}},     // prefill
			bqCase{5, 128, bits, 64, []int{3, 128}},      // blocks of 64
			bqCase{64, 172, bits, 64, []int{1, 2, 172}},  // blocks spanning rows (stories260K's w2 in q80.bin)
			bqCase{32, 37, bits, 32, []int{1, 1, 37}},    // odd K
			bqCase{6, 40, bits, 8, []int{4, 40}},         // blocks of 8: the Go loop
			bqCase{300, 256, bits, 32, []int{1, 3, 256}}, // large enough to split over threads
		)
	}
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	for _, c := range cases {
		for _, asm := range []bool{true, false} {
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("q%d_n%d_k%d_b%d_a%v_asm%v_t%d", c.bits, c.n, c.k, c.block, c.a, asm, threads), func(t *testing.T) {
					defer func(old bool) { bqAsm = old }(bqAsm)
					bqAsm = asm
					sg, a := bqGraph(rng, c)
					if v, err := b.Supports(ctx, sg); err != nil || !v[0].Supported {
						t.Fatalf("Supports: %v %v", v, err)
					}
					exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: threads})
					if err != nil {
						t.Fatal(err)
					}
					defer exe.Release()
					out := []*graph.Tensor{{}}
					if err := exe.Execute(ctx, []*graph.Tensor{a}, out); err != nil {
						t.Fatal(err)
					}
					ref, err := cexec.Compile(sg.Graph, cexec.Options{Opsets: sg.Opsets})
					if err != nil {
						t.Fatal(err)
					}
					want := []*graph.Tensor{{}}
					if err := ref.RunBound(ctx, []*graph.Tensor{a}, want); err != nil {
						t.Fatal(err)
					}
					if !graph.SameShape(out[0].Shape, want[0].Shape) {
						t.Fatalf("shape %v, want %v", out[0].Shape, want[0].Shape)
					}
					bt, st := sg.Graph.Initializers["b"], sg.Graph.Initializers["s"]
					var q8 []int8
					var q4 []uint8
					if c.bits == 8 {
						q8 = graph.Data[int8](bt)
					} else {
						q4 = graph.Data[uint8](bt)
					}
					w := blockquant.Dequantise(c.bits, c.block, q8, q4, graph.Data[float32](st), c.n*c.k)
					got, exp, av := graph.Data[float32](out[0]), graph.Data[float32](want[0]), graph.Data[float32](a)
					worst := 0.0
					for i := range exp {
						m, j := i/c.n, i%c.n
						var mag float64
						for k := 0; k < c.k; k++ {
							mag += math.Abs(float64(av[m*c.k+k]) * float64(w[j*c.k+k]))
						}
						tol := 2*float64(c.k+2)*math.Ldexp(1, -24)*mag + 1e-30
						d := math.Abs(float64(got[i]) - float64(exp[i]))
						if !(d <= tol) {
							t.Fatalf("y[%d] = %v, reference %v (|d| %.3g > %.3g)", i, got[i], exp[i], d, tol)
						}
						worst = max(worst, d/tol)
					}
					t.Logf("worst error %.3f of the bound", worst)
				})
			}
		}
	}
}

// TestBlockQuantKeepsWeightsQuantized: the compiled kernel reads the
// initializers' own int8 / packed bytes and scales (no dequantised or
// repacked copy).
func TestBlockQuantKeepsWeightsQuantized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{8, 4} {
		sg, _ := bqGraph(rng, bqCase{16, 64, bits, 32, []int{1, 64}})
		n := sg.Graph.Nodes[0]
		w, err := newBQWeights(n, sg.ConstOf("b"), sg.ConstOf("s"))
		if err != nil {
			t.Fatal(err)
		}
		b, s := sg.ConstOf("b"), sg.ConstOf("s")
		if bits == 8 && &w.q8[0] != &graph.Data[int8](b)[0] || bits == 4 && &w.q4[0] != &graph.Data[uint8](b)[0] {
			t.Errorf("bits %d: the kernel's weights are a copy", bits)
		}
		if &w.s[0] != &graph.Data[float32](s)[0] {
			t.Errorf("bits %d: the kernel's scales are a copy", bits)
		}
	}
}

// TestBlockQuantDeclines: what native leaves to the reference kernel, with
// the reason.
func TestBlockQuantDeclines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	for name, edit := range map[string]func(sg *hal.Subgraph) string{
		"non-constant B": func(sg *hal.Subgraph) string {
			g := sg.Graph
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "b", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(4, 32)}})
			delete(g.Initializers, "b")
			return "non-constant"
		},
		"bits 2": func(sg *hal.Subgraph) string {
			sg.Graph.Nodes[0].Attrs["bits"].I = 2
			return "bits 2"
		},
		"scales of the wrong length": func(sg *hal.Subgraph) string {
			sg.Graph.Initializers["s"] = graph.MustFromSlice([]int{3}, []float32{1, 2, 3})
			return "scales must be"
		},
		"partial block": func(sg *hal.Subgraph) string {
			sg.Graph.Nodes[0].Attrs["block_size"].I = 48
			return "whole number"
		},
	} {
		sg, _ := bqGraph(rng, bqCase{4, 32, 8, 32, []int{1, 32}})
		want := edit(sg)
		v, err := b.Supports(ctx, sg)
		if err != nil {
			t.Fatal(err)
		}
		if v[0].Supported || !strings.Contains(v[0].Reason, want) {
			t.Errorf("%s: verdict %+v, want a decline naming %q", name, v[0], want)
		}
	}
}

// TestBlockQuantWrongA: an A whose last dimension is not K is an
// invalid-argument error, not a panic.
func TestBlockQuantWrongA(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sg, _ := bqGraph(rng, bqCase{4, 32, 4, 32, []int{1, 32}})
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	exe, err := b.Compile(ctx, sg, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{1, 31}, make([]float32, 31))}, []*graph.Tensor{{}})
	if err == nil || !strings.Contains(err.Error(), "32") {
		t.Fatalf("A [1 31]: %v", err)
	}
}
