package native

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// TestBlockQuantQ4_0ZVariants: Q4_0's ZMM kernels with the high nibbles
// by GF2P8AFFINEQB (bqkQ4_0Dot4G/8G, the ones dispatch takes where the
// CPU has GFNI, checked against Go by TestBlockQuantGGMLKernelsAgree)
// and by a shift and an AND (bqkQ4_0Dot4Z/8Z, the others) give the same
// bits, for even and odd counts of blocks.
func TestBlockQuantQ4_0ZVariants(t *testing.T) {
	if !(hasBQKAVX2 && hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512GFNI) {
		t.Skip("needs AVX-512 BW, VNNI and GFNI")
	}
	rng := rand.New(rand.NewPCG(40, 4))
	for _, K := range []int{96, 288, 896} {
		const rows = 48
		raw := randomGGML(rng, ggml.Q4_0, rows, K)
		rb := len(raw) / rows
		x := make([]float32, K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a ggml.Act
		a.Quantize(x, 1, K, 32)
		nb := K / 32
		for _, c := range []struct {
			nr   int
			z, g bqkFn32s
		}{{4, bqkQ4_0Dot4Z, bqkQ4_0Dot4G}, {8, bqkQ4_0Dot8Z, bqkQ4_0Dot8G}} {
			s := rows / c.nr // groups: row q of group g at g·rb + q·s·rb
			yz, yg := make([]float32, rows), make([]float32, rows)
			c.z(nb, &raw[0], s*rb, &a.Q[0], &a.D[0], &a.Sum[0], &yz[0], s, rb, s)
			c.g(nb, &raw[0], s*rb, &a.Q[0], &a.D[0], &a.Sum[0], &yg[0], s, rb, s)
			for i := range yz {
				if math.Float32bits(yz[i]) != math.Float32bits(yg[i]) {
					t.Fatalf("K %d, %d rows a group, row %d: shift/AND %v, GFNI %v", K, c.nr, i, yz[i], yg[i])
				}
			}
		}
	}
}

// BenchmarkBlockQuantQ4_0ZVariants: Q4_0's eight-row ZMM kernel with the
// high nibbles by a shift and an AND (Z) and by GF2P8AFFINEQB (G), and
// with four blocks of a row a register (V), on a
// weight that stays in cache (4864 rows of K 896: the kernel's compute
// rate), one thread; cpu-MB/s is the rate over the CPU time taken.
//
//	go test -run '^$' -bench Q4_0ZVariants -cpu 1 ./plugins/native
func BenchmarkBlockQuantQ4_0ZVariants(b *testing.B) {
	if !(hasBQKAVX2 && hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512GFNI) {
		b.Skip("needs AVX-512 BW, VNNI and GFNI")
	}
	const rows, K = 4864, 896
	rng := rand.New(rand.NewPCG(40, 5))
	raw := randomGGML(rng, ggml.Q4_0, rows, K)
	rb := len(raw) / rows
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var a ggml.Act
	a.Quantize(x, 1, K, 32)
	y := make([]float32, rows)
	for _, c := range []struct {
		name string
		f    bqkFn32s
		nr   int
	}{{"Z", bqkQ4_0Dot8Z, 8}, {"G", bqkQ4_0Dot8G, 8}, {"V", bqkQ4_0Dot8V, 8}} {
		if c.name == "V" && !hasQ4decV8 {
			continue
		}
		s := rows / c.nr
		b.Run(c.name, func(b *testing.B) {
			streamRun(b, int64(len(raw)), func() {
				c.f(K/32, &raw[0], s*rb, &a.Q[0], &a.D[0], &a.Sum[0], &y[0], s, rb, s)
			})
		})
	}
}
