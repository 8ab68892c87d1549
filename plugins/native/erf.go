package native

import "math"

// Erf in float32 without float64 math.Erf per element: for |x| < 1 the
// odd Taylor series of erf to the x^23 term (relative error under 1e-7
// there), for 1 ≤ |x| < 4 Abramowitz and Stegun's formula 7.1.26,
// 1 − t·P(t)·exp(−x²) with t = 1/(1 + p·|x|) (absolute error under
// 1.5e-7, a few float32 ulps of values near 1), whose exp runs through
// the vector exp (vexp) a block at a time; ±1 beyond (erfc(4) is below
// half an ulp of 1). NaN stays NaN.

// erfTaylor are 2/√π·(−1)^n/(n!·(2n+1)), n = 0…11.
var erfTaylor = func() [12]float64 {
	var c [12]float64
	f := 2 / math.SqrtPi
	for n := 0; n < 12; n++ {
		c[n] = f / float64(2*n+1)
		f *= -1 / float64(n+1)
	}
	return c
}()

// Abramowitz and Stegun 7.1.26.
const (
	erfP  = 0.3275911
	erfA1 = 0.254829592
	erfA2 = -0.284496736
	erfA3 = 1.421413741
	erfA4 = -1.453152027
	erfA5 = 1.061405429
)

// erfBlock is the block verf works in (its exp arguments on the stack).
const erfBlock = 256

// verf is y = erf(x) (unaryFn).
func verf(y, x []float32) {
	x = x[:len(y)]
	var e [erfBlock]float32
	for len(x) > 0 {
		n := min(len(x), erfBlock)
		xs, ys, es := x[:n], y[:n], e[:n]
		for i, v := range xs {
			es[i] = -v * v
		}
		vexp(es, es)
		for i, v := range xs {
			ys[i] = erf1(v, es[i])
		}
		x, y = x[n:], y[n:]
	}
}

// erf1 is erf(v) given ex = exp(−v²).
func erf1(v, ex float32) float32 {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a < 1:
		z := float64(v) * float64(v)
		s := erfTaylor[11]
		for k := 10; k >= 0; k-- {
			s = s*z + erfTaylor[k]
		}
		return float32(float64(v) * s)
	case a < 4:
		t := 1 / (1 + erfP*float64(a))
		p := t * (erfA1 + t*(erfA2+t*(erfA3+t*(erfA4+t*erfA5))))
		r := float32(1 - p*float64(ex))
		if v < 0 {
			return -r
		}
		return r
	case a >= 4:
		if v < 0 {
			return -1
		}
		return 1
	}
	return v // NaN
}

// vgelu is y = x·(1 + erf(x/√2))/2 (com.microsoft Gelu), the erf through
// verf a block at a time.
func vgelu(y, x []float32) {
	x = x[:len(y)]
	var e [erfBlock]float32
	for len(x) > 0 {
		n := min(len(x), erfBlock)
		xs, ys, es := x[:n], y[:n], e[:n]
		for i, v := range xs {
			es[i] = v * math.Sqrt2 / 2
		}
		verf(es, es)
		for i, v := range xs {
			ys[i] = 0.5 * v * (1 + es[i])
		}
		x, y = x[n:], y[n:]
	}
}

// vfastGelu is y = x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2
// (com.microsoft FastGelu without bias), the tanh through vtanh.
func vfastGelu(y, x []float32) {
	x = x[:len(y)]
	var e [erfBlock]float32
	const c = 0.7978845608028654 // √(2/π)
	for len(x) > 0 {
		n := min(len(x), erfBlock)
		xs, ys, es := x[:n], y[:n], e[:n]
		for i, v := range xs {
			es[i] = c * (v + 0.044715*v*v*v)
		}
		vtanh(es, es)
		for i, v := range xs {
			ys[i] = 0.5 * v * (1 + es[i])
		}
		x, y = x[n:], y[n:]
	}
}
