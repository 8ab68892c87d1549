package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
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

// TestFCSmallLargestSums runs fcSmall's packed pairs at the largest depth
// foldFC gives them (units·depth ≤ 2¹⁶ with 4 units: |Σ w·x| up to 2²⁸)
// with the extreme values, against the direct int32 sums.
func TestFCSmallLargestSums(t *testing.T) {
	for _, c := range []struct{ units, depth int }{{4, 1 << 14}, {5, 13107}, {64, 1 << 10}} {
		for _, v := range [][2]int8{{-128, -128}, {-128, 127}, {127, 127}, {127, -128}} {
			w := make([]int8, c.units*c.depth)
			x := make([]int8, c.depth)
			for i := range w {
				w[i] = v[0]
				if i%c.depth == 7 {
					w[i] = -v[0] / 3 // not all alike
				}
			}
			for i := range x {
				x[i] = v[1]
			}
			l := &linear{xz: -7, yz: 3, lo: -128, hi: 127, mq: make([]int32, c.units), wz: make([]int32, c.units), ls: make([]uint, c.units), rs: make([]uint, c.units)}
			for u := range c.units {
				l.mq[u] = 1<<30 + int32(u)*12345
				l.ls[u], l.rs[u] = requantShifts(-24)
				l.wz[u] = int32(u%3) - 1
			}
			in := make([]*graph.Tensor, 9)
			in[3] = graph.MustFromSlice([]int{c.units, c.depth}, w)
			f := foldFC(&kernels.Context{Const: 1 << 3}, in, l, c.units, c.depth)
			if f == nil || f.wp == nil {
				t.Fatalf("%d×%d: not on the packed path", c.units, c.depth)
			}
			got := make([]int8, c.units)
			fcFolded(f, w, x, got, c.units, c.depth, l.mq, l.wz, l.ls, l.rs, l.yz, l.lo, l.hi)
			for u := range c.units {
				acc := dotQ8(w[u*c.depth:(u+1)*c.depth], x, l.wz[u], l.xz)
				want := clamp8(requantAway(acc, l.mq[u], l.ls[u], l.rs[u])+l.yz, l.lo, l.hi)
				if got[u] != want {
					t.Fatalf("%d×%d w %d x %d unit %d: %d, want %d", c.units, c.depth, v[0], v[1], u, got[u], want)
				}
			}
		}
	}
}
