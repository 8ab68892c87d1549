package native

import (
	"math"
	"os"
	"testing"
)

// ulpDiff is |got − want| in units of the last place of want as a
// float32 (subnormal spacing below the normal range); NaN matches NaN
// only, infinities themselves only.
func ulpDiff(got float32, want float64) float64 {
	if math.IsNaN(want) {
		if got != got {
			return 0
		}
		return math.Inf(1)
	}
	w32 := float32(want)
	if math.IsInf(float64(w32), 0) || math.IsInf(float64(got), 0) {
		if float64(got) == float64(w32) {
			return 0
		}
		// want just over the float32 range rounds to Inf: a finite
		// result at MaxFloat32 is one ulp away
		if math.Abs(float64(got)) == math.MaxFloat32 && math.Abs(want) < math.MaxFloat32*(1+1.0/(1<<24)) {
			return 1
		}
		return math.Inf(1)
	}
	a := math.Abs(want)
	var ulp float64
	if a < 0x1p-126 {
		ulp = 0x1p-149
	} else {
		_, e := math.Frexp(a) // a = f·2^e, f in [½, 1)
		ulp = math.Ldexp(1, e-24)
	}
	return math.Abs(float64(got)-want) / ulp
}

type vmFunc struct {
	name string
	vec  func(y, x []float32)
	ref  func(float64) float64
	ulps float64 // the most allowed
	// slack is an absolute error allowed on top (SiLU: the sigmoid it
	// multiplies by is subnormal below x ≈ −87.3, one subnormal step
	// there is many ulp of x·sigmoid(x))
	slack func(x float64) float64
}

func vmFuncs() []vmFunc {
	sig := func(x float64) float64 {
		if x >= 0 {
			return 1 / (1 + math.Exp(-x))
		}
		e := math.Exp(x)
		return e / (1 + e)
	}
	return []vmFunc{
		{"exp", vexp, math.Exp, 2, nil},
		{"sigmoid", vsigmoid, sig, 3, nil},
		{"silu", vsilu, func(x float64) float64 { return x * sig(x) }, 4,
			func(x float64) float64 { return math.Abs(x) * 0x1p-148 }},
		{"tanh", vtanh, math.Tanh, 3, nil},
	}
}

// vmSamples is a sweep of float32 bit patterns over the whole range
// (every stride-th, both signs) and the special values.
func vmSamples(stride uint64) []float32 {
	var xs []float32
	for b := uint64(0); b < 1<<32; b += stride {
		xs = append(xs, math.Float32frombits(uint32(b)))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		88.72283, 88.72284, 88.8, 89, -87.33654, -87.33655, -103.97, -103.98, -104, -105,
		0.625, -0.625, 0.62499994, 9.01, -9.01, 1e-20, -1e-20, 1e-40, -1e-40)
	return xs
}

func checkVM(t *testing.T, f vmFunc, name string, vec func(y, x []float32), xs []float32) {
	y := make([]float32, len(xs))
	// odd offsets and lengths: every tail length runs
	for off := 0; off < 3; off++ {
		vec(y[off:], xs[off:])
	}
	worst, at, bad := 0.0, float32(0), 0
	for i, x := range xs {
		want := f.ref(float64(x))
		d := ulpDiff(y[i], want)
		if f.slack != nil && math.Abs(float64(y[i])-want) <= f.slack(float64(x)) {
			d = 0
		}
		if d > worst {
			worst, at = d, x
		}
		if d > f.ulps {
			t.Errorf("%s %s(%g [%#08x]) = %g, want %g (%.1f ulp)", name, f.name, x, math.Float32bits(x), y[i], f.ref(float64(x)), d)
			if bad++; bad == 10 {
				break
			}
		}
	}
	t.Logf("%s %s: worst %.2f ulp at %g over %d values", name, f.name, worst, at, len(xs))
}

// Every vector math path (Go, and AVX2 and AVX-512 where the CPU has
// them) within a few ulp of math's float64 result over the float32 range.
func TestVMathAccuracy(t *testing.T) {
	// about a million values; SWITCHYARD_VMATH_FULL=1: 44 million
	// (2.5 minutes on the development VM)
	stride := uint64(4099)
	if os.Getenv("SWITCHYARD_VMATH_FULL") == "1" {
		stride = 97
	} else if testing.Short() {
		stride = 65537
	}
	xs := vmSamples(stride)
	for _, f := range vmFuncs() {
		for _, p := range vmPaths(f.name) {
			checkVM(t, f, p.name, p.fn, xs)
		}
	}
}

func BenchmarkVMath(b *testing.B) {
	x := make([]float32, 4096)
	for i := range x {
		x[i] = float32(i%200)/10 - 10
	}
	y := make([]float32, len(x))
	for _, f := range vmFuncs() {
		for _, p := range vmPaths(f.name) {
			b.Run(f.name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(4 * len(x)))
				for i := 0; i < b.N; i++ {
					p.fn(y, x)
				}
			})
		}
	}
	b.Run("sigmoid/float64", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for i := 0; i < b.N; i++ {
			for j, v := range x {
				y[j] = sigmoid(v)
			}
		}
	})
}
