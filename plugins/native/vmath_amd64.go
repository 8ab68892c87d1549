package native

// The vector math functions, numbered for vmCall.
const (
	vmExpF = iota
	vmSigmoidF
	vmSiLUF
	vmTanhF
)

// vmCall runs function f's kernel of the given width on n floats. The
// calls are direct: through a func value the tail's stack buffer would
// escape to the heap (an allocation per call).
func vmCall(f int, wide bool, n int, x, y *float32) {
	switch f {
	case vmExpF:
		if wide {
			vexpAVX512(n, x, y)
		} else {
			vexpAVX2(n, x, y)
		}
	case vmSigmoidF:
		if wide {
			vsigmoidAVX512(n, x, y)
		} else {
			vsigmoidAVX2(n, x, y)
		}
	case vmSiLUF:
		if wide {
			vsiluAVX512(n, x, y)
		} else {
			vsiluAVX2(n, x, y)
		}
	case vmTanhF:
		if wide {
			vtanhAVX512(n, x, y)
		} else {
			vtanhAVX2(n, x, y)
		}
	}
}

// vmRun runs function f (AVX-512 when wide, else AVX2) over y = f(x),
// the tail through a padded buffer so that every element takes the same
// path.
func vmRun(f int, wide bool, y, x []float32) {
	n := len(y)
	if n == 0 {
		return
	}
	x = x[:n]
	lanes := 8
	if wide {
		lanes = 16
	}
	body := n &^ (lanes - 1)
	if body > 0 {
		vmCall(f, wide, body, &x[0], &y[0])
	}
	if body < n {
		var buf [16]float32
		copy(buf[:], x[body:])
		vmCall(f, wide, lanes, &buf[0], &buf[0])
		copy(y[body:], buf[:n-body])
	}
}

// vmDispatch picks the widest kernel the CPU runs, else the Go one.
func vmDispatch(f int, goFn func(y, x []float32)) func(y, x []float32) {
	switch {
	case hasAVX512F:
		return func(y, x []float32) { vmRun(f, true, y, x) }
	case hasAVX2FMA:
		return func(y, x []float32) { vmRun(f, false, y, x) }
	}
	return goFn
}

var (
	vexp     = vmDispatch(vmExpF, expGo)
	vsigmoid = vmDispatch(vmSigmoidF, sigmoidGo)
	vsilu    = vmDispatch(vmSiLUF, siluGo)
	vtanh    = vmDispatch(vmTanhF, tanhGo)
)

// vmPath is one implementation of a vector math function (tests).
type vmPath struct {
	name string
	fn   func(y, x []float32)
}

// vmPaths lists every implementation of f this CPU can run.
func vmPaths(f string) []vmPath {
	id := map[string]int{"exp": vmExpF, "sigmoid": vmSigmoidF, "silu": vmSiLUF, "tanh": vmTanhF}[f]
	goFn := map[string]func(y, x []float32){"exp": expGo, "sigmoid": sigmoidGo, "silu": siluGo, "tanh": tanhGo}[f]
	out := []vmPath{{"go", goFn}}
	if hasAVX2FMA {
		out = append(out, vmPath{"avx2", func(y, x []float32) { vmRun(id, false, y, x) }})
	}
	if hasAVX512F {
		out = append(out, vmPath{"avx512", func(y, x []float32) { vmRun(id, true, y, x) }})
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
	wide := hasAVX512F
	lanes := 8
	if wide {
		lanes = 16
	}
	body := n &^ (lanes - 1)
	if body > 0 {
		preluVVCall(wide, body, &x[0], &s[0], &y[0])
	}
	if body < n {
		var bx, bs [16]float32
		copy(bx[:], x[body:])
		copy(bs[:], s[body:])
		preluVVCall(wide, lanes, &bx[0], &bs[0], &bx[0])
		copy(y[body:], bx[:n-body])
	}
}

func preluVVCall(wide bool, n int, x, s, y *float32) {
	if wide {
		preluVVAVX512(n, x, s, y)
	} else {
		preluVVAVX2(n, x, s, y)
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
	wide := hasAVX512F
	lanes := 8
	if wide {
		lanes = 16
	}
	sb := [1]float32{s}
	body := n &^ (lanes - 1)
	if body > 0 {
		preluVSCall(wide, body, &x[0], &sb[0], &y[0])
	}
	if body < n {
		var bx [16]float32
		copy(bx[:], x[body:])
		preluVSCall(wide, lanes, &bx[0], &sb[0], &bx[0])
		copy(y[body:], bx[:n-body])
	}
}

func preluVSCall(wide bool, n int, x, s, y *float32) {
	if wide {
		preluVSAVX512(n, x, s, y)
	} else {
		preluVSAVX2(n, x, s, y)
	}
}
