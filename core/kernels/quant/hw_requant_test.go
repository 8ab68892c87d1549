package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRequantUnitsMatchesRequantAway holds the packed requantisation of
// fcFolded to requantAway (and the clamp) bit for bit: random and extreme
// accumulators, multipliers of [2³⁰, 2³¹) and 0, every shift below 32.
func TestRequantUnitsMatchesRequantAway(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	edges := []int32{0, 1, -1, 2, -2, math.MaxInt32, math.MinInt32, math.MaxInt32 - 1, math.MinInt32 + 1, 1 << 30, -(1 << 30)}
	const units = 64
	acc := make([]int32, units)
	rq := make([]fcRequant, units)
	mq := make([]int32, units)
	ls, rs := make([]uint, units), make([]uint, units)
	y := make([]int8, units)
	for it := 0; it < 20000; it++ {
		for u := range units {
			switch rng.IntN(3) {
			case 0:
				acc[u] = edges[rng.IntN(len(edges))]
			case 1:
				acc[u] = rng.Int32N(1<<16) - 1<<15
			default:
				acc[u] = int32(rng.Uint32())
			}
			mq[u] = 1<<30 + rng.Int32N(1<<30)
			if rng.IntN(20) == 0 {
				mq[u] = 0
			}
			ls[u], rs[u] = requantShifts(rng.IntN(63) - 31)
			rq[u] = newFCRequant(mq[u], ls[u], rs[u])
		}
		yz, lo, hi := int32(rng.IntN(256)-128), int32(-128), int32(127)
		if it%2 == 1 {
			lo = yz // a fused ReLU's clamp
		}
		requantUnits(y, acc, rq, yz, lo, hi)
		for u := range units {
			want := clamp8(requantAway(acc[u], mq[u], ls[u], rs[u])+yz, lo, hi)
			if y[u] != want {
				t.Fatalf("acc %d q %d shifts %d,%d: %d, want %d", acc[u], mq[u], ls[u], rs[u], y[u], want)
			}
		}
	}
}
