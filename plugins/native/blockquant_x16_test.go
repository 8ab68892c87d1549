package native

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// x16SpecialScales sets some blocks' float16 scale (at offset 0 of the
// block: Q4_0, Q5_0, Q8_0) to Inf, −Inf, NaN, 0 and a subnormal.
func x16SpecialScales(rng *rand.Rand, t ggml.Type, raw []byte) {
	if t != ggml.Q4_0 && t != ggml.Q5_0 && t != ggml.Q8_0 {
		return
	}
	bs := t.BlockBytes()
	special := []uint16{0x7c00, 0xfc00, 0x7e00, 0, 0x0001, 0x8003}
	for i := 0; i < len(raw)/bs/16; i++ {
		b := rng.IntN(len(raw) / bs)
		binary.LittleEndian.PutUint16(raw[b*bs:], special[rng.IntN(len(special))])
	}
}

// x16Acts is m random activation rows of K; with bad, one block of a row
// holds an infinity (its scale NaN).
func x16Acts(rng *rand.Rand, m, K int, bad bool) []float32 {
	x := make([]float32, m*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	if bad {
		x[rng.IntN(len(x))] = float32(math.Inf(1))
	}
	return x
}

// x16Same: bit-identical, or both NaN.
func x16Same(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// TestX16Q40GoMatchesDot: Q4_0 packed in the x16 layout, computed by the
// Go statement of the kernel's steps, gives core/ggml's Dot bits for
// every row (any GOARCH: the layout's check).
func TestX16Q40GoMatchesDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	for _, K := range []int{32, 96, 896} {
		const n = 48
		raw := randomGGML(rng, ggml.Q4_0, n, K)
		x16SpecialScales(rng, ggml.Q4_0, raw)
		rb, nb := len(raw)/n, K/32
		packed := make([]byte, n/16*x16Q40Size(nb))
		for g := 0; g < n/16; g++ {
			x16Q40Repack(packed[g*x16Q40Size(nb):], raw[16*g*rb:], rb, nb)
		}
		var a ggml.Act
		a.Quantize(x16Acts(rng, 2, K, K == 96), 2, K, 32)
		for r := 0; r < 2; r++ {
			y := make([]float32, n)
			x16Q40GemvGo(packed, nb, n/16, &a, r, y)
			for j := 0; j < n; j++ {
				if want := ggml.Dot(ggml.Q4_0, raw[j*rb:(j+1)*rb], &a, r); !x16Same(y[j], want) {
					t.Fatalf("K %d row %d act %d: got %v, Dot %v", K, j, r, y[j], want)
				}
			}
		}
	}
}

// TestX16KindsMatchDot: every registered x16 kind (this CPU's kernels)
// repacks random rows (special scales, an activation block with an
// infinity) and its gemv gives core/ggml's Dot bits for every row, for
// one and several groups a call and each activation row.
func TestX16KindsMatchDot(t *testing.T) {
	if len(x16Kinds) == 0 {
		t.Skip("no x16 kinds on this CPU")
	}
	rng := rand.New(rand.NewPCG(16, 2))
	for ty, kind := range x16Kinds {
		be := ty.BlockSize()
		for _, K := range []int{be, 3 * be, 2048} {
			t.Run(fmt.Sprintf("%s_K%d", ty, K), func(t *testing.T) {
				const n, m = 64, 5
				raw := randomGGML(rng, ty, n, K)
				x16SpecialScales(rng, ty, raw)
				rb, nb, gs := len(raw)/n, K/be, kind.size(K/be)
				packed := make([]byte, n/16*gs)
				for g := 0; g < n/16; g++ {
					kind.repack(packed[g*gs:(g+1)*gs], raw[16*g*rb:16*(g+1)*rb], rb, nb)
				}
				var a ggml.Act
				a.Quantize(x16Acts(rng, m, K, K > be), m, K, ggml.ActBlock(ty))
				for r := 0; r < m; r++ {
					y := make([]float32, n)
					kind.gemv(packed, nb, n/16, &a, r, y)              // all groups at once
					kind.gemv(packed[gs:2*gs], nb, 1, &a, r, y[16:32]) // one again
					for j := 0; j < n; j++ {
						if want := ggml.Dot(ty, raw[j*rb:(j+1)*rb], &a, r); !x16Same(y[j], want) {
							t.Fatalf("row %d act %d: got %v, Dot %v", j, r, y[j], want)
						}
					}
				}
				if kind.gemm == nil {
					return
				}
				// nr activation rows from row r0, outputs ldy apart
				for nr := 1; nr <= min(m, x16GemmRows); nr++ {
					r0, ldy := m-nr, n+5
					y := make([]float32, nr*ldy)
					kind.gemm(packed, nb, n/16, &a, r0, nr, y, ldy)
					for k := 0; k < nr; k++ {
						for j := 0; j < n; j++ {
							if want := ggml.Dot(ty, raw[j*rb:(j+1)*rb], &a, r0+k); !x16Same(y[k*ldy+j], want) {
								t.Fatalf("gemm of %d rows: row %d act %d: got %v, Dot %v", nr, j, r0+k, y[k*ldy+j], want)
							}
						}
					}
				}
			})
		}
	}
}

// TestX16WeightsRun: a typed weight on the integer path with the x16
// layout (N not a multiple of 16: the tail rows take the raw kernels),
// one to five activation rows, one and two threads, gives core/ggml's
// Dot bits; and with x16 off the same.
func TestX16WeightsRun(t *testing.T) {
	if len(x16Kinds) == 0 || !x16Usable() {
		t.Skip("no x16 kinds on this CPU")
	}
	rng := rand.New(rand.NewPCG(16, 3))
	for ty := range x16Kinds {
		be := ty.BlockSize()
		K := 4 * be
		if be == 32 {
			K = 896
		}
		for _, n := range []int{16, 37, 300} {
			for _, threads := range []int{1, 2} {
				p := newPool(threads)
				for _, m := range []int{1, 2, 3, 4, 5, 9} {
					raw := randomGGML(rng, ty, n, K)
					rb := len(raw) / n
					mk := func(on bool) *bqWeights {
						defer func(old bool) { x16On = old }(x16On)
						x16On = on
						w := &bqWeights{n: n, k: K, typ: ty, raw: raw, rb: rb}
						w.gk = bqkKernelFor(ty)
						w.acts.New = func() any { return new(ggml.Act) }
						w.initX16()
						return w
					}
					w, w0 := mk(true), mk(false)
					if w.x16 == nil || w.x16.n != n&^15 || w0.x16 != nil {
						t.Fatalf("%s n %d: x16 not as asked", ty, n)
					}
					x := x16Acts(rng, m, K, false)
					var a ggml.Act
					a.Quantize(x, m, K, ggml.ActBlock(ty))
					y, y0 := make([]float32, m*n), make([]float32, m*n)
					w.run(p, x, y, m)
					w0.run(p, x, y0, m)
					for r := 0; r < m; r++ {
						for j := 0; j < n; j++ {
							want := ggml.Dot(ty, raw[j*rb:(j+1)*rb], &a, r)
							if !x16Same(y[r*n+j], want) || !x16Same(y0[r*n+j], want) {
								t.Fatalf("%s n %d m %d t %d: row %d act %d: x16 %v, raw %v, Dot %v", ty, n, m, threads, j, r, y[r*n+j], y0[r*n+j], want)
							}
						}
					}
				}
				p.close()
			}
		}
	}
}

// TestX16ReleaseKeepsBytes: releasing the raw rows of a weight mapped
// from a file (as formats/llama maps a GGUF) and of a heap copy leaves
// their bytes readable and unchanged, and the x16 weight's products still
// give Dot's bits.
func TestX16ReleaseKeepsBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 5))
	const n, K = 300, 4096
	raw := randomGGML(rng, ggml.Q4_0, n, K)
	path := filepath.Join(t.TempDir(), "w.bin")
	if err := os.WriteFile(path, append(make([]byte, 100), raw...), 0o600); err != nil {
		t.Fatal(err)
	}
	mapped, err := regular.Map(path, 0)
	if err != nil {
		t.Skipf("no mapping: %v", err)
	}
	defer regular.Unmap(mapped)
	for _, b := range [][]byte{mapped[100:], append([]byte(nil), raw...)} {
		x16Release(b)
		if !bytes.Equal(b, raw) {
			t.Fatal("the bytes changed")
		}
	}
	if len(x16Kinds) == 0 || !x16Usable() {
		return
	}
	rb := len(raw) / n
	w := &bqWeights{n: n, k: K, typ: ggml.Q4_0, raw: mapped[100:], rb: rb}
	w.gk = bqkKernelFor(ggml.Q4_0)
	w.acts.New = func() any { return new(ggml.Act) }
	w.initX16()
	x := x16Acts(rng, 5, K, false)
	var a ggml.Act
	a.Quantize(x, 5, K, 32)
	y := make([]float32, 5*n)
	w.run(nil, x, y, 5)
	for r := 0; r < 5; r++ {
		for j := 0; j < n; j++ {
			if want := ggml.Dot(ggml.Q4_0, raw[j*rb:(j+1)*rb], &a, r); !x16Same(y[r*n+j], want) {
				t.Fatalf("row %d act %d: got %v, Dot %v", j, r, y[r*n+j], want)
			}
		}
	}
}
