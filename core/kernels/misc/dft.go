package misc

import (
	miscops "github.com/switchyard-hal/switchyard/core/ops/misc"

	"math"
	"math/bits"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "DFT", dftKernel)
	kernels.RegisterKernel("", "STFT", stftKernel)
}

// ---- 1-D transforms (float64) ----

// twiddle returns exp(-2πi m/n) for m in [0, n), each computed directly.
func twiddle(n int) []complex128 {
	w := make([]complex128, n)
	for m := range w {
		s, c := math.Sincos(-2 * math.Pi * float64(m) / float64(n))
		w[m] = complex(c, s)
	}
	return w
}

// fft computes the forward DFT X[k] = sum_t x[t] exp(-2πi kt/n) of x in
// place: directly for short lengths, radix-2 for powers of two and
// Bluestein's chirp-z otherwise.
func fft(x []complex128) {
	n := len(x)
	switch {
	case n <= 1:
	case n <= 32:
		w := twiddle(n)
		y := make([]complex128, n)
		for k := range y {
			var acc complex128
			for t, v := range x {
				acc += v * w[(k*t)%n]
			}
			y[k] = acc
		}
		copy(x, y)
	case n&(n-1) == 0:
		fftPow2(x, twiddle(n))
	default:
		bluestein(x)
	}
}

// fftPow2 is an iterative radix-2 FFT; w = twiddle(len(x)).
func fftPow2(x []complex128, w []complex128) {
	n := len(x)
	lg := bits.TrailingZeros(uint(n))
	for i := range x {
		j := int(bits.Reverse(uint(i)) >> (bits.UintSize - lg))
		if j > i {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for k := 0; k < half; k++ {
				t := w[k*step] * x[start+k+half]
				u := x[start+k]
				x[start+k] = u + t
				x[start+k+half] = u - t
			}
		}
	}
}

// bluestein evaluates an arbitrary-length DFT as a convolution with a chirp,
// computed with power-of-two FFTs.
func bluestein(x []complex128) {
	n := len(x)
	m := 1
	for m < 2*n-1 {
		m <<= 1
	}
	chirp := make([]complex128, n) // exp(-πi k²/n), k² reduced mod 2n
	for k := range chirp {
		e := (k * k) % (2 * n)
		s, c := math.Sincos(-math.Pi * float64(e) / float64(n))
		chirp[k] = complex(c, s)
	}
	a := make([]complex128, m)
	b := make([]complex128, m)
	for k := 0; k < n; k++ {
		a[k] = x[k] * chirp[k]
		cc := complex(real(chirp[k]), -imag(chirp[k]))
		b[k] = cc
		if k > 0 {
			b[m-k] = cc
		}
	}
	w := twiddle(m)
	fftPow2(a, w)
	fftPow2(b, w)
	for i := range a {
		a[i] *= b[i]
	}
	// inverse via conjugation
	for i := range a {
		a[i] = complex(real(a[i]), -imag(a[i]))
	}
	fftPow2(a, w)
	inv := 1 / float64(m)
	for k := 0; k < n; k++ {
		v := complex(real(a[k])*inv, -imag(a[k])*inv)
		x[k] = v * chirp[k]
	}
}

// ifft computes x[t] = 1/n sum_k X[k] exp(2πi kt/n) in place.
func ifft(x []complex128) {
	for i, v := range x {
		x[i] = complex(real(v), -imag(v))
	}
	fft(x)
	inv := 1 / float64(len(x))
	for i, v := range x {
		x[i] = complex(real(v)*inv, -imag(v)*inv)
	}
}

// checkWork refuses transforms whose float64 result or working buffers
// (up to 16 floats per point for Bluestein's method) exceed the tensor limit.
func checkWork(n *graph.Node, oshape []int, length int) error {
	if _, err := graph.CheckAlloc(graph.Float64, oshape); err != nil {
		return kernels.Invalidf(n, "%v", err)
	}
	if _, err := graph.CheckAlloc(graph.Float64, []int{16, length}); err != nil {
		return kernels.Invalidf(n, "transform length %d: %v", length, err)
	}
	return nil
}

// ---- DFT ----

// dftKernel computes the DFT along one axis of a real ([..., 1]) or complex
// ([..., 2]) signal. inverse=1 applies the 1/n-normalised inverse; onesided=1
// keeps bins 0..n/2 of the forward transform, and with inverse=1 it is the
// inverse real transform (numpy irfft): the input holds bins 0..n/2 of a
// Hermitian spectrum, n defaults to 2*(bins-1), and the output is real.
func dftKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "input"); err != nil {
		return nil, err
	}
	r := x.Rank()
	if r < 2 || (x.Shape[r-1] != 1 && x.Shape[r-1] != 2) {
		return nil, kernels.Invalidf(n, "input must be [..., 1] (real) or [..., 2] (complex), got %v", x.Shape)
	}
	axisT := kernels.Input(in, 2)
	a, _, err := miscops.DftAxisValue(n, ctx.Opset, axisT, axisT != nil)
	if err != nil {
		return nil, err
	}
	axis, err := miscops.NormDFTAxis(n, a, r)
	if err != nil {
		return nil, err
	}
	p := miscops.DftParams{Axis: axis, Inverse: n.AttrInt("inverse", 0) != 0, Onesided: n.AttrInt("onesided", 0) != 0}
	lenT := kernels.Input(in, 1)
	var length int64
	if lenT != nil {
		if length, err = scalarInt(n, lenT, "dft_length"); err != nil {
			return nil, err
		}
	}
	if err := miscops.DftShape(n, &p, x.Shape[axis], lenT != nil, length); err != nil {
		return nil, err
	}
	if p.N <= 0 {
		return nil, kernels.Invalidf(n, "transform length %d along axis %d of %v", p.N, axis, x.Shape)
	}
	oshape := append([]int{}, x.Shape...)
	oshape[axis], oshape[r-1] = p.OutLen, p.OutComplx
	if err := checkWork(n, oshape, p.N); err != nil {
		return nil, err
	}
	outer, d, _ := splitAt(x.Shape[:r-1], axis)
	inner := kernels.Prod(x.Shape[axis+1 : r-1])
	c := x.Shape[r-1]
	xv := x.Float64s()
	res := make([]float64, kernels.Prod(oshape))
	buf := make([]complex128, p.N)
	oc := p.OutComplx
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			for k := range buf {
				buf[k] = 0
			}
			at := func(t int) complex128 {
				idx := ((o*d+t)*inner + i) * c
				if c == 2 {
					return complex(xv[idx], xv[idx+1])
				}
				return complex(xv[idx], 0)
			}
			switch {
			case p.Inverse && p.Onesided:
				bins := min(d, p.N/2+1)
				for k := 0; k < bins; k++ {
					buf[k] = at(k)
				}
				for k := 1; k < p.N-k; k++ { // Hermitian extension
					if k < bins {
						v := buf[k]
						buf[p.N-k] = complex(real(v), -imag(v))
					}
				}
				ifft(buf)
			default:
				for t := 0; t < min(d, p.N); t++ {
					buf[t] = at(t)
				}
				if p.Inverse {
					ifft(buf)
				} else {
					fft(buf)
				}
			}
			for k := 0; k < p.OutLen; k++ {
				idx := ((o*p.OutLen+k)*inner + i) * oc
				res[idx] = real(buf[k])
				if oc == 2 {
					res[idx+1] = imag(buf[k])
				}
			}
		}
	}
	return wrap(floatsOut(ctx, n, x.DType, oshape, res))
}

// ---- STFT ----

// stftKernel slides a frame of frame_length samples by frame_step over each
// signal, multiplies it by the window (default all ones) and takes its DFT;
// onesided=1 (default) keeps bins 0..frame_length/2.
func stftKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "signal"); err != nil {
		return nil, err
	}
	if x.Rank() != 3 || (x.Shape[2] != 1 && x.Shape[2] != 2) {
		return nil, kernels.Invalidf(n, "signal must be [batch, length, 1|2], got %v", x.Shape)
	}
	step, err := scalarInt(n, kernels.Input(in, 1), "frame_step")
	if err != nil {
		return nil, err
	}
	win := kernels.Input(in, 2)
	flen := int64(-1)
	if lt := kernels.Input(in, 3); lt != nil {
		if flen, err = scalarInt(n, lt, "frame_length"); err != nil {
			return nil, err
		}
	}
	if win != nil {
		if err := checkIn(n, win, "window"); err != nil {
			return nil, err
		}
		if win.Rank() != 1 {
			return nil, kernels.Invalidf(n, "window must be 1-D, got %v", win.Shape)
		}
		if flen >= 0 && flen != int64(win.Shape[0]) {
			return nil, kernels.Invalidf(n, "frame_length %d differs from the window length %d", flen, win.Shape[0])
		}
		flen = int64(win.Shape[0])
	}
	batch, L, c := x.Shape[0], x.Shape[1], x.Shape[2]
	if flen < 0 {
		flen = int64(L)
	}
	if step <= 0 || flen <= 0 || flen > int64(L) {
		return nil, kernels.Invalidf(n, "frame_step %d and frame_length %d must be positive, frame_length at most the signal length %d", step, flen, L)
	}
	fl := int(flen)
	frames := 1 + (L-fl)/int(step)
	bins := fl
	if n.AttrInt("onesided", 1) != 0 {
		bins = fl/2 + 1
	}
	oshape := []int{batch, frames, bins, 2}
	if err := checkWork(n, oshape, fl); err != nil {
		return nil, err
	}
	w := make([]float64, fl)
	for i := range w {
		w[i] = 1
	}
	if win != nil {
		w = win.Float64s()
	}
	xv := x.Float64s()
	res := make([]float64, kernels.Prod(oshape))
	buf := make([]complex128, fl)
	for b := 0; b < batch; b++ {
		for f := 0; f < frames; f++ {
			start := f * int(step)
			for t := 0; t < fl; t++ {
				idx := (b*L + start + t) * c
				v := complex(xv[idx], 0)
				if c == 2 {
					v = complex(xv[idx], xv[idx+1])
				}
				buf[t] = v * complex(w[t], 0)
			}
			fft(buf)
			for k := 0; k < bins; k++ {
				idx := ((b*frames+f)*bins + k) * 2
				res[idx], res[idx+1] = real(buf[k]), imag(buf[k])
			}
		}
	}
	return wrap(floatsOut(ctx, n, x.DType, oshape, res))
}
