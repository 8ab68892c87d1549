package resize

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// Coordinate transformation modes (attribute coordinate_transformation_mode).
const (
	ctmHalfPixel          = "half_pixel"
	CtmHalfPixelSymmetric = "half_pixel_symmetric"
	CtmPytorchHalfPixel   = "pytorch_half_pixel"
	CtmAlignCorners       = "align_corners"
	CtmAsymmetric         = "asymmetric"
	CtmTFHalfPixelForNN   = "tf_half_pixel_for_nn"
	CtmTFCropAndResize    = "tf_crop_and_resize"
)

// Interpolation modes (attribute mode).
const (
	ModeNearest = "nearest"
	ModeLinear  = "linear"
	ModeCubic   = "cubic"
)

// Attrs are the interpolation settings shared by Resize and Upsample, with
// the defaults of the node's opset already applied.
type Attrs struct {
	Mode           string
	Ctm            string
	NearestMode    string
	CubicA         float64
	ExcludeOutside bool
	Extrapolation  float64
	Antialias      bool
	policy         string // keep_aspect_ratio_policy
	axes           []int64
}

// ResizeAttrs reads Resize's attributes for the given opset. Resize-10 has
// only mode and behaves like Upsample (asymmetric coordinates, nearest
// rounds down).
func ResizeAttrs(n *graph.Node, opset int64) (Attrs, error) {
	a := Attrs{
		Mode:          n.AttrString("mode", ModeNearest),
		Ctm:           ctmHalfPixel,
		NearestMode:   "round_prefer_floor",
		CubicA:        -0.75,
		Extrapolation: 0,
		policy:        "stretch",
	}
	if opset < 11 {
		a.Ctm = CtmAsymmetric
		a.NearestMode = "floor"
		if err := checkMode(n, a.Mode, false); err != nil {
			return a, err
		}
		return a, nil
	}
	if err := checkMode(n, a.Mode, true); err != nil {
		return a, err
	}
	a.Ctm = n.AttrString("coordinate_transformation_mode", ctmHalfPixel)
	switch a.Ctm {
	case ctmHalfPixel, CtmHalfPixelSymmetric, CtmPytorchHalfPixel, CtmAlignCorners,
		CtmAsymmetric, CtmTFHalfPixelForNN, CtmTFCropAndResize:
	default:
		return a, ops.Invalidf(n, "unknown coordinate_transformation_mode %q", a.Ctm)
	}
	a.NearestMode = n.AttrString("nearest_mode", "round_prefer_floor")
	switch a.NearestMode {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return a, ops.Invalidf(n, "unknown nearest_mode %q", a.NearestMode)
	}
	a.CubicA = float64(n.AttrFloat("cubic_coeff_a", -0.75))
	a.ExcludeOutside = n.AttrInt("exclude_outside", 0) != 0
	a.Extrapolation = float64(n.AttrFloat("extrapolation_value", 0))
	if opset >= 18 {
		a.Antialias = n.AttrInt("antialias", 0) != 0
		a.policy = n.AttrString("keep_aspect_ratio_policy", "stretch")
		switch a.policy {
		case "stretch", "not_larger", "not_smaller":
		default:
			return a, ops.Invalidf(n, "unknown keep_aspect_ratio_policy %q", a.policy)
		}
		a.axes = n.AttrInts("axes", nil)
	}
	return a, nil
}

func checkMode(n *graph.Node, mode string, cubicOK bool) error {
	switch mode {
	case ModeNearest, ModeLinear:
		return nil
	case ModeCubic:
		if cubicOK {
			return nil
		}
	}
	return ops.Invalidf(n, "unknown mode %q", mode)
}

// normAxes validates the axes attribute against the rank; nil means all axes.
func normAxes(n *graph.Node, axes []int64, rank int) ([]int, error) {
	if axes == nil {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(axes))
	seen := make([]bool, rank)
	for i, ax := range axes {
		a, err := ops.NormAxis(ax, rank)
		if err != nil {
			return nil, ops.Invalidf(n, "axes: %v", err)
		}
		if seen[a] {
			return nil, ops.Invalidf(n, "axes %v has a duplicate", axes)
		}
		seen[a] = true
		out[i] = a
	}
	return out, nil
}

// Present reports whether an optional tensor input was given with elements
// (Resize-11 passes an empty scales tensor when sizes is used).
func Present(t *graph.Tensor) bool { return t != nil && t.Len() > 0 }

// Plan is a fully resolved resize: per-axis output length, scale and roi.
type Plan struct {
	InShape []int
	Out     []int
	Scales  []float64
	Roi     []float64 // [starts..., ends...] over all axes, or nil
}

// MakePlan resolves the output shape and per-axis scales from either scales
// or sizes (exactly one must be given), following the ONNX reference: with
// Scales, out = floor(in*scale); with sizes, scale = out/in, adjusted by the
// keep_aspect_ratio_policy.
func MakePlan(n *graph.Node, a Attrs, in []int, roiT, scalesT, sizesT *graph.Tensor) (*Plan, error) {
	rank := len(in)
	axes, err := normAxes(n, a.axes, rank)
	if err != nil {
		return nil, err
	}
	p := &Plan{InShape: in, Out: append([]int{}, in...), Scales: make([]float64, rank)}
	for i := range p.Scales {
		p.Scales[i] = 1
	}
	hasScales, hasSizes := Present(scalesT), Present(sizesT)
	switch {
	case hasScales && hasSizes:
		return nil, ops.Invalidf(n, "only one of scales and sizes may be given")
	case hasScales:
		sc := scalesT.Float64s()
		if len(sc) != len(axes) {
			return nil, ops.Invalidf(n, "scales has %d elements, expected %d", len(sc), len(axes))
		}
		for i, ax := range axes {
			s := sc[i]
			if !(s > 0) || math.IsInf(s, 0) {
				return nil, ops.Invalidf(n, "scales[%d] = %g must be positive and finite", i, s)
			}
			o := math.Floor(float64(in[ax]) * s)
			if o > math.MaxInt32*8 {
				return nil, ops.Invalidf(n, "output dimension %g is too large", o)
			}
			p.Scales[ax] = s
			p.Out[ax] = int(o)
		}
	case hasSizes:
		if sizesT.DType != graph.Int64 && sizesT.DType != graph.Int32 {
			return nil, ops.Invalidf(n, "sizes must be int64, got %v", sizesT.DType)
		}
		sz := sizesT.Int64s()
		if len(sz) != len(axes) {
			return nil, ops.Invalidf(n, "sizes has %d elements, expected %d", len(sz), len(axes))
		}
		for i, ax := range axes {
			if sz[i] < 0 || sz[i] > math.MaxInt32*8 {
				return nil, ops.Invalidf(n, "sizes[%d] = %d is out of range", i, sz[i])
			}
			if in[ax] == 0 {
				if sz[i] != 0 {
					return nil, ops.Invalidf(n, "cannot resize an empty axis %d to %d", ax, sz[i])
				}
				continue
			}
			p.Scales[ax] = float64(sz[i]) / float64(in[ax])
			p.Out[ax] = int(sz[i])
		}
		if a.policy != "stretch" && len(axes) > 0 {
			s := p.Scales[axes[0]]
			for _, ax := range axes[1:] {
				if a.policy == "not_larger" {
					s = math.Min(s, p.Scales[ax])
				} else {
					s = math.Max(s, p.Scales[ax])
				}
			}
			for _, ax := range axes {
				if in[ax] == 0 {
					continue
				}
				p.Scales[ax] = s
				o := math.Floor(s*float64(in[ax]) + 0.5)
				if o > math.MaxInt32*8 {
					return nil, ops.Invalidf(n, "output dimension %g is too large", o)
				}
				p.Out[ax] = int(o)
			}
		}
	default:
		if rank == 0 {
			return p, nil
		}
		return nil, ops.Invalidf(n, "one of scales and sizes must be given")
	}
	if a.Ctm == CtmTFCropAndResize {
		if !Present(roiT) {
			return nil, ops.Invalidf(n, "tf_crop_and_resize needs the roi input")
		}
		r := roiT.Float64s()
		if len(r) != 2*len(axes) {
			return nil, ops.Invalidf(n, "roi has %d elements, expected %d", len(r), 2*len(axes))
		}
		p.Roi = make([]float64, 2*rank)
		for i := 0; i < rank; i++ {
			p.Roi[rank+i] = 1
		}
		for i, ax := range axes {
			p.Roi[ax] = r[i]
			p.Roi[rank+ax] = r[len(axes)+i]
		}
	}
	return p, nil
}

// NearestSources maps each output index of one axis (in → out, scale as in
// Plan.Scales) to the input index a nearest resize reads: the coordinate
// transformation in float64 as the reference computes it, rounded by the
// nearest mode and clamped to the input. It covers the half_pixel,
// pytorch_half_pixel, asymmetric and align_corners transformations (the
// others fall back to half_pixel here; callers check the mode first).
func NearestSources(a Attrs, in, out int, scale float64) []int {
	src := make([]int, out)
	for o := range src {
		src[o] = a.NearestIndex(a.SourceCoord(o, in, out, scale), in)
	}
	return src
}

// SourceCoord is output index o's coordinate in the input (in → out along
// one axis, scale as in Plan.Scales) by the half_pixel,
// pytorch_half_pixel, asymmetric or align_corners transformation, in
// float64 as the reference computes it (other modes: half_pixel; callers
// check the mode first).
func (a Attrs) SourceCoord(o, in, out int, scale float64) float64 {
	xf := float64(o)
	switch a.Ctm {
	case CtmPytorchHalfPixel:
		if out > 1 {
			return (xf+0.5)/scale - 0.5
		}
		return 0
	case CtmAsymmetric:
		return xf / scale
	case CtmAlignCorners:
		// the resized length is in·scale, fractional with scales
		if ow := scale * float64(in); ow != 1 {
			return xf * float64(in-1) / (ow - 1)
		}
		return 0
	}
	return (xf+0.5)/scale - 0.5 // half_pixel
}

// NearestIndex rounds the input coordinate xo by the nearest mode and
// clamps it to the in inputs.
func (a Attrs) NearestIndex(xo float64, in int) int {
	var k float64
	switch a.NearestMode {
	case "floor":
		k = math.Floor(xo)
	case "ceil":
		k = math.Ceil(xo)
	case "round_prefer_ceil":
		k = math.Floor(xo + 0.5)
	default: // round_prefer_floor
		k = math.Ceil(xo - 0.5)
	}
	return min(max(int(k), 0), in-1)
}
