package native

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

var ggmlWeightTypes = []ggml.Type{ggml.Q4_0, ggml.Q4_1, ggml.Q5_0, ggml.Q5_1, ggml.Q8_0, ggml.Q2_K, ggml.Q3_K, ggml.Q4_K, ggml.Q5_K, ggml.Q6_K}

// randomGGML is n rows of k elements of type t: random bytes (every
// quant, scale and bit pattern) with the float16 scales and minimums set
// to small normal values (a random float16 could be Inf or NaN).
func randomGGML(rng *rand.Rand, t ggml.Type, n, k int) []byte {
	bs := t.BlockBytes()
	raw := make([]byte, n*k/t.BlockSize()*bs)
	for i := range raw {
		raw[i] = byte(rng.IntN(256))
	}
	var halves []int // offsets of the float16 fields in a block
	switch t {
	case ggml.Q4_0, ggml.Q5_0, ggml.Q8_0:
		halves = []int{0}
	case ggml.Q4_1, ggml.Q5_1, ggml.Q4_K, ggml.Q5_K:
		halves = []int{0, 2}
	case ggml.Q2_K:
		halves = []int{80, 82}
	case ggml.Q3_K:
		halves = []int{108}
	case ggml.Q6_K:
		halves = []int{208}
	}
	for b := 0; b < len(raw); b += bs {
		for _, o := range halves {
			binary.LittleEndian.PutUint16(raw[b+o:], uint16(graph.F16FromFloat32(float32(rng.NormFloat64()*0.02))))
		}
	}
	return raw
}

// ggmlGraph is a one-node typed BlockQuantMatMul graph and a random A.
func ggmlGraph(rng *rand.Rand, t ggml.Type, n, k int, a []int) (*hal.Subgraph, *graph.Tensor) {
	raw := randomGGML(rng, t, n, k)
	at := map[string]*graph.Attribute{
		"N":    {Name: "N", Type: graph.AttrInt, I: int64(n)},
		"K":    {Name: "K", Type: graph.AttrInt, I: int64(k)},
		"type": {Name: "type", Type: graph.AttrString, S: t.String()},
	}
	g := &graph.Graph{Name: "bqk", Initializers: map[string]*graph.Tensor{"b": graph.MustFromSlice([]int{n, len(raw) / n}, raw)},
		Inputs:  []graph.ValueInfo{{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(a...)}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes: []*graph.Node{{Name: "bq", OpType: blockquant.OpType, Domain: blockquant.Domain,
			Inputs: []string{"a", "b"}, Outputs: []string{"y"}, Attrs: at}}}
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
	av := make([]float32, kernelsProd(a))
	for i := range av {
		av[i] = float32(rng.NormFloat64())
	}
	return sg, graph.MustFromSlice(a, av)
}

// TestBlockQuantGGMLMatchesReference: typed nodes of every type on native,
// at both precisions (the float path with its assembly and in Go), M = 1 and M > 1, one thread and two, against the
// reference kernel (exact dequantisation, float64 sums). The float path is
// within a float32 dot product's rounding, (K/8+8)·2⁻²⁴·Σ|a·w| (doubled
// for slack); the integer path within the activations' rounding,
// Σ_k d_a(k)·(1/2 + 127·2⁻¹⁰)·|w_k| (half a step and the float16 scale of
// the 32-element blocks), plus float32 rounding. A wrong nibble, scale or
// bit is off by far more.
func TestBlockQuantGGMLMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	for _, ty := range ggmlWeightTypes {
		k := 512
		for _, c := range []struct{ n, m, threads int }{{9, 1, 1}, {40, 3, 2}, {130, 1, 2}} {
			for _, mode := range []string{"float32", "float32-go", "int8"} {
				prec := hal.Precision(mode)
				if mode == "float32-go" {
					prec = hal.PrecisionFloat32
				}
				t.Run(fmt.Sprintf("%s_n%d_m%d_t%d_%s", ty, c.n, c.m, c.threads, mode), func(t *testing.T) {
					defer func(old bool) { bqAsm = old }(bqAsm)
					bqAsm = mode != "float32-go"
					sg, a := ggmlGraph(rng, ty, c.n, k, []int{1, c.m, k})
					if v, err := b.Supports(ctx, sg); err != nil || !v[0].Supported {
						t.Fatalf("Supports: %v %v", v, err)
					}
					got, exe := runBQ(t, b, sg, a, hal.CompileOptions{Threads: c.threads, Precision: prec})
					if (prec == hal.PrecisionInt8) != (exe.Precision() == hal.PrecisionInt8) {
						t.Errorf("asked %s, the executable reports %s", prec, exe.Precision())
					}
					want := referenceBQ(t, sg, a)
					raw := graph.Data[uint8](sg.Graph.Initializers["b"])
					rb := len(raw) / c.n
					w := make([]float32, k)
					av := graph.Data[float32](a)
					var act ggml.Act
					act.Quantize(av, c.m, k, ggml.ActBlock(ty))
					worst := 0.0
					for j := 0; j < c.n; j++ {
						if err := ggml.Dequantize(ty, raw[j*rb:(j+1)*rb], w); err != nil {
							t.Fatal(err)
						}
						for r := 0; r < c.m; r++ {
							var mag, qb float64
							for i, wv := range w {
								mag += math.Abs(float64(av[r*k+i]) * float64(wv))
								qb += float64(act.D[(r*k+i)/act.Block]) * (0.5 + 127*math.Ldexp(1, -10)) * math.Abs(float64(wv))
							}
							bound := 2 * float64(k/8+8) * math.Ldexp(1, -24) * mag
							if prec == hal.PrecisionInt8 {
								bound = qb + 4*float64(k/8+16)*math.Ldexp(1, -24)*(mag+qb)
							}
							e := math.Abs(float64(got[r*c.n+j]) - float64(want[r*c.n+j]))
							if !(e <= bound) {
								t.Fatalf("output [%d, %d] = %v, reference %v (error %.3g, bound %.3g)", r, j, got[r*c.n+j], want[r*c.n+j], e, bound)
							}
							worst = max(worst, e/bound)
						}
					}
					t.Logf("worst error %.3f of the bound", worst)
				})
			}
		}
	}
}

// TestBlockQuantGGMLKernelsAgree: each assembly kernel of the integer
// path (where the CPU has one) gives bit for bit what the Go kernel gives,
// core/ggml's Dot, on random rows of 1, 2 and 8 super-blocks (or 8, 16
// and 64 blocks) and on activations with zero blocks and a large value;
// the four-row kernels at every start row, and the ZMM ones (dot4n) over
// two to five groups of four rows in one call.
func TestBlockQuantGGMLKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	n := 0
	for _, ty := range ggmlWeightTypes {
		for _, fam := range []string{"", "vnni256", "avx2"} {
			k := archBQKKernel(ty, fam)
			if k == nil || fam != "" && (k == archBQKKernel(ty, "") || fam == "avx2" && k == archBQKKernel(ty, "vnni256")) {
				continue
			}
			if archBQKKernel(ty, "generic") != nil {
				t.Errorf("%s: the generic family still takes assembly", ty)
			}
			n++
			Ks := []int{256, 512, 2048}
			if ty.BlockSize() == 32 {
				Ks = append(Ks, 96, 288) // an odd count of blocks: the ZMM kernels' last one alone
			}
			for _, K := range Ks {
				const rows, m = 21, 3
				raw := randomGGML(rng, ty, rows, K)
				w := &bqWeights{n: rows, k: K, typ: ty, raw: raw, rb: len(raw) / rows}
				x := make([]float32, m*K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for i := 0; i < 32; i++ {
					x[K+i] = 0 // row 1: a zero block
				}
				x[2*K+7] = 1e6 // row 2: one large value
				var a ggml.Act
				a.Quantize(x, m, K, ggml.ActBlock(ty))
				if k.dot4n != nil { // ng groups of four rows in one call, from rows 0 and 1 (ZMM: eight rows a group, in runs of ng/2 rows, and four)
					for _, c := range [][3]int{{0, 1, 2}, {1, 1, 2}, {0, 0, 2}, {1, 1, 5}, {0, 1, 4}, {1, 0, 3}} {
						j0, ng := c[0], c[2]
						zEight = c[1] == 1
						for r := 0; r < m; r++ {
							y := make([]float32, 4*ng)
							k.dot4n(w, j0, ng, &a, r, y)
							for i, g := range y {
								if want := bqkGo.dot(w, j0+i, &a, r); math.Float32bits(g) != math.Float32bits(want) {
									t.Errorf("%s K %d rows %d.. act %d: %s dot4n[%d] %v, Go %v (eight-row kernels %v)", ty, K, j0, r, k.name, i, g, want, zEight)
								}
							}
						}
					}
					zEight = true
				}
				for j := 0; j < rows; j++ {
					for r := 0; r < m; r++ {
						want := bqkGo.dot(w, j, &a, r)
						if g := k.dot(w, j, &a, r); math.Float32bits(g) != math.Float32bits(want) {
							t.Errorf("%s K %d row %d act %d: %s %v, Go %v", ty, K, j, r, k.name, g, want)
						}
						if k.dot4 == nil || j+4 > rows {
							continue
						}
						var y [4]float32
						k.dot4(w, j, &a, r, y[:])
						for i, g := range y {
							if want := bqkGo.dot(w, j+i, &a, r); math.Float32bits(g) != math.Float32bits(want) {
								t.Errorf("%s K %d rows %d.. act %d: %s dot4[%d] %v, Go %v", ty, K, j, r, k.name, i, g, want)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d kernels in assembly here", n)
}

// TestBlockQuantGGMLRefused: typed nodes that do not fit are declined
// with a reason: an unknown type, a scales input, B of the wrong size, K
// not whole blocks.
func TestBlockQuantGGMLRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	for name, mutate := range map[string]func(sg *hal.Subgraph){
		"type":   func(sg *hal.Subgraph) { sg.Graph.Nodes[0].Attrs["type"].S = "IQ2_XXS" },
		"scales": func(sg *hal.Subgraph) { sg.Graph.Nodes[0].Inputs = append(sg.Graph.Nodes[0].Inputs, "b") },
		"size":   func(sg *hal.Subgraph) { sg.Graph.Nodes[0].Attrs["N"].I = 5 },
		"blocks": func(sg *hal.Subgraph) { sg.Graph.Nodes[0].Attrs["K"].I = 128 },
	} {
		sg, _ := ggmlGraph(rng, ggml.Q4_K, 4, 256, []int{1, 256})
		mutate(sg)
		if r := checkBlockQuant(sg, sg.Graph.Nodes[0]); r == "" {
			t.Errorf("%s: accepted", name)
		} else {
			t.Logf("%s: %s", name, r)
		}
	}
}

// BenchmarkBlockQuantGGML: a decode step's product (M = 1) with a
// 2048×2048 typed weight on one thread, per type and precision; bytes/s
// counts the weight's bytes (what decode streams).
func BenchmarkBlockQuantGGML(b *testing.B) {
	rng := rand.New(rand.NewPCG(33, 4))
	be := New(Options{})
	defer be.Close()
	ctx := context.Background()
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K, ggml.Q5_0, ggml.Q4_1, ggml.Q2_K, ggml.Q3_K, ggml.Q5_K} {
		for _, prec := range []hal.Precision{hal.PrecisionInt8, hal.PrecisionFloat32} {
			b.Run(fmt.Sprintf("%s_%s", ty, prec), func(b *testing.B) {
				const n, k = 2048, 2048
				sg, a := ggmlGraph(rng, ty, n, k, []int{1, 1, k})
				exe, err := be.Compile(ctx, sg, hal.CompileOptions{Threads: 1, Precision: prec})
				if err != nil {
					b.Fatal(err)
				}
				defer exe.Release()
				out := []*graph.Tensor{{}}
				rb, _ := ty.RowBytes(k)
				b.SetBytes(int64(n * rb))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := exe.Execute(ctx, []*graph.Tensor{a}, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
