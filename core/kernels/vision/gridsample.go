package vision

import (
	visionops "github.com/switchyard-hal/switchyard/core/ops/vision"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "GridSample", gridSampleKernel)
}

const (
	gsLinear = iota
	gsNearest
	gsCubic
)

const (
	padZeros = iota
	padBorder
	padReflection
)

type gsParams struct {
	mode, pad    int
	alignCorners bool
}

func readGridSampleAttrs(n *graph.Node, opset int64, nd int) (gsParams, error) {
	var p gsParams
	def := "linear"
	if opset < 20 {
		def = "bilinear"
	}
	switch m := n.AttrString("mode", def); m {
	case "bilinear", "linear":
		p.mode = gsLinear
	case "nearest":
		p.mode = gsNearest
	case "bicubic", "cubic":
		p.mode = gsCubic
	default:
		return p, visionops.ErrInvalid("unknown mode %q", m)
	}
	switch m := n.AttrString("padding_mode", "zeros"); m {
	case "zeros":
		p.pad = padZeros
	case "border":
		p.pad = padBorder
	case "reflection":
		p.pad = padReflection
	default:
		return p, visionops.ErrInvalid("unknown padding_mode %q", m)
	}
	switch a := n.AttrInt("align_corners", 0); a {
	case 0, 1:
		p.alignCorners = a == 1
	default:
		return p, visionops.ErrInvalid("align_corners must be 0 or 1, got %d", a)
	}
	if opset < 20 && nd != 2 {
		return p, visionops.ErrInvalid("GridSample-%d takes 4-D input, got %d spatial dims", opset, nd)
	}
	return p, nil
}

// gsReflect reflects x into [lo, hi] by the nearer border, repeatedly.
func gsReflect(x, lo, hi float64) float64 {
	rng := hi - lo
	if rng <= 0 {
		return lo
	}
	if x < lo {
		dx := lo - x
		k := math.Trunc(dx / rng)
		r := dx - k*rng
		if math.Mod(k, 2) == 0 {
			return lo + r
		}
		return hi - r
	}
	if x > hi {
		dx := x - hi
		k := math.Trunc(dx / rng)
		r := dx - k*rng
		if math.Mod(k, 2) == 0 {
			return hi - r
		}
		return lo + r
	}
	return x
}

// cubicCoeffs fills the 4 cubic convolution weights (alpha -0.75) for a
// fractional offset t in [0, 1).
func cubicCoeffs(t float64, c []float64) {
	const a = -0.75
	t = math.Abs(t)
	x := t + 1
	c[0] = ((a*x-5*a)*x+8*a)*x - 4*a
	c[1] = ((a+2)*t-(a+3))*t*t + 1
	x = 1 - t
	c[2] = ((a+2)*x-(a+3))*x*x + 1
	x = 2 - t
	c[3] = ((a*x-5*a)*x+8*a)*x - 4*a
}

// gsSampler holds the per-node plan for sampling one N,C plane.
type gsSampler struct {
	p       gsParams
	dims    []int     // input spatial dims
	lo, hi  []float64 // reflection borders per axis
	strides []int     // input spatial strides
	taps    int       // taps per axis
	nd      int
	tapIdx  [][]int     // [axis][tap] input index along axis, -1 = outside (zeros)
	tapW    [][]float64 // [axis][tap] weight
	offs    []int       // combined taps: flat offsets in the plane
	ws      []float64   // combined taps: weights
}

func newGSSampler(p gsParams, dims []int) *gsSampler {
	nd := len(dims)
	s := &gsSampler{p: p, dims: dims, nd: nd, strides: kernels.Strides(dims)}
	s.lo, s.hi = make([]float64, nd), make([]float64, nd)
	for i, d := range dims {
		if p.alignCorners {
			s.lo[i], s.hi[i] = 0, float64(d-1)
		} else {
			s.lo[i], s.hi[i] = -0.5, float64(d)-0.5
		}
	}
	switch p.mode {
	case gsLinear:
		s.taps = 2
	case gsNearest:
		s.taps = 1
	default:
		s.taps = 4
	}
	s.tapIdx = make([][]int, nd)
	s.tapW = make([][]float64, nd)
	for i := range s.tapIdx {
		s.tapIdx[i] = make([]int, s.taps)
		s.tapW[i] = make([]float64, s.taps)
	}
	return s
}

// pixelIndex maps an integer index along axis to an in-range index, or -1
// when it reads padding (zeros mode).
func (s *gsSampler) pixelIndex(axis, i int) int {
	d := s.dims[axis]
	switch s.p.pad {
	case padZeros:
		if i < 0 || i >= d {
			return -1
		}
	case padBorder:
		i = min(max(i, 0), d-1)
	default:
		i = int(gsReflect(float64(i), s.lo[axis], s.hi[axis]))
		i = min(max(i, 0), d-1)
	}
	return i
}

// plan computes the taps for one output location from its normalized grid
// coordinates g (ordered as the grid stores them: innermost axis first).
func (s *gsSampler) plan(g []float64) {
	nd := s.nd
	for ax := 0; ax < nd; ax++ {
		v := g[nd-1-ax]
		size := float64(s.dims[ax])
		var x float64
		if s.p.alignCorners {
			x = (v + 1) / 2 * (size - 1)
		} else {
			x = ((v+1)*size - 1) / 2
		}
		if s.p.mode == gsNearest {
			x = math.RoundToEven(x)
		}
		if x < s.lo[ax] || x > s.hi[ax] {
			switch s.p.pad {
			case padBorder:
				x = math.Min(math.Max(x, 0), size-1)
			case padReflection:
				x = gsReflect(x, s.lo[ax], s.hi[ax])
			}
		}
		idx, w := s.tapIdx[ax], s.tapW[ax]
		switch s.p.mode {
		case gsNearest:
			if x != x || math.IsInf(x, 0) {
				idx[0], w[0] = -1, 1
				continue
			}
			idx[0], w[0] = s.pixelIndex(ax, int(clampF(math.Trunc(x)))), 1
		case gsLinear:
			f := math.Floor(x)
			if x != x || math.IsInf(x, 0) {
				idx[0], idx[1], w[0], w[1] = -1, -1, 0, 0
				continue
			}
			x0 := int(clampF(f))
			t := x - f
			idx[0], idx[1] = s.pixelIndex(ax, x0), s.pixelIndex(ax, x0+1)
			w[0], w[1] = 1-t, t
		default:
			f := math.Floor(x)
			if x != x || math.IsInf(x, 0) {
				for k := range idx {
					idx[k], w[k] = -1, 0
				}
				continue
			}
			x0 := int(clampF(f)) - 1
			cubicCoeffs(x-f, w)
			for k := 0; k < 4; k++ {
				idx[k] = s.pixelIndex(ax, x0+k)
			}
		}
	}
}

// clampF keeps far-out coordinates within int range (they read padding).
func clampF(x float64) float64 { return math.Min(math.Max(x, -1<<40), 1<<40) }

// combine expands the per-axis taps into flat (offset, weight) pairs,
// dropping taps that read zero padding.
func (s *gsSampler) combine() {
	s.offs = append(s.offs[:0], 0)
	s.ws = append(s.ws[:0], 1)
	for ax := 0; ax < s.nd; ax++ {
		n := len(s.offs)
		for j := 0; j < n; j++ {
			o, w := s.offs[j], s.ws[j]
			for k := 0; k < s.taps; k++ {
				if i := s.tapIdx[ax][k]; i >= 0 {
					s.offs = append(s.offs, o+i*s.strides[ax])
					s.ws = append(s.ws, w*s.tapW[ax][k])
				}
			}
		}
		s.offs = append(s.offs[:0], s.offs[n:]...)
		s.ws = append(s.ws[:0], s.ws[n:]...)
	}
}

// sample interpolates one plane at the combined taps.
func (s *gsSampler) sample(plane []float64) float64 {
	total := 0.0
	for j, o := range s.offs {
		total += s.ws[j] * plane[o]
	}
	return total
}

// nearestIndex returns the flat index in the plane read in nearest mode, or
// -1 for padding.
func (s *gsSampler) nearestIndex() int {
	off := 0
	for ax := 0; ax < s.nd; ax++ {
		i := s.tapIdx[ax][0]
		if i < 0 {
			return -1
		}
		off += i * s.strides[ax]
	}
	return off
}

func gridSampleKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, grid := kernels.Input(in, 0), kernels.Input(in, 1)
	if x == nil || grid == nil {
		return nil, kernels.Invalidf(n, "X and grid are required")
	}
	if !grid.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "grid must be a float tensor, got %v", grid.DType)
	}
	r := len(x.Shape) - 2
	if r < 1 || len(grid.Shape) != r+2 || grid.Shape[r+1] != r || grid.Shape[0] != x.Shape[0] {
		return nil, kernels.Invalidf(n, "grid shape %v does not fit X shape %v (want [N, out..., %d])", grid.Shape, x.Shape, r)
	}
	p, err := readGridSampleAttrs(n, ctx.Opset, r)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	N, C := x.Shape[0], x.Shape[1]
	dims := x.Shape[2:]
	outSp := grid.Shape[1 : r+1]
	outShape := append([]int{N, C}, outSp...)
	if _, err := graph.CheckAlloc(x.DType, outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	planeIn := kernels.Prod(dims)
	planeOut := kernels.Prod(outSp)
	out, err := ctx.New(x.DType, outShape)
	if err != nil {
		return nil, err
	}
	if out.Len() == 0 {
		return ctx.Outputs(out), nil
	}
	if planeIn == 0 {
		// Every read is outside an empty input: only zeros padding is defined.
		if p.pad != padZeros {
			return nil, kernels.Invalidf(n, "padding_mode other than zeros needs a non-empty input, got %v", x.Shape)
		}
		return ctx.Outputs(out), nil
	}
	gv := grid.Float64s()
	s := newGSSampler(p, dims)
	if p.mode == gsNearest {
		// Exact element copy: works for every dtype.
		src := make([]int, out.Len())
		for b := 0; b < N; b++ {
			for o := 0; o < planeOut; o++ {
				s.plan(gv[(b*planeOut+o)*r : (b*planeOut+o+1)*r])
				at := s.nearestIndex()
				for c := 0; c < C; c++ {
					if at < 0 {
						src[(b*C+c)*planeOut+o] = -1
					} else {
						src[(b*C+c)*planeOut+o] = (b*C+c)*planeIn + at
					}
				}
			}
		}
		kernels.Gather(out.Data, x.Data, src)
		return ctx.Outputs(out), nil
	}
	if x.DType == graph.String || x.DType == graph.Bool {
		return nil, kernels.Unsupportedf(n, "%v input with interpolating mode", x.DType)
	}
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	xv := x.Float64s()
	yv := make([]float64, out.Len())
	for b := 0; b < N; b++ {
		for o := 0; o < planeOut; o++ {
			s.plan(gv[(b*planeOut+o)*r : (b*planeOut+o+1)*r])
			s.combine()
			for c := 0; c < C; c++ {
				pl := xv[(b*C+c)*planeIn : (b*C+c+1)*planeIn]
				yv[(b*C+c)*planeOut+o] = s.sample(pl)
			}
		}
	}
	kernels.StoreFloat64(out, yv)
	return ctx.Outputs(out), nil
}
