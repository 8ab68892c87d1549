package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkF16Dot: one activation row times an F16 matrix of Qwen2.5-0.5B's
// feed-forward shape (4864×896) and 8 such (past the caches: 70 MB, as a
// decode step streams them), per kernel family; bytes are the weight's.
func BenchmarkF16Dot(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, copies := range []int{1, 8} {
		n, k := 4864*copies, 896
		raw := randomHalves(rng, false, n, k, false)
		x := randomActs(rng, false, 1, k, true, false)
		y := make([]float32, n)
		for _, fam := range f16Families(false) {
			if fam == f16Go {
				continue
			}
			w := &f16Weights{n: n, k: k, raw: raw, kern: fam}
			b.Run(fmt.Sprintf("%s/%dMB", fam.name, len(raw)>>20), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				for i := 0; i < b.N; i++ {
					w.run(nil, nil, x, y, 1)
				}
			})
		}
	}
}
