package binary

// Op32 is a float32 Add, Sub, Mul or Div: the reference kernels' fast
// path and the native backend's scalar fallback run the same loops.
type Op32 int

const (
	NoOp32 Op32 = iota // not a float32 fast-path op
	Add32
	Sub32
	Mul32
	Div32
)

// Apply32 returns x op y.
func Apply32(op Op32, x, y float32) float32 {
	switch op {
	case Add32:
		return x + y
	case Sub32:
		return x - y
	case Mul32:
		return x * y
	}
	return x / y
}

// VV32 sets dst[i] = x[i] op y[i] (x and y at least len(dst) long).
func VV32(op Op32, dst, x, y []float32) {
	x, y = x[:len(dst)], y[:len(dst)]
	switch op {
	case Add32:
		for i := range dst {
			dst[i] = x[i] + y[i]
		}
	case Sub32:
		for i := range dst {
			dst[i] = x[i] - y[i]
		}
	case Mul32:
		for i := range dst {
			dst[i] = x[i] * y[i]
		}
	case Div32:
		for i := range dst {
			dst[i] = x[i] / y[i]
		}
	}
}

// VS32 sets dst[i] = x[i] op y.
func VS32(op Op32, dst, x []float32, y float32) {
	x = x[:len(dst)]
	switch op {
	case Add32:
		for i := range dst {
			dst[i] = x[i] + y
		}
	case Sub32:
		for i := range dst {
			dst[i] = x[i] - y
		}
	case Mul32:
		for i := range dst {
			dst[i] = x[i] * y
		}
	case Div32:
		for i := range dst {
			dst[i] = x[i] / y
		}
	}
}

// SV32 sets dst[i] = x op y[i].
func SV32(op Op32, dst []float32, x float32, y []float32) {
	y = y[:len(dst)]
	switch op {
	case Add32:
		for i := range dst {
			dst[i] = x + y[i]
		}
	case Sub32:
		for i := range dst {
			dst[i] = x - y[i]
		}
	case Mul32:
		for i := range dst {
			dst[i] = x * y[i]
		}
	case Div32:
		for i := range dst {
			dst[i] = x / y[i]
		}
	}
}
