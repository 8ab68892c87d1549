package quant

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestFCFoldedMatchesDirect holds fullyConnected's folded path (zero
// points and bias folded into one constant per unit, weights transposed
// for small layers) to the direct Σ (w−wz)(x−xz) + bias, requantised the
// same way, over random layers, zero points and multipliers, sums that
// wrap int32 included.
func TestFCFoldedMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for it := 0; it < 300; it++ {
		units, depth, rows := 1+rng.IntN(80), 1+rng.IntN(40), 1+rng.IntN(3)
		w := make([]int8, units*depth)
		x := make([]int8, rows*depth)
		for i := range w {
			w[i] = int8(rng.IntN(256) - 128)
		}
		for i := range x {
			x[i] = int8(rng.IntN(256) - 128)
		}
		bias := make([]int32, units)
		l := &linear{xz: int32(rng.IntN(256) - 128), yz: int32(rng.IntN(256) - 128), lo: -128, hi: 127,
			mq: make([]int32, units), wz: make([]int32, units), ls: make([]uint, units), rs: make([]uint, units)}
		for u := range units {
			bias[u] = rng.Int32() - 1<<30
			if it%3 == 0 {
				bias[u] = int32(rng.Uint32()) // sums that wrap
			}
			if it%2 == 0 {
				l.wz[u] = int32(rng.IntN(256) - 128)
			}
			l.mq[u] = 1<<30 + rng.Int32N(1<<30)
			l.ls[u], l.rs[u] = requantShifts(rng.IntN(20) - 16)
		}
		in := make([]*graph.Tensor, 9)
		in[3] = graph.MustFromSlice([]int{units, depth}, w)
		in[8] = graph.MustFromSlice([]int{units}, bias)
		ctx := &kernels.Context{Const: 1<<3 | 1<<8}
		f := foldFC(ctx, in, l, units, depth)
		if f == nil {
			t.Fatalf("%d×%d: not folded", units, depth)
		}
		got := make([]int8, rows*units)
		fcFolded(f, w, x, got, units, depth, l.mq, l.wz, l.ls, l.rs, l.yz, l.lo, l.hi)
		for r := range rows {
			for u := range units {
				acc := dotQ8(w[u*depth:(u+1)*depth], x[r*depth:], l.wz[u], l.xz) + bias[u]
				want := clamp8(requantAway(acc, l.mq[u], l.ls[u], l.rs[u])+l.yz, l.lo, l.hi)
				if got[r*units+u] != want {
					t.Fatalf("%d×%d row %d unit %d: %d, want %d", units, depth, r, u, got[r*units+u], want)
				}
			}
		}
		if ctx.Const = 1 << 3; foldFC(ctx, in, l, units, depth) != nil {
			t.Fatal("folded a bias that is not a constant")
		}
	}
}

// BenchmarkFCFolded times the folded path on hello_world_int8's layers
// (units×depth: 16×1, 16×16) and a wider one (64×64), one row each.
func BenchmarkFCFolded(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][2]int{{16, 1}, {16, 16}, {64, 64}} {
		units, depth := sh[0], sh[1]
		w, x, y := make([]int8, units*depth), make([]int8, depth), make([]int8, units)
		for i := range w {
			w[i] = int8(rng.IntN(256) - 128)
		}
		for i := range x {
			x[i] = int8(rng.IntN(256) - 128)
		}
		l := &linear{xz: 3, yz: -5, lo: -128, hi: 127, mq: make([]int32, units), wz: make([]int32, units), ls: make([]uint, units), rs: make([]uint, units)}
		for u := range units {
			l.mq[u] = 1<<30 + rng.Int32N(1<<30)
			l.ls[u], l.rs[u] = requantShifts(-8)
		}
		in := make([]*graph.Tensor, 9)
		in[3] = graph.MustFromSlice([]int{units, depth}, w)
		f := foldFC(&kernels.Context{Const: 1 << 3}, in, l, units, depth)
		b.Run(fmt.Sprintf("%dx%d", units, depth), func(b *testing.B) {
			for b.Loop() {
				fcFolded(f, w, x, y, units, depth, l.mq, l.wz, l.ls, l.rs, l.yz, l.lo, l.hi)
			}
		})
	}
}
