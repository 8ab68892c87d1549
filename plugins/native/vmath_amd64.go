package native

// vmKernel is one of the generated vector math kernels.
type vmKernel func(n int, x, y *float32)

// vmRun runs kernel k (lanes floats a vector) over y = f(x), the tail
// through a padded buffer so that every element takes the same path.
func vmRun(k vmKernel, lanes int, y, x []float32) {
	n := len(y)
	if n == 0 {
		return
	}
	x = x[:n]
	body := n &^ (lanes - 1)
	if body > 0 {
		k(body, &x[0], &y[0])
	}
	if body < n {
		var buf [16]float32
		copy(buf[:], x[body:])
		k(lanes, &buf[0], &buf[0])
		copy(y[body:], buf[:n-body])
	}
}

// vmDispatch picks the widest kernel the CPU runs, else the Go one.
func vmDispatch(k512, k2 vmKernel, goFn func(y, x []float32)) func(y, x []float32) {
	switch {
	case hasAVX512F:
		return func(y, x []float32) { vmRun(k512, 16, y, x) }
	case hasAVX2FMA:
		return func(y, x []float32) { vmRun(k2, 8, y, x) }
	}
	return goFn
}

var (
	vexp     = vmDispatch(vexpAVX512, vexpAVX2, expGo)
	vsigmoid = vmDispatch(vsigmoidAVX512, vsigmoidAVX2, sigmoidGo)
	vsilu    = vmDispatch(vsiluAVX512, vsiluAVX2, siluGo)
	vtanh    = vmDispatch(vtanhAVX512, vtanhAVX2, tanhGo)
)

// vmPath is one implementation of a vector math function (tests).
type vmPath struct {
	name string
	fn   func(y, x []float32)
}

// vmPaths lists every implementation of f this CPU can run.
func vmPaths(f string) []vmPath {
	k := map[string][3]any{
		"exp":     {vexpAVX512, vexpAVX2, expGo},
		"sigmoid": {vsigmoidAVX512, vsigmoidAVX2, sigmoidGo},
		"silu":    {vsiluAVX512, vsiluAVX2, siluGo},
		"tanh":    {vtanhAVX512, vtanhAVX2, tanhGo},
	}[f]
	out := []vmPath{{"go", k[2].(func(y, x []float32))}}
	if hasAVX2FMA {
		k2 := k[1].(func(int, *float32, *float32))
		out = append(out, vmPath{"avx2", func(y, x []float32) { vmRun(k2, 8, y, x) }})
	}
	if hasAVX512F {
		k5 := k[0].(func(int, *float32, *float32))
		out = append(out, vmPath{"avx512", func(y, x []float32) { vmRun(k5, 16, y, x) }})
	}
	return out
}

// preluVV is y[i] = x[i] < 0 ? s[i]·x[i] : x[i] over len(y).
func preluVV(y, x, s []float32) {
	n := len(y)
	if n == 0 {
		return
	}
	if !hasAVX2FMA {
		preluVVGo(y, x, s)
		return
	}
	x, s = x[:n], s[:n]
	k, lanes := preluVVAVX2, 8
	if hasAVX512F {
		k, lanes = preluVVAVX512, 16
	}
	body := n &^ (lanes - 1)
	if body > 0 {
		k(body, &x[0], &s[0], &y[0])
	}
	if body < n {
		var bx, bs [16]float32
		copy(bx[:], x[body:])
		copy(bs[:], s[body:])
		k(lanes, &bx[0], &bs[0], &bx[0])
		copy(y[body:], bx[:n-body])
	}
}

// preluVS is y[i] = x[i] < 0 ? s·x[i] : x[i] over len(y).
func preluVS(y, x []float32, s float32) {
	n := len(y)
	if n == 0 {
		return
	}
	if !hasAVX2FMA {
		preluVSGo(y, x, s)
		return
	}
	x = x[:n]
	k, lanes := preluVSAVX2, 8
	if hasAVX512F {
		k, lanes = preluVSAVX512, 16
	}
	body := n &^ (lanes - 1)
	if body > 0 {
		k(body, &x[0], &s, &y[0])
	}
	if body < n {
		var bx [16]float32
		copy(bx[:], x[body:])
		k(lanes, &bx[0], &s, &bx[0])
		copy(y[body:], bx[:n-body])
	}
}
