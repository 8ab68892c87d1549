package native

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// sameAct fails unless a and b hold the same bits in every field.
func sameAct(t testing.TB, name string, a, b *ggml.Act) {
	t.Helper()
	if a.Block != b.Block || a.K != b.K {
		t.Fatalf("%s: block/K %d/%d, want %d/%d", name, a.Block, a.K, b.Block, b.K)
	}
	eqI := func(field string, x, y []int32) {
		if len(x) != len(y) {
			t.Fatalf("%s: len(%s) %d, want %d", name, field, len(x), len(y))
		}
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("%s: %s[%d] = %d, want %d", name, field, i, x[i], y[i])
			}
		}
	}
	eqF := func(field string, x, y []float32) {
		if len(x) != len(y) {
			t.Fatalf("%s: len(%s) %d, want %d", name, field, len(x), len(y))
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("%s: %s[%d] = %v (%#x), want %v (%#x)", name, field, i, x[i], math.Float32bits(x[i]), y[i], math.Float32bits(y[i]))
			}
		}
	}
	if len(a.Q) != len(b.Q) {
		t.Fatalf("%s: len(Q) %d, want %d", name, len(a.Q), len(b.Q))
	}
	for i := range a.Q {
		if a.Q[i] != b.Q[i] {
			t.Fatalf("%s: Q[%d] = %d, want %d", name, i, a.Q[i], b.Q[i])
		}
	}
	eqF("D", a.D, b.D)
	eqI("Sum", a.Sum, b.Sum)
	eqI("Lanes", a.Lanes, b.Lanes)
	if a.Block == 32 {
		eqF("SumD", a.SumD, b.SumD)
	} else {
		eqI("Sum32", a.Sum32, b.Sum32)
	}
}

// actSpecial fills x with values that test the rule's corners: ties
// (a block whose largest |x| is 127 has the multiplier 1, so x.5 values
// are exact halves), NaN and ±Inf, all-zero and signed-zero blocks,
// subnormals, the largest floats, and random magnitudes.
func actSpecial(rng *rand.Rand, x []float32, block int) {
	for b := 0; b < len(x)/block; b++ {
		xs := x[b*block : (b+1)*block]
		switch rng.IntN(10) {
		case 0:
			for i := range xs {
				xs[i] = float32(rng.IntN(255)-127) + 0.5
			}
			xs[rng.IntN(block)] = 127
		case 1:
			clear(xs)
			if rng.IntN(2) == 0 {
				xs[rng.IntN(block)] = float32(math.Copysign(0, -1))
			}
		case 2:
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			xs[rng.IntN(block)] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}[rng.IntN(3)]
		case 3:
			for i := range xs {
				xs[i] = math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormals
			}
		case 4:
			for i := range xs {
				xs[i] = float32(rng.NormFloat64()) * math.MaxFloat32 / 4
			}
		default:
			s := float32(math.Pow(10, rng.Float64()*12-6))
			for i := range xs {
				xs[i] = float32(rng.NormFloat64()) * s
			}
		}
	}
}

// TestQuantizeGGMLActSameBits: the assembly quantizer gives every field
// of ggml.Act the bits a.Quantize gives, for blocks of 32 and 256, on
// values at the rule's corners.
func TestQuantizeGGMLActSameBits(t *testing.T) {
	if !quantActAsm {
		t.Skip("no assembly quantizer here (amd64 with AVX-512 VNNI and BW)")
	}
	rng := rand.New(rand.NewPCG(8, 30))
	for _, block := range []int{32, 256} {
		for _, k := range []int{block, 3 * block, 2048} {
			for _, m := range []int{1, 2, 5} {
				for it := 0; it < 20; it++ {
					x := make([]float32, m*k)
					actSpecial(rng, x, block)
					var got, want ggml.Act
					quantizeGGMLAct(&got, x, m, k, block)
					want.Quantize(x, m, k, block)
					sameAct(t, fmt.Sprintf("block%d/k%d/m%d/%d", block, k, m, it), &got, &want)
				}
			}
		}
	}
}

// FuzzQuantizeGGMLAct: any float32 bits quantize to a.Quantize's bits.
func FuzzQuantizeGGMLAct(f *testing.F) {
	if !quantActAsm {
		f.Skip("no assembly quantizer here")
	}
	seed := make([]byte, 4*256)
	for i := 0; i < 256; i++ {
		binary.LittleEndian.PutUint32(seed[4*i:], math.Float32bits(float32(i)-127.5))
	}
	f.Add(seed, false)
	f.Add(seed[:128], true)
	f.Fuzz(func(t *testing.T, data []byte, k256 bool) {
		block := 32
		if k256 {
			block = 256
		}
		n := len(data) / 4 / block * block
		if n == 0 {
			return
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		var got, want ggml.Act
		quantizeGGMLAct(&got, x, n/block, block, block)
		want.Quantize(x, n/block, block, block)
		sameAct(t, "fuzz", &got, &want)
	})
}

// BenchmarkQuantizeGGMLAct: a 128-row prompt's activations (K 896 in
// blocks of 32, K 2048 in blocks of 256), the assembly against a.Quantize.
func BenchmarkQuantizeGGMLAct(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range [][2]int{{896, 32}, {2048, 256}} {
		k, block := c[0], c[1]
		x := make([]float32, 128*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for _, path := range []string{"asm", "go"} {
			b.Run(fmt.Sprintf("k%d/block%d/%s", k, block, path), func(b *testing.B) {
				var a ggml.Act
				best := cpuTime() << 1
				for b.Loop() {
					t0 := cpuTime()
					if path == "asm" {
						quantizeGGMLAct(&a, x, 128, k, block)
					} else {
						a.Quantize(x, 128, k, block)
					}
					best = min(best, cpuTime()-t0)
				}
				b.ReportMetric(float64(best.Nanoseconds()), "cpu-ns/op")
			})
		}
	}
}
