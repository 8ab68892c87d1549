package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// seqCase is n key rows of h values and a query: normal values, values
// rounded to float16 (their products are exact in float32, so the float64
// sums of a chain often sit on float32 midpoints, fma32's slow path) or
// specials (NaN, ±Inf, ±0, subnormals, huge values).
func seqCase(rng *rand.Rand, n, h, kind int) (K, q []float32) {
	K, q = make([]float32, n*h), make([]float32, h)
	val := func() float32 {
		v := float32(rng.NormFloat64())
		switch kind {
		case 1:
			v = f16Round(v)
		case 2:
			switch rng.IntN(8) {
			case 0:
				v = math.Float32frombits(rng.Uint32())
			case 1:
				v = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 2:
				v = math.Float32frombits(uint32(1 + rng.IntN(1<<23-1)))
			case 3:
				v = 0
			case 4:
				v = math.MaxFloat32 / 4
			}
		}
		return v
	}
	for i := range K {
		K[i] = val()
	}
	for i := range q {
		q[i] = val()
	}
	return K, q
}

// TestSeqDotsSameBits: the assembly chains (all keys in one call, one by
// one and sixteen at a time, and one chain from a given start) give
// fmaSeqGo's bits: normal, float16-rounded and special values, head sizes
// 1..63 and key counts past 16.
func TestSeqDotsSameBits(t *testing.T) {
	wide := hasSeq512
	defer func() { hasSeq512 = wide }()
	for _, w := range []bool{false, wide} {
		hasSeq512 = w
		testSeqDots(t)
	}
}

func testSeqDots(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 34))
	for _, h := range []int{1, 3, 8, 16, 17, 32, 48, 63} {
		for _, n := range []int{1, 5, 64, 100} {
			for kind := 0; kind < 3; kind++ {
				K, q := seqCase(rng, n, h, kind)
				out := make([]float32, n)
				if !seqDots(out, K, q) {
					t.Skip("no FMA assembly here")
				}
				for j := range out {
					want := fmaSeqGo(K[j*h:j*h+h], q, 0)
					if !sameBits(out[j], want) {
						t.Fatalf("h %d n %d kind %d: key %d %v (%08x), want %v (%08x)", h, n, kind, j, out[j], math.Float32bits(out[j]), want, math.Float32bits(want))
					}
					s0 := float32(rng.NormFloat64())
					if got, want := fmaSeq(K[j*h:j*h+h], q, s0), fmaSeqGo(K[j*h:j*h+h], q, s0); !sameBits(got, want) {
						t.Fatalf("h %d kind %d: fmaSeq from %v = %v, want %v", h, kind, s0, got, want)
					}
				}
			}
		}
	}
}

// TestAttendRowGGMLFastPaths: attendRowGGML gives the same bits with its
// assembly (the chains of short heads, the exponentials' padded tail) as
// without, for heads under and over 64 values, prompts and single rows,
// float16 rounding on and off, windows.
func TestAttendRowGGMLFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(56, 78))
	seq, swi := hasSeqFMA, hasSwiGLU512
	defer func() { hasSeqFMA, hasSwiGLU512 = seq, swi }()
	for _, H := range []int{8, 16, 24, 48, 64, 72} {
		for _, L := range []int{1, 7, 16, 33, 100} {
			for _, c := range []struct{ oneRow, half bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
				for _, j0 := range []int{0, L / 3} {
					K, q := seqCase(rng, L, H, 1)
					V, _ := seqCase(rng, L, H, 1)
					run := func() []float32 {
						var vals ggmlValues
						vals.set(V, H, L, c.oneRow)
						o := make([]float32, H)
						attendRowGGML(q, K, &vals, make([]float32, L), make([]float32, L), o, j0, 0.35, 0, c.oneRow, c.half)
						return o
					}
					hasSeqFMA, hasSwiGLU512 = seq, swi
					fast := run()
					hasSeqFMA, hasSwiGLU512 = false, false
					slow := run()
					for d := range fast {
						if !sameBits(fast[d], slow[d]) {
							t.Fatalf("%s: o[%d] = %v, %v without the assembly", fmt.Sprintf("H %d L %d j0 %d %+v", H, L, j0, c), d, fast[d], slow[d])
						}
					}
				}
			}
		}
	}
}
