package native

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// TestBlockQuantK4ZMMVariants: each of the K types' ZMM four-row kernels
// this CPU runs (Q4_K and Q6_K with and without GFNI, Q5_K) gives core/ggml's
// Dot bit for bit over ng = 1..5 groups read as quarters (group g: rows
// g, g+ng, g+2·ng, g+3·ng), on activations with a zero block and a large
// value.
func TestBlockQuantK4ZMMVariants(t *testing.T) {
	if !hasBQKAVX2 || !hasBQIVNNI || !cpu.X86.HasAVX512BW {
		t.Skip("no AVX-512 BW + VNNI here")
	}
	type variant struct {
		name string
		ty   ggml.Type
		f    bqkFnK4
	}
	vs := []variant{{"Q4_K", ggml.Q4_K, bqkQ4KDot4VNNI}, {"Q5_K", ggml.Q5_K, bqkQ5KDot4VNNI}, {"Q6_K", ggml.Q6_K, bqkQ6KDot4VNNI}}
	if cpu.X86.HasAVX512GFNI {
		vs = append(vs, variant{"Q4_K GFNI", ggml.Q4_K, bqkQ4KDot4GFNI}, variant{"Q6_K GFNI", ggml.Q6_K, bqkQ6KDot4GFNI})
	}
	rng := rand.New(rand.NewPCG(36, 7))
	for _, v := range vs {
		for _, K := range []int{256, 768} {
			const rows, m = 20, 2
			raw := randomGGML(rng, v.ty, rows, K)
			w := &bqWeights{n: rows, k: K, typ: v.ty, raw: raw, rb: len(raw) / rows}
			x := make([]float32, m*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for i := 0; i < 32; i++ {
				x[i+64] = 0
			}
			x[K+5] = 1e6
			var a ggml.Act
			a.Quantize(x, m, K, ggml.ActBlock(v.ty))
			k := newBQKKernelN(v.ty, nil, v.f)
			for ng := 1; ng <= 5; ng++ {
				for r := 0; r < m; r++ {
					y := make([]float32, 4*ng)
					k.dot4n(w, 0, ng, &a, r, y)
					for i, g := range y {
						if want := bqkGo.dot(w, i, &a, r); math.Float32bits(g) != math.Float32bits(want) {
							t.Errorf("%s K %d ng %d act %d: row %d %v, Go %v", v.name, K, ng, r, i, g, want)
						}
					}
				}
			}
		}
	}
}
