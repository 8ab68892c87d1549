//go:generate go run ./internal/asmgenvm -out vmath_amd64.s -stubs vmath_stubs_amd64.go -pkg native

package native

import "math"

// Vectorised float32 transcendental functions: exp, sigmoid, SiLU
// (x·sigmoid(x)) and tanh over slices, in Go here and in AVX2 and
// AVX-512 assembly on amd64 (internal/asmgenvm), all on the same
// polynomials:
//
//   - exp(x): k = round(x·log2 e), r = x − k·ln 2 (ln 2 in two parts, so
//     r is exact to float32 rounding), e^r = 1 + r + r²·P(r) with P of
//     degree 4 fitted on [−0.36, 0.36] (Chebyshev nodes; relative error
//     1.3e-8 before rounding), then ·2^k in two factors (AVX-512:
//     VSCALEFPS), so that results in the subnormal range round once and
//     the overflow to +Inf happens where float32's does. x is first
//     clamped to [−104, 88.8] with NaN kept.
//   - sigmoid(x) = n/(1+e) with e = exp(−|x|) and n = 1 for x ≥ 0, e
//     otherwise: no cancellation on either side, a true division.
//   - SiLU(x) = x·sigmoid(x), rounded like the Mul of the graph it
//     stands for (−Inf·0 is NaN there and here).
//   - tanh(x): for |x| < 0.625, x + x³·Q(x²) with Q of degree 4 fitted
//     on that range (relative error 1.7e-8); above, ±(1−e)/(1+e) with
//     e = exp(−2|x|) ≤ 0.287, free of cancellation.
//
// TestVMathAccuracy checks every path against math's float64 functions
// over a sweep of the whole float32 range and the special values.

// vmath constants (also the layout of the assembly's table: see
// internal/asmgenvm, which holds the same numbers).
const (
	vmExpHi     = 88.8
	vmExpLo     = -104
	vmLog2e     = 1.44269504088896341
	vmLn2Hi     = float32(0.693145751953125) // few bits: k·ln2Hi is exact
	vmLn2Lo     = float32(1.42860682030941723212e-6)
	vmExpP0     = float32(0.5)
	vmExpP1     = float32(0.166665629)
	vmExpP2     = float32(0.0416665375)
	vmExpP3     = float32(0.00836553425)
	vmExpP4     = float32(0.00139291259)
	vmTanhQ0    = float32(-0.333333284)
	vmTanhQ1    = float32(0.133327693)
	vmTanhQ2    = float32(-0.0538509078)
	vmTanhQ3    = float32(0.0209971797)
	vmTanhQ4    = float32(-0.00609671418)
	vmTanhSmall = float32(0.625)
)

// vmExp1 is exp(x) in float32 by the vector kernels' method.
func vmExp1(x float32) float32 {
	if x != x {
		return x
	}
	if x < vmExpLo {
		x = vmExpLo
	} else if x > vmExpHi {
		x = vmExpHi
	}
	// k = round(x·log2 e), halves away from 0 (|r| ≤ ln2/2 either way)
	t := x * vmLog2e
	if t < 0 {
		t -= 0.5
	} else {
		t += 0.5
	}
	k := float32(int32(t))
	r := x - k*vmLn2Hi
	r -= k * vmLn2Lo
	p := (((vmExpP4*r+vmExpP3)*r+vmExpP2)*r+vmExpP1)*r + vmExpP0
	p = p*(r*r) + r + 1
	ki := int32(k)
	k1 := ki >> 1
	k2 := ki - k1
	p *= math.Float32frombits(uint32(k1+127) << 23)
	return p * math.Float32frombits(uint32(k2+127)<<23)
}

// vmSigmoid1 is 1/(1+exp(−x)) in float32 by the vector kernels' method.
func vmSigmoid1(x float32) float32 {
	b := math.Float32bits(x)
	e := vmExp1(math.Float32frombits(b | 1<<31)) // exp(−|x|)
	if b>>31 != 0 {
		return e / (1 + e)
	}
	return 1 / (1 + e)
}

// vmTanh1 is tanh(x) in float32 by the vector kernels' method.
func vmTanh1(x float32) float32 {
	b := math.Float32bits(x)
	a := math.Float32frombits(b &^ (1 << 31))
	if a < vmTanhSmall {
		t := x * x
		q := (((vmTanhQ4*t+vmTanhQ3)*t+vmTanhQ2)*t+vmTanhQ1)*t + vmTanhQ0
		return x + (x*t)*q
	}
	e := vmExp1(-2 * a)
	return math.Float32frombits(math.Float32bits((1-e)/(1+e)) | b&(1<<31))
}

func expGo(y, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] = vmExp1(v)
	}
}

func sigmoidGo(y, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] = vmSigmoid1(v)
	}
}

func siluGo(y, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] = v * vmSigmoid1(v)
	}
}

func tanhGo(y, x []float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] = vmTanh1(v)
	}
}

// vmNsPerElem is one thread's time per element of a vector math function
// (Exp, Sigmoid, SiLU, Tanh) on the path this CPU takes, its data in L1:
// BenchmarkVMath on 4096 floats, the best of 4 runs, on the shared 2-core
// AMD EPYC development VM (load 18; the float64 math.Exp sigmoid these
// replace measured 8–25 ns an element there).
func vmNsPerElem(op string) float64 {
	var t [4]float64 // exp, sigmoid, silu, tanh
	switch {
	case hasAVX512F:
		t = [4]float64{0.2, 0.25, 0.27, 0.4}
	case hasAVX2FMA:
		t = [4]float64{0.33, 0.45, 0.47, 0.66}
	default:
		t = [4]float64{6, 7, 7, 8}
	}
	switch op {
	case "Exp":
		return t[0]
	case "Sigmoid":
		return t[1]
	case "SiLU":
		return t[2]
	case "Tanh":
		return t[3]
	}
	return 0
}
