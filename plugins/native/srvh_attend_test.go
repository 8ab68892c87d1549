package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// srvhF16Rows is n random rows of h float16 values.
func srvhF16Rows(rng *rand.Rand, n, h int) []graph.F16 {
	k := make([]graph.F16, n*h)
	for i := range k {
		k[i] = graph.F16FromFloat32(rng.Float32()*2 - 1)
	}
	return k
}

// TestSrvhAttendF16GroupSameBits: attendF16Group gives each head the
// bits of attendF16 alone, for groups of 1 to 9 heads (the sums' blocks
// of four, two and one) and 16, head sizes 32 and 64, a few keys to a
// few hundred, with and without softcap.
func TestSrvhAttendF16GroupSameBits(t *testing.T) {
	if !f16Attn {
		t.Skip("no AVX-512 float16 row kernels here")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for _, H := range []int{32, 64} {
		for _, G := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16} {
			for _, L := range []int{1, 5, 17, 100, 301} {
				for _, softcap := range []float32{0, 3} {
					q := make([]float32, G*H)
					for i := range q {
						q[i] = f16Round((rng.Float32()*2 - 1) * 4)
					}
					K, V := srvhF16Rows(rng, L, H), srvhF16Rows(rng, L, H)
					scale := float32(1 / math.Sqrt(float64(H)))
					want := make([]float32, G*H)
					for h := range G {
						attendF16(q[h*H:(h+1)*H], K, V, make([]float32, L), make([]float32, L), want[h*H:(h+1)*H], scale, softcap)
					}
					got := make([]float32, G*H)
					if !attendF16Group(q, K, V, make([]float32, G*L), make([]float32, G*L), got, H, scale, softcap) {
						t.Fatalf("H %d G %d: not done", H, G)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("H %d G %d L %d softcap %v: o[%d] = %v, head by head %v", H, G, L, softcap, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestSrvhSumRowsF64: each row's sum is the in-order loop's, for 1 to 9
// rows of values over many binades (where the order shows).
func TestSrvhSumRowsF64(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	for rows := 1; rows <= 9; rows++ {
		const n = 257
		e := make([]float32, rows*n)
		for i := range e {
			e[i] = float32(rng.Float64() * math.Exp2(float64(rng.IntN(60)-30)))
		}
		sums := make([]float64, rows)
		sumRowsF64(e, n, sums)
		for r := range rows {
			s := 0.0
			for _, w := range e[r*n : (r+1)*n] {
				s += float64(w)
			}
			if math.Float64bits(s) != math.Float64bits(sums[r]) {
				t.Fatalf("%d rows: row %d sums to %v, in order %v", rows, r, sums[r], s)
			}
		}
	}
}

// BenchmarkSrvhAttendF16Group: a Qwen2.5-0.5B KV head's 7 query heads
// (H 64) over L float16 keys, head by head (attendF16) and together
// (attendF16Group), alternating call by call: each one's least and
// median ns a call.
func BenchmarkSrvhAttendF16Group(b *testing.B) {
	if !f16Attn {
		b.Skip("no AVX-512 float16 row kernels here")
	}
	const G, H = 7, 64
	rng := rand.New(rand.NewPCG(1, 2))
	for _, L := range []int{32, 100, 300} {
		q := make([]float32, G*H)
		for i := range q {
			q[i] = f16Round(rng.Float32()*2 - 1)
		}
		K, V := srvhF16Rows(rng, L, H), srvhF16Rows(rng, L, H)
		sc, e, o := make([]float32, G*L), make([]float32, G*L), make([]float32, G*H)
		b.Run(fmt.Sprintf("L%d", L), func(b *testing.B) {
			var ts [2][]time.Duration
			for k := range b.N {
				for i := range 2 {
					v := (i + k) % 2
					t0 := time.Now()
					if v == 0 {
						attendF16Group(q, K, V, sc, e, o, H, 0.125, 0)
					} else {
						for h := range G {
							attendF16(q[h*H:(h+1)*H], K, V, sc[:L], e[:L], o[h*H:(h+1)*H], 0.125, 0)
						}
					}
					ts[v] = append(ts[v], time.Since(t0))
				}
			}
			med := func(ds []time.Duration) time.Duration {
				s := slices.Clone(ds)
				slices.Sort(s)
				return s[len(s)/2]
			}
			b.ReportMetric(float64(slices.Min(ts[0]).Nanoseconds()), "ns-least-group")
			b.ReportMetric(float64(slices.Min(ts[1]).Nanoseconds()), "ns-least-heads")
			b.ReportMetric(float64(med(ts[0]).Nanoseconds()), "ns-median-group")
			b.ReportMetric(float64(med(ts[1]).Nanoseconds()), "ns-median-heads")
		})
	}
}
