package native

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// randomF32Rows is n rows of k float32 weights as a file stores them
// (little-endian bytes), with specials (NaN, ±Inf, ±0, subnormals, the
// largest finite values, any bit pattern) scattered in when asked.
func randomF32Rows(rng *rand.Rand, n, k int, specials bool) []byte {
	raw := make([]byte, 4*n*k)
	for i := 0; i < n*k; i++ {
		v := float32(rng.NormFloat64() * 0.05)
		if specials && rng.IntN(9) == 0 {
			switch rng.IntN(5) {
			case 0:
				v = math.Float32frombits(uint32(1 + rng.IntN(1<<23-1)))
			case 1:
				v = float32(math.Inf(1))
			case 2:
				v = math.MaxFloat32
			case 3:
				v = 0
			default:
				v = math.Float32frombits(rng.Uint32())
			}
			if rng.IntN(2) == 0 {
				v = -v
			}
		}
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return raw
}

// TestF32WeightKernelsAgree: every F32 weight kernel family of this
// machine gives f32wRowDot's sums bit for bit, for 1 to 9 activation rows
// (the dot kernels and the blocked GEMM), K with and without a tail of
// K mod 16 values, row counts past the kernels' multiples, with special
// values; and the definition is the dot product (within float32
// rounding of the float64 sum on normal values).
func TestF32WeightKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sz := range []struct{ n, k int }{{1, 1}, {4, 16}, {8, 64}, {13, 172}, {37, 7}, {32, 896}, {11, 33}, {70, 4864}, {50, 64}, {35, 191}, {48, 176}, {17, 16}} {
		kerns := f32wFamilies()
		if c := shortChunks(sz.k); c > 0 {
			if k := f32wKernelFor("", false, c); k != kerns[len(kerns)-1] {
				kerns = append(kerns, k) // the short-row kernels
			}
		}
		for _, kern := range kerns {
			for _, specials := range []bool{false, true} {
				for m := 1; m <= 9; m++ {
					raw := randomF32Rows(rng, sz.n, sz.k, specials)
					w := &f32Weights{n: sz.n, k: sz.k, w: f32View(raw), kern: kern}
					x := randomActs(rng, false, m, sz.k, false, specials)
					y := make([]float32, m*sz.n)
					w.rows(x, y, m, 0, sz.n)
					for r := 0; r < m; r++ {
						for i := 0; i < sz.n; i++ {
							want := f32wRowDot(w.w[i*sz.k:(i+1)*sz.k], x[r*sz.k:(r+1)*sz.k])
							if got := y[r*sz.n+i]; !sameBits(got, want) {
								t.Fatalf("%s n=%d k=%d m=%d specials=%v: y[%d,%d] = %v (%08x), want %v (%08x)",
									kern.name, sz.n, sz.k, m, specials, r, i, got, math.Float32bits(got), want, math.Float32bits(want))
							}
							if !specials {
								var s, a float64
								for kk := 0; kk < sz.k; kk++ {
									p := float64(x[r*sz.k+kk]) * float64(w.w[i*sz.k+kk])
									s, a = s+p, a+math.Abs(p)
								}
								if d := math.Abs(float64(y[r*sz.n+i]) - s); d > 1e-6*a+1e-30 {
									t.Fatalf("%s n=%d k=%d: y[%d,%d] = %v, the dot product is %v", kern.name, sz.n, sz.k, r, i, y[r*sz.n+i], s)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestF32WeightsThreaded: the row split over the pool's threads gives the
// one-thread sums.
func TestF32WeightsThreaded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	n, k := 300, 256
	raw := randomF32Rows(rng, n, k, false)
	w := &f32Weights{n: n, k: k, w: f32View(raw), kern: f32wKernelFor("", false, 0)}
	p := newPool(4)
	defer p.close()
	for _, m := range []int{1, 3, 12} {
		x := randomActs(rng, false, m, k, false, false)
		y1, y4 := make([]float32, m*n), make([]float32, m*n)
		w.run(nil, x, y1, m)
		w.run(p, x, y4, m)
		for i := range y1 {
			if !sameBits(y1[i], y4[i]) {
				t.Fatalf("m=%d: y[%d] %v threaded, %v on one", m, i, y4[i], y1[i])
			}
		}
	}
}

// TestF32ViewAliases: an aligned byte slice is viewed in place, an
// unaligned one copied with the same values.
func TestF32ViewAliases(t *testing.T) {
	raw := make([]byte, 4*9)
	for i := 0; i < 9; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i)+0.5))
	}
	v := f32View(raw[:32])
	v[1] = 7
	if math.Float32frombits(binary.LittleEndian.Uint32(raw[4:])) != 7 {
		t.Fatal("an aligned view is a copy")
	}
	u := f32View(raw[1:33])
	if len(u) != 8 {
		t.Fatalf("%d values", len(u))
	}
	raw2 := append([]byte{0}, raw...)
	u = f32View(raw2[1:])
	if u[2] != 2.5 || u[1] != 7 {
		t.Fatalf("unaligned view %v", u)
	}
}
