package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// dot16Go is dot16's Go loop (the order the assembly must keep): lane l
// the fused chain of elements l, l+16, …, reduced by reduce16.
func dot16Go(x, y []float32) float32 {
	var acc [16]float32
	for i := 0; i < len(x); i += 16 {
		for l := range acc {
			acc[l] = fma32(x[i+l], y[i+l], acc[l])
		}
	}
	return reduce16(&acc)
}

// pattnRand fills x with values of mixed sign and magnitude (sums that
// round differently in any other order).
func pattnRand(r *rand.Rand, x []float32) {
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(24)-12)))
	}
}

// TestDots16MatchesDot16: dots16 gives bit for bit one dot16 call (and
// dot16's Go loop) a row, for row counts around the four-row passes,
// lengths of one to many sixteens, a window that starts past row 0 and
// rows with NaN and infinities; the entries around out stay untouched.
func TestDots16MatchesDot16(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 1))
	for _, h := range []int{16, 32, 48, 64, 80, 128, 144} {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 33} {
			for _, j0 := range []int{0, 1, 3} {
				L := j0 + n
				K := make([]float32, L*h)
				q := make([]float32, h)
				pattnRand(r, K)
				pattnRand(r, q)
				if n > 2 {
					K[(j0+1)*h+r.IntN(h)] = float32(math.NaN())
					K[(j0+2)*h+r.IntN(h)] = float32(math.Inf(1))
				}
				out := make([]float32, L+2)
				for i := range out {
					out[i] = -7
				}
				dots16(out[1+j0:1+L], K[j0*h:L*h], q)
				for i := range out {
					if i >= 1+j0 && i < 1+L {
						continue
					}
					if out[i] != -7 {
						t.Fatalf("h=%d n=%d j0=%d: out[%d] written (%v)", h, n, j0, i, out[i])
					}
				}
				for j := j0; j < L; j++ {
					got := math.Float32bits(out[1+j])
					row := K[j*h : j*h+h]
					if want := math.Float32bits(dot16(row, q)); got != want {
						t.Fatalf("h=%d n=%d j0=%d row %d: %#x, dot16 %#x", h, n, j0, j, got, want)
					}
					if want := math.Float32bits(dot16Go(row, q)); got != want {
						t.Fatalf("h=%d n=%d j0=%d row %d: %#x, dot16's Go loop %#x", h, n, j0, j, got, want)
					}
				}
			}
		}
	}
}

// dotGGMLGo is dotGGML's Go loop: four accumulators of sixteen lanes
// over each 64 values, added (0+2)+(1+3), reduced by reduce16, the rest
// one fused multiply-add at a time.
func dotGGMLGo(x, y []float32) float32 {
	var acc [4][16]float32
	np := len(x) &^ 63
	for i := 0; i < np; i += 64 {
		for k := range acc {
			for l := range acc[k] {
				acc[k][l] = fma32(x[i+16*k+l], y[i+16*k+l], acc[k][l])
			}
		}
	}
	var t [16]float32
	for l := range t {
		t[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	return fmaSeqGo(x[np:], y[np:len(x)], reduce16(&t))
}

// TestDotsGGMLMatchesDotGGML: dotsGGML gives bit for bit one dotGGML call
// (and its Go loop) a row, for row lengths below, at and past whole
// sixty-fours, row counts around the four-row passes, windows past row 0
// and NaN and infinities; the entries around out stay untouched.
func TestDotsGGMLMatchesDotGGML(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 2))
	for _, h := range []int{1, 15, 16, 63, 64, 65, 80, 128, 130, 192, 256, 320} {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 17} {
			for _, j0 := range []int{0, 2} {
				L := j0 + n
				K := make([]float32, L*h)
				q := make([]float32, h)
				pattnRand(r, K)
				pattnRand(r, q)
				if n > 2 {
					K[(j0+1)*h+r.IntN(h)] = float32(math.NaN())
					K[(j0+2)*h+r.IntN(h)] = float32(math.Inf(-1))
				}
				out := make([]float32, L+2)
				for i := range out {
					out[i] = -7
				}
				dotsGGML(out[1+j0:1+L], K[j0*h:L*h], q)
				for i := range out {
					if (i < 1+j0 || i >= 1+L) && out[i] != -7 {
						t.Fatalf("h=%d n=%d j0=%d: out[%d] written (%v)", h, n, j0, i, out[i])
					}
				}
				for j := j0; j < L; j++ {
					got := math.Float32bits(out[1+j])
					row := K[j*h : j*h+h]
					if want := math.Float32bits(dotGGML(row, q)); got != want {
						t.Fatalf("h=%d n=%d j0=%d row %d: %#x, dotGGML %#x", h, n, j0, j, got, want)
					}
					if want := math.Float32bits(dotGGMLGo(row, q)); got != want {
						t.Fatalf("h=%d n=%d j0=%d row %d: %#x, dotGGML's Go loop %#x", h, n, j0, j, got, want)
					}
				}
			}
		}
	}
}

// TestDots16Empty: no rows write nothing (and need no rows).
func TestDots16Empty(t *testing.T) {
	dots16(nil, nil, make([]float32, 16))
	dotsGGML(nil, nil, make([]float32, 64))
}

// BenchmarkDots16: a 128-key prompt's scores of one 64-value head, one
// call (dots16, dotsGGML) against one dot16 or dotGGML call a key.
func BenchmarkDots16(b *testing.B) {
	const h, n = 64, 128
	r := rand.New(rand.NewPCG(1, 2))
	K, q, out := make([]float32, n*h), make([]float32, h), make([]float32, n)
	pattnRand(r, K)
	pattnRand(r, q)
	b.Run("rows", func(b *testing.B) {
		for b.Loop() {
			dots16(out, K, q)
		}
	})
	b.Run("dot16", func(b *testing.B) {
		for b.Loop() {
			for j := range out {
				out[j] = dot16(K[j*h:j*h+h], q)
			}
		}
	})
	b.Run("rowsGGML", func(b *testing.B) {
		for b.Loop() {
			dotsGGML(out, K, q)
		}
	})
	b.Run("dotGGML", func(b *testing.B) {
		for b.Loop() {
			for j := range out {
				out[j] = dotGGML(K[j*h:j*h+h], q)
			}
		}
	})
}
