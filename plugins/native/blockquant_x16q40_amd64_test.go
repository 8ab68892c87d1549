package native

import (
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// TestX16Q40Variants: the Q4_0 x16 kernels with the high nibbles by a
// shift and an AND and by GF2P8AFFINEQB (the one registered where the CPU
// has GFNI, checked by TestX16KindsMatchDot) give the same bits as Dot.
func TestX16Q40Variants(t *testing.T) {
	if !hasX16 || !cpu.X86.HasAVX512GFNI {
		t.Skip("needs AVX-512 BW, VNNI and GFNI")
	}
	rng := rand.New(rand.NewPCG(16, 4))
	const n, m, K = 32, 4, 288
	raw := randomGGML(rng, ggml.Q4_0, n, K)
	x16SpecialScales(rng, ggml.Q4_0, raw)
	rb, nb := len(raw)/n, K/32
	packed := make([]byte, n/16*x16Q40Size(nb))
	for g := 0; g < n/16; g++ {
		x16Q40Repack(packed[g*x16Q40Size(nb):], raw[16*g*rb:], rb, nb)
	}
	var a ggml.Act
	a.Quantize(x16Acts(rng, m, K, true), m, K, 32)
	for _, gfni := range []bool{false, true} {
		kind := x16Q40Kind(x16Q40Fns(gfni))
		for nr := 1; nr <= m; nr++ {
			y := make([]float32, nr*n)
			kind.gemm(packed, nb, n/16, &a, 0, nr, y, n)
			for k := 0; k < nr; k++ {
				for j := 0; j < n; j++ {
					if want := ggml.Dot(ggml.Q4_0, raw[j*rb:(j+1)*rb], &a, k); !x16Same(y[k*n+j], want) {
						t.Fatalf("gfni %v, %d rows: row %d act %d: got %v, Dot %v", gfni, nr, j, k, y[k*n+j], want)
					}
				}
			}
		}
	}
}
