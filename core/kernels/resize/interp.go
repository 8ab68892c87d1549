package resize

import (
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// The resampling follows the ONNX reference implementation: each output
// coordinate x maps to an input coordinate x_ori; with k = floor(x_ori) and
// ratio = x_ori-k in (0, 1] (an integral x_ori gives k = x_ori-1, ratio 1),
// the mode's filter yields n (even) coefficients for the input positions
// k-n/2+1 … k+n/2, which are clamped to the input (edge padding). Resize is
// separable, so it is computed one axis at a time in float64 and rounded to
// the output type once at the end.

// axisMap is the resampling of one axis: for output index o, taps
// start[o]..start[o+1] of idx/w, or extrapolation when ext[o] is set.
type axisMap struct {
	in, out  int
	identity bool
	ext      []bool
	start    []int
	idx      []int
	w        []float64
	nearest  []int // nearest mode: the selected index, -1 = extrapolate
}

// sourceCoord maps an output index to the input coordinate; ok is false when
// tf_crop_and_resize lands outside the input (extrapolation).
func sourceCoord(a *resizeops.Attrs, p *resizeops.Plan, axis, rank, x int) (float64, bool) {
	in := float64(p.InShape[axis])
	s := p.Scales[axis]
	ow := s * in // the (possibly fractional) resized length
	xf := float64(x)
	switch a.Ctm {
	case resizeops.CtmAlignCorners:
		if ow == 1 {
			return 0, true
		}
		return xf * (in - 1) / (ow - 1), true
	case resizeops.CtmAsymmetric:
		return xf / s, true
	case resizeops.CtmTFHalfPixelForNN:
		return (xf + 0.5) / s, true
	case resizeops.CtmPytorchHalfPixel:
		if p.Out[axis] <= 1 {
			return 0, true
		}
		return (xf+0.5)/s - 0.5, true
	case resizeops.CtmHalfPixelSymmetric:
		adj := float64(p.Out[axis]) / ow
		offset := in / 2 * (1 - adj)
		return offset + (xf+0.5)/s - 0.5, true
	case resizeops.CtmTFCropAndResize:
		start, end := p.Roi[axis], p.Roi[rank+axis]
		var xo float64
		if ow == 1 {
			xo = (end - start) * (in - 1) / 2
		} else {
			xo = xf * (end - start) * (in - 1) / (ow - 1)
		}
		xo += start * (in - 1)
		if !(xo >= 0 && xo <= in-1) { // also NaN from a NaN roi
			return 0, false
		}
		return xo, true
	}
	return (xf+0.5)/s - 0.5, true // half_pixel
}

// cubicKernel is Keys' cubic convolution kernel with parameter A.
func cubicKernel(x, A float64) float64 {
	x = math.Abs(x)
	switch {
	case x <= 1:
		return ((A+2)*x-(A+3))*x*x + 1
	case x < 2:
		return ((A*x-5*A)*x+8*A)*x - 4*A
	}
	return 0
}

// coeffs returns the filter coefficients for a ratio in (0, 1]; there is
// always an even number n of them, for input positions k-n/2+1 … k+n/2.
func coeffs(a *resizeops.Attrs, ratio, scale float64, buf []float64) ([]float64, error) {
	buf = buf[:0]
	switch a.Mode {
	case resizeops.ModeLinear:
		if !a.Antialias {
			return append(buf, 1-ratio, ratio), nil
		}
		s := math.Min(scale, 1)
		if 1/s > 1<<24 {
			return nil, errTooSmall
		}
		start := int(math.Floor(-1/s) + 1)
		foot := 2 - 2*start
		sum := 0.0
		for i := 0; i < foot; i++ {
			c := 1 - math.Abs((float64(start+i)-ratio)*s)
			c = math.Max(0, math.Min(1, c))
			buf = append(buf, c)
			sum += c
		}
		for i := range buf {
			buf[i] /= sum
		}
		return buf, nil
	case resizeops.ModeCubic:
		A := a.CubicA
		if !a.Antialias {
			r1 := 1 - ratio
			buf = append(buf,
				((A*(ratio+1)-5*A)*(ratio+1)+8*A)*(ratio+1)-4*A,
				((A+2)*ratio-(A+3))*ratio*ratio+1,
				((A+2)*r1-(A+3))*r1*r1+1,
				((A*(r1+1)-5*A)*(r1+1)+8*A)*(r1+1)-4*A)
			return buf, nil
		}
		s := math.Min(scale, 1)
		if 2/s > 1<<24 {
			return nil, errTooSmall
		}
		start := int(math.Floor(-2/s) + 1)
		end := 2 - start
		sum := 0.0
		for i := start; i < end; i++ {
			c := cubicKernel(s*(float64(i)-ratio), A)
			buf = append(buf, c)
			sum += c
		}
		for i := range buf {
			buf[i] /= sum
		}
		return buf, nil
	}
	// nearest: two coefficients for k and k+1, one of them 1
	pickHigh := false
	if ratio == 1 {
		pickHigh = true
	} else {
		switch a.NearestMode {
		case "round_prefer_ceil":
			pickHigh = ratio >= 0.5
		case "floor":
			pickHigh = false
		case "ceil":
			pickHigh = true
		default:
			pickHigh = ratio > 0.5
		}
	}
	if pickHigh {
		return append(buf, 0, 1), nil
	}
	return append(buf, 1, 0), nil
}

type resizeError string

func (e resizeError) Error() string { return string(e) }

const errTooSmall = resizeError("antialias filter for this scale is too wide")

// buildAxis computes the taps of one axis.
func buildAxis(a *resizeops.Attrs, p *resizeops.Plan, axis, rank int) (*axisMap, error) {
	in, out := p.InShape[axis], p.Out[axis]
	m := &axisMap{in: in, out: out, identity: in == out}
	xs := make([]float64, out)
	oks := make([]bool, out)
	for x := 0; x < out; x++ {
		xs[x], oks[x] = sourceCoord(a, p, axis, rank, x)
		if !oks[x] || xs[x] != float64(x) {
			m.identity = false
		}
	}
	if m.identity {
		return m, nil
	}
	m.ext = make([]bool, out)
	if a.Mode == resizeops.ModeNearest {
		m.nearest = make([]int, out)
	} else {
		m.start = make([]int, out+1)
	}
	var buf []float64
	for x := 0; x < out; x++ {
		if !oks[x] {
			m.ext[x] = true
			if m.nearest != nil {
				m.nearest[x] = -1
			} else {
				m.start[x+1] = len(m.idx)
			}
			continue
		}
		xo := xs[x]
		k := math.Floor(xo)
		ratio := xo - k
		if ratio == 0 {
			ratio = 1
			k--
		}
		c, err := coeffs(a, ratio, p.Scales[axis], buf)
		if err != nil {
			return nil, err
		}
		buf = c
		nc := len(c)
		half := nc / 2
		// window of nc positions nearest x_ori within the edge-padded input
		ws := clampF(k-float64(half)+1, float64(-half), float64(in-half))
		if m.nearest != nil {
			sel := 0
			if c[1] > c[0] {
				sel = 1
			}
			m.nearest[x] = clampI(int(ws)+sel, 0, in-1)
			continue
		}
		w0 := int(ws)
		if a.ExcludeOutside {
			sum := 0.0
			for i := range c {
				j := w0 + i
				if j < 0 || j >= in {
					c[i] = 0
				}
				sum += c[i]
			}
			for i := range c {
				c[i] /= sum
			}
		}
		for i, cv := range c {
			m.idx = append(m.idx, clampI(w0+i, 0, in-1))
			m.w = append(m.w, cv)
		}
		m.start[x+1] = len(m.idx)
	}
	return m, nil
}

func clampF(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func clampI(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// interpolate runs the separable linear/cubic resampling on float64 data.
func interpolate(n *graph.Node, a *resizeops.Attrs, maps []*axisMap, shape []int, src []float64) ([]float64, error) {
	cur := append([]int{}, shape...)
	data := src
	// Shrinking axes first keeps every intermediate no larger than the
	// larger of the input and the output.
	order := make([]int, 0, len(maps))
	for ax, m := range maps {
		if !m.identity && m.out < m.in {
			order = append(order, ax)
		}
	}
	for ax, m := range maps {
		if !m.identity && m.out >= m.in {
			order = append(order, ax)
		}
	}
	for _, ax := range order {
		m := maps[ax]
		next := append([]int{}, cur...)
		next[ax] = m.out
		cnt, err := graph.CheckAlloc(graph.Float64, next)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		dst := make([]float64, cnt)
		outer := kernels.Prod(cur[:ax])
		inner := kernels.Prod(cur[ax+1:])
		for o := 0; o < outer; o++ {
			sb := o * m.in * inner
			db := o * m.out * inner
			for x := 0; x < m.out; x++ {
				d := dst[db+x*inner : db+(x+1)*inner]
				if m.ext[x] {
					for i := range d {
						d[i] = a.Extrapolation
					}
					continue
				}
				for t := m.start[x]; t < m.start[x+1]; t++ {
					w := m.w[t]
					s := data[sb+m.idx[t]*inner : sb+(m.idx[t]+1)*inner]
					for i := range d {
						d[i] += w * s[i]
					}
				}
			}
		}
		data, cur = dst, next
	}
	return data, nil
}

// gatherNearest fills dst (the output, row-major over outShape) by picking
// one source element per output element; -1 in any axis's map extrapolates.
func gatherNearest[T any](src, dst []T, maps []*axisMap, inShape []int, ext T) {
	rank := len(maps)
	if len(dst) == 0 {
		return
	}
	if rank == 0 {
		dst[0] = src[0]
		return
	}
	inSt := kernels.Strides(inShape)
	// per-axis source offsets (-1 = extrapolate)
	offs := make([][]int, rank)
	for ax, m := range maps {
		offs[ax] = make([]int, m.out)
		for x := 0; x < m.out; x++ {
			switch {
			case m.identity:
				offs[ax][x] = x * inSt[ax]
			case m.nearest[x] < 0:
				offs[ax][x] = -1
			default:
				offs[ax][x] = m.nearest[x] * inSt[ax]
			}
		}
	}
	pos := 0
	var rec func(ax, base int, extr bool)
	rec = func(ax, base int, extr bool) {
		last := ax == rank-1
		for _, off := range offs[ax] {
			e := extr || off < 0
			if last {
				if e {
					dst[pos] = ext
				} else {
					dst[pos] = src[base+off]
				}
				pos++
				continue
			}
			rec(ax+1, base+max(off, 0), e)
		}
	}
	rec(0, 0, false)
}
