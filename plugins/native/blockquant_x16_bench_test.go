package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkX16: decode products (M = 1, one thread) of each x16 kind's
// type with the x16 layout (x16) and with the raw layout's kernels
// (raw), on a weight that stays in cache (4864×896, Qwen2.5-0.5B's MLP:
// the kernels' compute rate) and on 64 MiB (the rate they stream from
// memory). Alternate the two in one run (-count) to compare.
//
//	go test -run '^$' -bench X16 -cpu 1 -count 5 ./plugins/native
func BenchmarkX16(b *testing.B) {
	if len(x16Kinds) == 0 || !x16Usable() {
		b.Skip("no x16 kinds on this CPU")
	}
	rng := rand.New(rand.NewPCG(16, 9))
	for ty := range x16Kinds {
		for _, c := range []struct {
			name string
			n, k int
		}{{"4864x896", 4864, 896}, {"64MiB", 0, 2048}} {
			rb, _ := ty.RowBytes(c.k)
			n := c.n
			if n == 0 {
				n = (64 << 20) / rb &^ 15
			}
			raw := randomGGML(rng, ty, n, c.k)
			x := x16Acts(rng, 1, c.k, false)
			y := make([]float32, n)
			for _, on := range []bool{false, true} {
				old := x16On
				x16On = on
				w := &bqWeights{n: n, k: c.k, typ: ty, raw: raw, rb: rb}
				w.gk = bqkKernelFor(ty)
				w.acts.New = func() any { return new(ggml.Act) }
				w.initX16()
				x16On = old
				name := map[bool]string{false: "raw", true: "x16"}[on]
				b.Run(fmt.Sprintf("%s_%s_%s", ty, c.name, name), func(b *testing.B) {
					streamRun(b, int64(n*rb), func() { w.run(nil, x, y, 1) })
				})
			}
		}
	}
}

// BenchmarkX16Repack: packing 64 MiB of Q4_0 rows into the x16 layout
// (load time), one thread.
func BenchmarkX16Repack(b *testing.B) {
	rng := rand.New(rand.NewPCG(16, 10))
	const k = 2048
	rb, _ := ggml.Q4_0.RowBytes(k)
	n := (64 << 20) / rb &^ 15
	raw := randomGGML(rng, ggml.Q4_0, n, k)
	nb, gs := k/32, x16Q40Size(k/32)
	for _, c := range []struct {
		name  string
		alloc func(int) []byte
	}{{"make", func(n int) []byte { return make([]byte, n) }}, {"x16Alloc", x16Alloc}} {
		b.Run(c.name, func(b *testing.B) {
			streamRun(b, int64(len(raw)), func() {
				dst := c.alloc(n / 16 * gs)
				for g := 0; g < n/16; g++ {
					x16Q40Repack(dst[g*gs:(g+1)*gs], raw[16*g*rb:16*(g+1)*rb], rb, nb)
				}
			})
		})
	}
}
