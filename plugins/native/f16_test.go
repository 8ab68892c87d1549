package native

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// randomHalves is n rows of k 16-bit values: random normal weights, and
// with specials set, every kind of value (NaN, ±Inf, ±0, subnormal halves
// or bfloat16s, the largest finite ones) scattered in.
func randomHalves(rng *rand.Rand, bf bool, n, k int, specials bool) []byte {
	raw := make([]byte, 2*n*k)
	for i := 0; i < n*k; i++ {
		v := float32(rng.NormFloat64() * 0.05)
		var h uint16
		if bf {
			h = uint16(graph.BF16FromFloat32(v))
		} else {
			h = uint16(graph.F16FromFloat32(v))
		}
		if specials && rng.IntN(9) == 0 {
			switch rng.IntN(6) {
			case 0: // subnormal
				h = uint16(1 + rng.IntN(0x3ff))
			case 1: // NaN or Inf
				if bf {
					h = 0x7f80 | uint16(rng.IntN(2))<<6
				} else {
					h = 0x7c00 | uint16(rng.IntN(2))<<9
				}
			case 2: // largest finite
				h = 0x7bff
				if bf {
					h = 0x7f7f
				}
			case 3:
				h = 0
			default: // any bit pattern
				h = uint16(rng.IntN(1 << 16))
			}
			h |= uint16(rng.IntN(2)) << 15
		}
		binary.LittleEndian.PutUint16(raw[2*i:], h)
	}
	return raw
}

// randomActs is m rows of k activations, rounded to the weight's type
// when round (reduced precision), with a few specials when specials.
func randomActs(rng *rand.Rand, bf bool, m, k int, round, specials bool) []float32 {
	x := make([]float32, m*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if specials && rng.IntN(50) == 0 {
			x[i] = []float32{float32(math.Inf(1)), float32(math.NaN()), 0, 1e-40, -3e38}[rng.IntN(5)]
		}
		if round {
			if bf {
				x[i] = graph.BF16FromFloat32(x[i]).Float32()
			} else {
				x[i] = graph.F16FromFloat32(x[i]).Float32()
			}
		}
	}
	return x
}

// sameBits reports whether a and b are the same float32 (any NaN equals
// any NaN: kernels may quiet a signalling one).
func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// oldF16Path is y = x·Wᵀ as it was computed before the weights were kept
// 16-bit: W widened to float32, transposed, packed and multiplied by the
// micro-kernel kern.
func oldF16Path(kern *microKernel, raw []byte, bf bool, x []float32, m, n, k int) []float32 {
	wt := make([]float32, k*n) // [K, N]
	for r := 0; r < n; r++ {
		for c := 0; c < k; c++ {
			wt[c*n+r] = f16Widen(binary.LittleEndian.Uint16(raw[2*(r*k+c):]), bf)
		}
	}
	packed := make([]float32, packedLen(k, n, kern.nr))
	packB(packed, wt, k, n, kern.nr, n, 1)
	y := make([]float32, m*n)
	gemm(kern, nil, &gemmOp{m: m, n: n, k: k, a: x, lda: k, b: packed, c: y, ldc: n})
	return y
}

// TestF16KernelsAgree: every F16/BF16 kernel family of this machine, at
// 1 and 2 threads, with one and several activation rows, odd sizes, NaN,
// Inf and subnormal halves, gives the definition's bits (f16RowDot: k in
// order, one float32 FMA a step), and the same bits as the float32 GEMM
// the weights took when they were widened at load.
func TestF16KernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 30))
	var asmKern *microKernel
	for i := range kernelsAvailable {
		if kernelsAvailable[i].name != generic.name {
			asmKern = &kernelsAvailable[i]
			break
		}
	}
	sizes := [][2]int{{1, 8}, {16, 8}, {32, 64}, {33, 17}, {47, 129}, {64, 256}, {100, 40}, {5, 3}, {96, 1000}}
	for _, bf := range []bool{false, true} {
		for _, fam := range f16Families(bf) {
			for _, sz := range sizes {
				n, k := sz[0], sz[1]
				for _, specials := range []bool{false, true} {
					raw := randomHalves(rng, bf, n, k, specials)
					for _, m := range []int{1, 2, 3, 4, 5, 9, 17} {
						for _, round := range []bool{true, false} {
							x := randomActs(rng, bf, m, k, round, specials)
							var old []float32
							if asmKern != nil {
								old = oldF16Path(asmKern, raw, bf, x, m, n, k)
							}
							for _, threads := range []int{1, 2} {
								p := newPool(threads)
								w := &f16Weights{n: n, k: k, bf: bf, raw: raw, kern: fam}
								y := make([]float32, m*n)
								w.run(p, asmKern, x, y, m)
								p.close()
								for r := 0; r < m; r++ {
									for j := 0; j < n; j++ {
										want := f16RowDot(raw[2*j*k:2*(j+1)*k], bf, x[r*k:(r+1)*k], 0, 0)
										got := y[r*n+j]
										if !sameBits(got, want) {
											t.Fatalf("bf16 %v %s n %d k %d m %d threads %d round %v specials %v: y[%d,%d] = %v (%#x), the definition %v (%#x)",
												bf, fam.name, n, k, m, threads, round, specials, r, j, got, math.Float32bits(got), want, math.Float32bits(want))
										}
										if old != nil && !sameBits(got, old[r*n+j]) {
											t.Fatalf("bf16 %v %s n %d k %d m %d: y[%d,%d] = %v, the widened GEMM (%s) %v", bf, fam.name, n, k, m, r, j, got, asmKern.name, old[r*n+j])
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestFMA32 checks the software fused multiply-add against float64
// arithmetic where that is exact, and on double-rounding cases.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		a, b, c := float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())
		// the exact a·b+c as a big float is beyond float64 in general;
		// compare with math.FMA's float64 result where that is exactly
		// a float32 or far from a float32 tie
		e := math.FMA(float64(a), float64(b), float64(c))
		got := fma32(a, b, c)
		if soft := fma32Soft(a, b, c); math.Float32bits(soft) != math.Float32bits(got) {
			t.Fatalf("fma32(%v, %v, %v) = %v, fma32Soft %v", a, b, c, got, soft)
		}
		if float64(float32(e)) == e && float64(got) != e {
			t.Fatalf("fma32(%v, %v, %v) = %v, exact %v", a, b, c, got, e)
		}
		lo, hi := math.Nextafter32(got, float32(math.Inf(-1))), math.Nextafter32(got, float32(math.Inf(1)))
		if math.Abs(e-float64(got)) > math.Abs(e-float64(lo)) || math.Abs(e-float64(got)) > math.Abs(e-float64(hi)) {
			t.Fatalf("fma32(%v, %v, %v) = %v, not the nearest float32 to %v", a, b, c, got, e)
		}
	}
	// 1025·2^-10 × 1047553·2^-44 = (2^30+1)·2^-54 = 2^-24 + 2^-54; + 1 in
	// float64 rounds to 1+2^-24, a float32 tie (then to even: 1), but
	// the exact sum is above the tie: 1+2^-23
	a, b := float32(1025*math.Pow(2, -10)), float32(1047553*math.Pow(2, -44))
	if got := fma32Soft(a, b, 1); got != float32(1+math.Pow(2, -23)) {
		t.Fatalf("fma32Soft double rounding: got %v (%#x), want 1+2^-23", got, math.Float32bits(got))
	}
	if got := fma32(a, b, 1); got != float32(1+math.Pow(2, -23)) {
		t.Fatalf("fma32 double rounding: got %v (%#x), want 1+2^-23", got, math.Float32bits(got))
	}
}
