package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	cexec "github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
)

// runBQ compiles sg on b with the options and runs it on a.
func runBQ(t *testing.T, b *Backend, sg *hal.Subgraph, a *graph.Tensor, opts hal.CompileOptions) ([]float32, *Executable) {
	t.Helper()
	ctx := context.Background()
	exe, err := b.Compile(ctx, sg, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{a}, out); err != nil {
		t.Fatal(err)
	}
	return graph.Data[float32](out[0]), exe.(*Executable)
}

// referenceBQ is the reference kernel's output (dequantise, sum in
// float64).
func referenceBQ(t *testing.T, sg *hal.Subgraph, a *graph.Tensor) []float32 {
	t.Helper()
	ref, err := cexec.Compile(sg.Graph, cexec.Options{Opsets: sg.Opsets})
	if err != nil {
		t.Fatal(err)
	}
	want := []*graph.Tensor{{}}
	if err := ref.RunBound(context.Background(), []*graph.Tensor{a}, want); err != nil {
		t.Fatal(err)
	}
	return graph.Data[float32](want[0])
}

// TestBlockQuantIntFamilies: with hal.PrecisionInt8 every kernel family
// this machine has (VNNI, AVX2, generic) gives the same bits, on Q8_0 and
// Q4_0, M = 1 (decode) and M > 1 (prefill), N a multiple of 4 and not,
// one thread and two; each output is within float32 rounding,
// (nb+4)·2⁻²³·Σ_b |d_w·d_a|·Σ|q_a·q_w|, of a float64 model of the same
// quantized arithmetic, and within the activations' rounding,
// Σ_k d_a(k)·(1/2 + 127·2⁻¹⁰)·|w_k| (half a step and the float16 scale) plus a float32 dot product's
// 2(K+8)·2⁻²⁴·Σ|a·w|, of the reference BlockQuantMatMul.
func TestBlockQuantIntFamilies(t *testing.T) {
	fams := QuantKernelFamilies()
	t.Logf("families: %v", fams)
	rng := rand.New(rand.NewPCG(24, 15))
	var cases []bqCase
	for _, bits := range []int{8, 4} {
		cases = append(cases,
			bqCase{7, 64, bits, 32, []int{1, 1, 64}},
			bqCase{8, 96, bits, 32, []int{1, 5, 96}},
			bqCase{300, 256, bits, 32, []int{1, 3, 256}},
			bqCase{13, 2048, bits, 32, []int{1, 2048}},
			bqCase{6, 352, bits, 32, []int{3, 352}}, // 11 blocks, N = 4+2
		)
	}
	b := New(Options{})
	defer b.Close()
	for _, c := range cases {
		t.Run(fmt.Sprintf("q%d_n%d_k%d_a%v", c.bits, c.n, c.k, c.a), func(t *testing.T) {
			sg, a := bqGraph(rng, c)
			// a few blocks of zeros and one of a large value (the
			// quantization's edge cases)
			av := graph.Data[float32](a)
			for i := 0; i < 32 && i < len(av); i++ {
				av[i] = 0
			}
			if len(av) > 64 {
				av[40] = 1e4
			}
			ref := referenceBQ(t, sg, a)
			var first []float32
			for _, fam := range fams {
				for _, threads := range []int{1, 2} {
					t.Setenv(qkernelEnv, fam)
					got, exe := runBQ(t, b, sg, a, hal.CompileOptions{Threads: threads, Precision: hal.PrecisionInt8})
					if p := exe.Precision(); p != hal.PrecisionInt8 || exe.int8Nodes != 1 || exe.int8Kernel != fam {
						t.Fatalf("%s: precision %q, %d int8 nodes, kernel %s", fam, p, exe.int8Nodes, exe.int8Kernel)
					}
					if first == nil {
						first = got
						checkIntModel(t, sg, c, av, got, ref)
						continue
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(first[i]) {
							t.Fatalf("%s, %d threads: y[%d] = %v, %s: %v", fam, threads, i, got[i], fams[0], first[i])
						}
					}
				}
			}
		})
	}
}

// checkIntModel checks got against the float64 model of the quantized
// arithmetic and against the reference ref (see TestBlockQuantIntFamilies).
func checkIntModel(t *testing.T, sg *hal.Subgraph, c bqCase, av, got, ref []float32) {
	t.Helper()
	bt, st := sg.Graph.Initializers["b"], sg.Graph.Initializers["s"]
	var q8 []int8
	var q4 []uint8
	if c.bits == 8 {
		q8 = graph.Data[int8](bt)
	} else {
		q4 = graph.Data[uint8](bt)
	}
	sc := graph.Data[float32](st)
	w := blockquant.Dequantise(c.bits, c.block, q8, q4, sc, c.n*c.k)
	qw := func(e int) float64 {
		if c.bits == 8 {
			return float64(q8[e])
		}
		return float64(int(q4[e>>1]>>(4*(e&1))&15) - 8)
	}
	m := len(av) / c.k
	var act bqAct
	quantizeAct(&act, av, m, c.k, c.bits == 4)
	nb := c.k / 32
	worstM, worstR := 0.0, 0.0
	for i := range got {
		r, j := i/c.n, i%c.n
		var model, mmag, rmag, amag float64
		for bl := 0; bl < nb; bl++ {
			s := float64(float32(sc[j*nb+bl] * act.d[r*nb+bl]))
			var p, pm float64
			for k := bl * 32; k < bl*32+32; k++ {
				e := j*c.k + k
				v := float64(act.q[r*c.k+k]) * qw(e)
				p += v
				pm += math.Abs(v)
				rmag += math.Abs(float64(av[r*c.k+k]) * float64(w[e]))
				amag += float64(act.d[r*nb+bl]) * (0.5 + 127*math.Ldexp(1, -10)) * math.Abs(float64(w[e]))
			}
			model += s * p
			mmag += math.Abs(s) * pm
		}
		tolM := float64(nb+4)*math.Ldexp(1, -23)*mmag + 1e-30
		if d := math.Abs(float64(got[i]) - model); !(d <= tolM) {
			t.Fatalf("y[%d] = %v, float64 model %v (|d| %.3g > %.3g)", i, got[i], model, d, tolM)
		} else {
			worstM = max(worstM, d/tolM)
		}
		tolR := amag + 2*float64(c.k+8)*math.Ldexp(1, -24)*rmag + 1e-30
		if d := math.Abs(float64(got[i]) - float64(ref[i])); !(d <= tolR) {
			t.Fatalf("y[%d] = %v, reference %v (|d| %.3g > %.3g)", i, got[i], ref[i], d, tolR)
		} else {
			worstR = max(worstR, d/tolR)
		}
	}
	t.Logf("worst error %.3f of the model's bound, %.3f of the reference's", worstM, worstR)
}

// TestBlockQuantIntDeclines: nodes whose blocks are not 32 or span rows
// stay on the float path under the opt-in (same bits as without it, the
// reason kept, float32 reported); without the opt-in nothing changes.
func TestBlockQuantIntDeclines(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	b := New(Options{})
	defer b.Close()
	for _, c := range []struct {
		bqCase
		reason string
	}{
		{bqCase{5, 128, 8, 64, []int{3, 128}}, "block_size 64"},
		{bqCase{64, 172, 4, 64, []int{1, 2, 172}}, "block_size 64"},
		{bqCase{32, 37, 8, 37, []int{1, 37}}, "block_size 37"},
		{bqCase{16, 48, 8, 32, []int{2, 48}}, "K 48 is not a multiple of 32"},
	} {
		sg, a := bqGraph(rng, c.bqCase)
		plain, pe := runBQ(t, b, sg, a, hal.CompileOptions{})
		got, exe := runBQ(t, b, sg, a, hal.CompileOptions{Precision: hal.PrecisionInt8})
		if pe.Precision() != hal.PrecisionFloat32 || exe.Precision() != hal.PrecisionFloat32 {
			t.Errorf("%+v: precision %q / %q", c.bqCase, pe.Precision(), exe.Precision())
		}
		if len(exe.floatNotes) != 1 || !strings.Contains(exe.floatNotes[0], c.reason) {
			t.Errorf("%+v: notes %q, want %q", c.bqCase, exe.floatNotes, c.reason)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(plain[i]) {
				t.Fatalf("%+v: y[%d] %v, float path %v", c.bqCase, i, got[i], plain[i])
			}
		}
	}
	// whole blocks of 32 without the opt-in: the float path
	sg, a := bqGraph(rng, bqCase{8, 64, 8, 32, []int{2, 64}})
	_, exe := runBQ(t, b, sg, a, hal.CompileOptions{Precision: hal.PrecisionFloat16})
	if exe.Precision() != hal.PrecisionFloat32 || exe.int8Nodes != 0 {
		t.Errorf("float16 asked: precision %q, %d int8 nodes", exe.Precision(), exe.int8Nodes)
	}
}

// TestBlockQuantIntNaN: a NaN or an infinity in a block of A makes the
// outputs that read it NaN on every family (never a garbage integer).
func TestBlockQuantIntNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	b := New(Options{})
	defer b.Close()
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1))} {
		sg, a := bqGraph(rng, bqCase{8, 64, 4, 32, []int{2, 64}})
		graph.Data[float32](a)[70] = bad // row 1
		for _, fam := range QuantKernelFamilies() {
			t.Setenv(qkernelEnv, fam)
			got, _ := runBQ(t, b, sg, a, hal.CompileOptions{Precision: hal.PrecisionInt8})
			for i, v := range got {
				if (i >= 8) != (v != v) {
					t.Fatalf("%s, %v in row 1: y[%d] = %v", fam, bad, i, v)
				}
			}
		}
	}
}

// TestBlockQuantIntConcurrent: one executable run from several goroutines
// (its activation scratch is per call) gives every caller the same bits.
func TestBlockQuantIntConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	sg, _ := bqGraph(rng, bqCase{64, 256, 8, 32, []int{3, 256}})
	exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: 2, Precision: hal.PrecisionInt8})
	if err != nil {
		t.Fatal(err)
	}
	const G = 4
	ins := make([]*graph.Tensor, G)
	want := make([][]float32, G)
	for g := range ins {
		_, ins[g] = bqGraph(rng, bqCase{64, 256, 8, 32, []int{3, 256}})
		out := []*graph.Tensor{{}}
		if err := exe.Execute(ctx, []*graph.Tensor{ins[g]}, out); err != nil {
			t.Fatal(err)
		}
		want[g] = graph.Data[float32](out[0])
	}
	var wg sync.WaitGroup
	errs := make(chan error, G*20)
	for g := 0; g < G; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for it := 0; it < 20; it++ {
				out := []*graph.Tensor{{}}
				if err := exe.Execute(ctx, []*graph.Tensor{ins[g]}, out); err != nil {
					errs <- err
					return
				}
				for i, v := range graph.Data[float32](out[0]) {
					if math.Float32bits(v) != math.Float32bits(want[g][i]) {
						errs <- fmt.Errorf("goroutine %d: y[%d] = %v, want %v", g, i, v, want[g][i])
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
