package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// streamRun runs f b.N times and reports, besides bytes/s of wall time,
// cpu-MB/s: the bytes over the CPU time the process took (on a machine
// other programs keep busy, the rate the kernel reaches while it runs).
func streamRun(b *testing.B, bytes int64, f func()) {
	b.SetBytes(bytes)
	c0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f()
	}
	b.StopTimer()
	if c := cpuTime() - c0; c > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/c.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkBlockQuantStream: decode products (M = 1) whose weights do not
// fit in cache (64 MiB or more, as a model's layers are), so that bytes/s
// is the rate at which a kernel streams weights from memory, beside a
// float32 dot product over as many bytes (the rate memory gives one
// thread now). The kernels are called directly, one thread.
//
//	GOMAXPROCS=1 go test -run ^$ -bench BlockQuantStream ./plugins/native
func BenchmarkBlockQuantStream(b *testing.B) {
	const size = 64 << 20
	rng := rand.New(rand.NewPCG(7, 7))
	b.Run("f32dot", func(b *testing.B) {
		x := make([]float32, size/8)
		y := make([]float32, size/8)
		for i := range x {
			x[i], y[i] = 1, 1
		}
		var s float32
		streamRun(b, size, func() { s += dot(x, y) })
		_ = s
	})
	const K = 2048
	x := make([]float32, K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, c := range [][2]int{{4, size}, {8, size}, {4, 16 << 10}, {8, 16 << 10}} {
		bits := c[0]
		N := c[1] * 8 / (bits * K)
		w := &bqWeights{n: N, k: K, bits: bits, block: 32, g: 1, s: make([]float32, N*K/32)}
		if bits == 4 {
			w.q4 = make([]uint8, N*K/2)
		} else {
			w.q8 = make([]int8, N*K)
		}
		w.ik = bqiKernelFor()
		w.acts.New = func() any { return new(bqAct) }
		y := make([]float32, N)
		b.Run(fmt.Sprintf("split%d_int8_%dKiB", bits, c[1]>>10), func(b *testing.B) {
			streamRun(b, int64(N*K*bits/8), func() { w.run(nil, x, y, 1) })
		})
	}
	for _, c := range []struct {
		ty   ggml.Type
		size int
	}{{ggml.Q4_0, size}, {ggml.Q8_0, size}, {ggml.Q5_0, size}, {ggml.Q4_K, size}, {ggml.Q6_K, size}, {ggml.Q4_0, 256 << 10}, {ggml.Q8_0, 256 << 10}, {ggml.Q4_K, 256 << 10}, {ggml.Q6_K, 256 << 10}} {
		ty := c.ty
		rb, _ := ty.RowBytes(K)
		N := c.size / rb
		raw := randomGGML(rng, ty, N, K)
		w := &bqWeights{n: N, k: K, typ: ty, raw: raw, rb: rb}
		y := make([]float32, N)
		for _, prec := range []string{"int8", "int8-1row", "float"} {
			b.Run(fmt.Sprintf("%s_%s_%dKiB", ty, prec, c.size>>10), func(b *testing.B) {
				if prec != "float" {
					w.gk = bqkKernelFor(ty)
					if prec == "int8-1row" {
						k := *w.gk
						k.dot4 = nil
						w.gk = &k
					}
					w.acts.New = func() any { return new(ggml.Act) }
				} else {
					w.gk = nil
				}
				streamRun(b, int64(N*rb), func() { w.run(nil, x, y, 1) })
			})
		}
	}
}
