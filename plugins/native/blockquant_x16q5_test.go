package native

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// x16bType is one x16 type's functions (x16a's registry shape).
type x16bType struct {
	size   func(nb int) int
	repack func(dst, raw []byte, rb, nb int)
	gemv   func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32)
	gemvM  func(packed []byte, nb, ng int, a *ggml.Act, r, m int, y []float32, ldy int)
}

var x16bTypes = map[ggml.Type]x16bType{
	ggml.Q5_0: {x16q5Size, x16q5Repack, x16q5Gemv, x16q5GemvM},
	ggml.Q6_K: {x16q6kSize, x16q6kRepack, x16q6kGemv, x16q6kGemvM},
}

// x16bPack repacks the first ng·16 rows of raw (N rows of rb bytes).
func x16bPack(t ggml.Type, raw []byte, rb, nb, ng int) []byte {
	k := x16bTypes[t]
	size := k.size(nb)
	p := make([]byte, ng*size)
	for g := 0; g < ng; g++ {
		k.repack(p[g*size:(g+1)*size], raw[g*16*rb:], rb, nb)
	}
	return p
}

// TestX16bMatchesDot: the x16 kernels of Q5_0 and Q6_K (assembly where the
// CPU has it, and the Go fallback) give core/ggml's Dot to the bit for
// every row, 1 to 4 activation rows, with odd and even block counts,
// infinite and NaN weight scales and a NaN activation block.
func TestX16bMatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 2))
	for _, c := range []struct {
		t  ggml.Type
		ks []int
	}{{ggml.Q5_0, []int{32, 160, 896, 4864}}, {ggml.Q6_K, []int{256, 768, 2048, 4864}}} {
		for _, K := range c.ks {
			rb, _ := c.t.RowBytes(K)
			nb := K / c.t.BlockSize()
			ng := 3
			N := 16 * ng
			raw := randomGGML(rng, c.t, N, K)
			// special scales: +Inf, NaN, 0 in a few blocks
			dOff := 0
			if c.t == ggml.Q6_K {
				dOff = 208
			}
			bs := c.t.BlockBytes()
			for i, h := range []uint16{0x7C00, 0x7E00, 0, 0xFC00} {
				row, b := rng.IntN(N), rng.IntN(nb)
				_ = i
				binary.LittleEndian.PutUint16(raw[row*rb+b*bs+dOff:], h)
			}
			packed := x16bPack(c.t, raw, rb, nb, ng)
			const M = 4
			x := make([]float32, M*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			x[2*K+K/2] = float32(math.NaN()) // row 2 has a NaN block
			var a ggml.Act
			a.Quantize(x, M, K, ggml.ActBlock(c.t))
			for _, goOnly := range []bool{true, false} {
				x16bForceGo = goOnly
				for m := 1; m <= M; m++ {
					for r0 := 0; r0+m <= M; r0++ {
						ldy := N + 5
						y := make([]float32, m*ldy)
						x16bTypes[c.t].gemvM(packed, nb, ng, &a, r0, m, y, ldy)
						for q := 0; q < m; q++ {
							for j := 0; j < N; j++ {
								want := ggml.Dot(c.t, raw[j*rb:(j+1)*rb], &a, r0+q)
								g := y[q*ldy+j]
								if math.Float32bits(g) != math.Float32bits(want) && !(g != g && want != want) {
									t.Fatalf("%s K %d m %d act row %d out %d (go %v): %v, Dot %v", c.t, K, m, r0+q, j, goOnly, g, want)
								}
							}
						}
					}
				}
				y := make([]float32, N)
				x16bTypes[c.t].gemv(packed, nb, ng, &a, 1, y)
				for j := 0; j < N; j++ {
					if want := ggml.Dot(c.t, raw[j*rb:(j+1)*rb], &a, 1); math.Float32bits(y[j]) != math.Float32bits(want) {
						t.Fatalf("%s K %d gemv out %d: %v, Dot %v", c.t, K, j, y[j], want)
					}
				}
			}
			x16bForceGo = false
		}
	}
}

// BenchmarkX16b: decode's product (one activation row, one thread) of a
// Q5_0 or Q6_K weight through the x16 kernel against the kernel the
// ggml layout takes now (dot4n over all rows, as runGGMLInt's task
// does); bytes/s counts the weight's bytes. 4864 rows stay mostly in the
// caches; the 64 MiB ones stream from memory. Q8_0 and Q4_K's current
// kernels for reference.
//
//	go test -run '^$' -bench X16b ./plugins/native
func BenchmarkX16b(b *testing.B) {
	rng := rand.New(rand.NewPCG(16, 16))
	for _, c := range []struct {
		t ggml.Type
		K int
	}{{ggml.Q5_0, 896}, {ggml.Q5_0, 4864}, {ggml.Q6_K, 2048}, {ggml.Q6_K, 4864}, {ggml.Q8_0, 896}, {ggml.Q4_K, 2048}} {
		rb, _ := c.t.RowBytes(c.K)
		nb := c.K / c.t.BlockSize()
		for _, rows := range []int{4864, (64 << 20) / rb / 16 * 16} {
			raw := randomGGML(rng, c.t, rows, c.K)
			x := make([]float32, c.K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			var a ggml.Act
			a.Quantize(x, 1, c.K, ggml.ActBlock(c.t))
			y := make([]float32, rows)
			w := &bqWeights{n: rows, k: c.K, typ: c.t, raw: raw, rb: rb}
			k := bqkKernelFor(c.t)
			b.Run(fmt.Sprintf("%s_%dx%d_old_%s", c.t, rows, c.K, k.name), func(b *testing.B) {
				if k.dot4n == nil {
					b.Skip("no dot4n kernel here")
				}
				streamRun(b, int64(len(raw)), func() { k.dot4n(w, 0, rows/4, &a, 0, y) })
			})
			xk, ok := x16bTypes[c.t]
			if !ok {
				continue
			}
			packed := x16bPack(c.t, raw, rb, nb, rows/16)
			b.Run(fmt.Sprintf("%s_%dx%d_x16", c.t, rows, c.K), func(b *testing.B) {
				streamRun(b, int64(len(raw)), func() { xk.gemv(packed, nb, rows/16, &a, 0, y) })
			})
		}
	}
}

// BenchmarkX16bBatch: m activation rows (serve's batched decode) times
// a Q5_0 or Q6_K weight of Qwen2.5-0.5B's shapes, one thread: the raw
// layout's four-row kernel for each activation row (runGGMLInt's m > 1
// loop), the x16 gemv once a row over 32 KiB chunks of groups (x16a's
// x16Rows), and gemvM (two rows a call sharing the unpacked weights).
//
//	go test -run '^$' -bench X16bBatch ./plugins/native
func BenchmarkX16bBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(16, 17))
	for _, c := range []struct {
		t     ggml.Type
		rows  int
		K     int
		label string
	}{{ggml.Q5_0, 896, 896, "attn"}, {ggml.Q5_0, 4864, 896, "ffn_up"}, {ggml.Q6_K, 896, 4864, "ffn_down"}} {
		rb, _ := c.t.RowBytes(c.K)
		nb := c.K / c.t.BlockSize()
		raw := randomGGML(rng, c.t, c.rows, c.K)
		packed := x16bPack(c.t, raw, rb, nb, c.rows/16)
		w := &bqWeights{n: c.rows, k: c.K, typ: c.t, raw: raw, rb: rb}
		k := bqkKernelFor(c.t)
		xk := x16bTypes[c.t]
		gs := xk.size(nb)
		step := max(1, (32<<10)/gs)
		for _, m := range []int{2, 4} {
			x := make([]float32, m*c.K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			var a ggml.Act
			a.Quantize(x, m, c.K, ggml.ActBlock(c.t))
			y := make([]float32, m*c.rows)
			name := fmt.Sprintf("%s_%s_%dx%d_m%d", c.t, c.label, c.rows, c.K, m)
			b.Run(name+"_old", func(b *testing.B) {
				streamRun(b, int64(len(raw)), func() {
					for n := 0; n < c.rows; n += 4 {
						for r := 0; r < m; r++ {
							k.dot4(w, n, &a, r, y[r*c.rows+n:r*c.rows+n+4])
						}
					}
				})
			})
			b.Run(name+"_x16rows", func(b *testing.B) {
				streamRun(b, int64(len(raw)), func() {
					for g := 0; g < c.rows/16; g += step {
						ng := min(step, c.rows/16-g)
						for r := 0; r < m; r++ {
							xk.gemv(packed[g*gs:(g+ng)*gs], nb, ng, &a, r, y[r*c.rows+16*g:])
						}
					}
				})
			})
			b.Run(name+"_x16M", func(b *testing.B) {
				streamRun(b, int64(len(raw)), func() {
					for g := 0; g < c.rows/16; g += step {
						ng := min(step, c.rows/16-g)
						xk.gemvM(packed[g*gs:(g+ng)*gs], nb, ng, &a, 0, m, y[16*g:], c.rows)
					}
				})
			})
		}
	}
}

// BenchmarkX16bRepack: the load-time repacking (bytes/s of raw weight).
func BenchmarkX16bRepack(b *testing.B) {
	rng := rand.New(rand.NewPCG(16, 18))
	for _, c := range []struct {
		t ggml.Type
		K int
	}{{ggml.Q5_0, 896}, {ggml.Q6_K, 2048}} {
		rb, _ := c.t.RowBytes(c.K)
		nb := c.K / c.t.BlockSize()
		const rows = 1024
		raw := randomGGML(rng, c.t, rows, c.K)
		b.Run(c.t.String(), func(b *testing.B) {
			streamRun(b, int64(len(raw)), func() { x16bPack(c.t, raw, rb, nb, rows/16) })
		})
	}
}
