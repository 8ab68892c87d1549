package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestAttendRowGGMLF16: one query row over float16 keys and values read
// as they are (bw70_gqaf16_amd64.s) gives attendRowGGML's bits over the
// decoded cache (the values transposed), for head sizes 64 and 128,
// caches shorter and longer than a 64-key block, a sliding window,
// scaled scores and soft-capping; values with zeros and negative zeros.
func TestAttendRowGGMLF16(t *testing.T) {
	if !ggmlF16Rows {
		t.Skip("no AVX-512/F16C")
	}
	rng := rand.New(rand.NewPCG(70, 1))
	ran := 0
	for _, H := range []int{64, 128} {
		for _, L := range []int{1, 2, 15, 63, 64, 65, 127, 128, 129, 200, 333} {
			for _, c := range []struct {
				j0             int
				scale, softcap float32
			}{{0, 0, 0}, {0, 0.125, 0}, {L / 3, 0.125, 0}, {0, 0.125, 30}} {
				K16, V16 := make([]graph.F16, L*H), make([]graph.F16, L*H)
				for i := range K16 {
					K16[i] = graph.F16FromFloat32(float32(rng.NormFloat64() * 2))
					switch rng.IntN(20) {
					case 0:
						V16[i] = graph.F16FromFloat32(0)
					case 1:
						V16[i] = graph.F16FromFloat32(float32(math.Copysign(0, -1)))
					default:
						V16[i] = graph.F16FromFloat32(float32(rng.NormFloat64()))
					}
				}
				q := make([]float32, H)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				f16RoundAll(q)
				K, V := make([]float32, L*H), make([]float32, L*H)
				var gc gqaCache
				gc.decode(K, K16, 0, L, H)
				gc.decode(V, V16, 0, L, H)
				var gv ggmlValues
				gv.set(V, H, L, true)
				want, got := make([]float32, H), make([]float32, H)
				sc, e := make([]float32, L), make([]float32, L)
				attendRowGGML(q, K, &gv, sc, e, want, c.j0, c.scale, c.softcap, true, true)
				sc2, e2, acc := make([]float32, L), make([]float32, L), make([]float32, 64*64)
				for i := range got {
					got[i] = float32(math.NaN())
				}
				if !attendRowGGMLF16(q, K16, V16, sc2, e2, acc, got, c.j0, c.scale, c.softcap) {
					t.Fatal("attendRowGGMLF16 declined")
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("H %d L %d %+v: o[%d] = %v, attendRowGGML %v", H, L, c, i, got[i], want[i])
					}
				}
				for j := c.j0; j < L; j++ {
					if math.Float32bits(e2[j]) != math.Float32bits(e[j]) {
						t.Fatalf("H %d L %d %+v: weight %d = %v, attendRowGGML %v", H, L, c, j, e2[j], e[j])
					}
				}
				if H == 64 {
					// a group of three queries, the first q
					const g = 3
					qs := make([]float32, g*H)
					copy(qs, q)
					for i := H; i < len(qs); i++ {
						qs[i] = float32(rng.NormFloat64())
					}
					f16RoundAll(qs)
					og := make([]float32, g*H)
					if !attendGroupGGMLF16(qs, K16, V16, make([]float32, g*L), e2, acc, og, c.j0, c.scale, c.softcap) {
						t.Fatal("attendGroupGGMLF16 declined")
					}
					for i := 0; i < g; i++ {
						attendRowGGML(qs[i*H:(i+1)*H], K, &gv, sc, e, want, c.j0, c.scale, c.softcap, true, true)
						for d := range want {
							if math.Float32bits(og[i*H+d]) != math.Float32bits(want[d]) {
								t.Fatalf("L %d %+v: query %d of a group: o[%d] = %v, attendRowGGML %v", L, c, i, d, og[i*H+d], want[d])
							}
						}
					}
				}
				ran++
			}
		}
	}
	if ran == 0 {
		t.Fatal("no case ran")
	}
}

// BenchmarkAttendGGMLF16: one KV head's decode attention in llama.cpp's
// order over a float16 cache (Qwen2.5-0.5B's: 7 query heads of 64 a KV
// head) at L positions: "decoded" widens the keys and values and
// transposes the values each call, then attendRowGGML (the path before
// bw70); "direct" reads the float16 rows as they are (attendRowGGMLF16),
// "group" all 7 queries' scores over each key row at once
// (attendGroupGGMLF16).
//
//	go test -run '^$' -bench AttendGGMLF16 ./plugins/native
func BenchmarkAttendGGMLF16(b *testing.B) {
	if !ggmlF16Rows {
		b.Skip("no AVX-512/F16C")
	}
	const H, group = 64, 7
	rng := rand.New(rand.NewPCG(70, 2))
	for _, L := range []int{64, 256, 1024} {
		K16, V16 := make([]graph.F16, L*H), make([]graph.F16, L*H)
		for i := range K16 {
			K16[i] = graph.F16FromFloat32(float32(rng.NormFloat64()))
			V16[i] = graph.F16FromFloat32(float32(rng.NormFloat64()))
		}
		q := make([]float32, group*H)
		for i := range q {
			q[i] = float32(rng.NormFloat64())
		}
		f16RoundAll(q)
		o := make([]float32, group*H)
		sc, e, acc := make([]float32, L), make([]float32, L), make([]float32, 64*64)
		K, V := make([]float32, L*H), make([]float32, L*H)
		var gv ggmlValues
		var gc gqaCache
		b.Run(fmt.Sprintf("decoded_L%d", L), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				gc.decode(K, K16, 0, L, H)
				gc.decode(V, V16, 0, L, H)
				gv.set(V, H, L, true)
				for h := 0; h < group; h++ {
					attendRowGGML(q[h*H:(h+1)*H], K, &gv, sc, e, o[h*H:(h+1)*H], 0, 0.125, 0, true, true)
				}
			}
		})
		b.Run(fmt.Sprintf("group_L%d", L), func(b *testing.B) {
			scg := make([]float32, group*L)
			for i := 0; i < b.N; i++ {
				attendGroupGGMLF16(q, K16, V16, scg, e, acc, o, 0, 0.125, 0)
			}
		})
		b.Run(fmt.Sprintf("direct_L%d", L), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for h := 0; h < group; h++ {
					attendRowGGMLF16(q[h*H:(h+1)*H], K16, V16, sc, e, acc, o[h*H:(h+1)*H], 0, 0.125, 0)
				}
			}
		})
	}
}

// TestGGMLWeightsAsm: the softmax's sum (ggmlExpSum) and its scaling to
// float16 weights (ggmlScaleF16) give the bits of ggmlWeights' Go loops
// (groups of sixteen reduced by reduce16 and added in float64; each
// weight times inv, then f16Round) for every length up to 100.
func TestGGMLWeightsAsm(t *testing.T) {
	if !ggmlF16Rows {
		t.Skip("no AVX-512/F16C")
	}
	rng := rand.New(rand.NewPCG(70, 4))
	for n := 0; n <= 100; n++ {
		e := make([]float32, n+5)
		for i := range e {
			e[i] = float32(rng.ExpFloat64())
		}
		want := 0.0
		var tt [16]float32
		for g := 0; g < n; g += 16 {
			clear(tt[:])
			copy(tt[:], e[g:min(g+16, n)])
			want += float64(reduce16(&tt))
		}
		got, ok := ggmlExpSum(e[:n])
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n %d: sum %v (%v), want %v", n, got, ok, want)
		}
		inv := float32(1 / want)
		if n == 0 {
			inv = 0.37
		}
		w := append([]float32(nil), e...)
		for j := 0; j < n; j++ {
			w[j] = f16Round(w[j] * inv)
		}
		if !ggmlScaleF16(e[:n], inv) {
			t.Fatal("ggmlScaleF16 declined")
		}
		for j := range w {
			if math.Float32bits(e[j]) != math.Float32bits(w[j]) {
				t.Fatalf("n %d: e[%d] = %v, want %v", n, j, e[j], w[j])
			}
		}
	}
}
