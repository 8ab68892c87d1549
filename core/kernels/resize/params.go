package resize

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Coordinate transformation modes (attribute coordinate_transformation_mode).
const (
	ctmHalfPixel          = "half_pixel"
	ctmHalfPixelSymmetric = "half_pixel_symmetric"
	ctmPytorchHalfPixel   = "pytorch_half_pixel"
	ctmAlignCorners       = "align_corners"
	ctmAsymmetric         = "asymmetric"
	ctmTFHalfPixelForNN   = "tf_half_pixel_for_nn"
	ctmTFCropAndResize    = "tf_crop_and_resize"
)

// Interpolation modes (attribute mode).
const (
	modeNearest = "nearest"
	modeLinear  = "linear"
	modeCubic   = "cubic"
)

// attrs are the interpolation settings shared by Resize and Upsample, with
// the defaults of the node's opset already applied.
type attrs struct {
	mode           string
	ctm            string
	nearestMode    string
	cubicA         float64
	excludeOutside bool
	extrapolation  float64
	antialias      bool
	policy         string // keep_aspect_ratio_policy
	axes           []int64
}

// resizeAttrs reads Resize's attributes for the given opset. Resize-10 has
// only mode and behaves like Upsample (asymmetric coordinates, nearest
// rounds down).
func resizeAttrs(n *graph.Node, opset int64) (attrs, error) {
	a := attrs{
		mode:          n.AttrString("mode", modeNearest),
		ctm:           ctmHalfPixel,
		nearestMode:   "round_prefer_floor",
		cubicA:        -0.75,
		extrapolation: 0,
		policy:        "stretch",
	}
	if opset < 11 {
		a.ctm = ctmAsymmetric
		a.nearestMode = "floor"
		if err := checkMode(n, a.mode, false); err != nil {
			return a, err
		}
		return a, nil
	}
	if err := checkMode(n, a.mode, true); err != nil {
		return a, err
	}
	a.ctm = n.AttrString("coordinate_transformation_mode", ctmHalfPixel)
	switch a.ctm {
	case ctmHalfPixel, ctmHalfPixelSymmetric, ctmPytorchHalfPixel, ctmAlignCorners,
		ctmAsymmetric, ctmTFHalfPixelForNN, ctmTFCropAndResize:
	default:
		return a, kernels.Invalidf(n, "unknown coordinate_transformation_mode %q", a.ctm)
	}
	a.nearestMode = n.AttrString("nearest_mode", "round_prefer_floor")
	switch a.nearestMode {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		return a, kernels.Invalidf(n, "unknown nearest_mode %q", a.nearestMode)
	}
	a.cubicA = float64(n.AttrFloat("cubic_coeff_a", -0.75))
	a.excludeOutside = n.AttrInt("exclude_outside", 0) != 0
	a.extrapolation = float64(n.AttrFloat("extrapolation_value", 0))
	if opset >= 18 {
		a.antialias = n.AttrInt("antialias", 0) != 0
		a.policy = n.AttrString("keep_aspect_ratio_policy", "stretch")
		switch a.policy {
		case "stretch", "not_larger", "not_smaller":
		default:
			return a, kernels.Invalidf(n, "unknown keep_aspect_ratio_policy %q", a.policy)
		}
		a.axes = n.AttrInts("axes", nil)
	}
	return a, nil
}

func checkMode(n *graph.Node, mode string, cubicOK bool) error {
	switch mode {
	case modeNearest, modeLinear:
		return nil
	case modeCubic:
		if cubicOK {
			return nil
		}
	}
	return kernels.Invalidf(n, "unknown mode %q", mode)
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
		a, err := kernels.NormAxis(ax, rank)
		if err != nil {
			return nil, kernels.Invalidf(n, "axes: %v", err)
		}
		if seen[a] {
			return nil, kernels.Invalidf(n, "axes %v has a duplicate", axes)
		}
		seen[a] = true
		out[i] = a
	}
	return out, nil
}

// present reports whether an optional tensor input was given with elements
// (Resize-11 passes an empty scales tensor when sizes is used).
func present(t *graph.Tensor) bool { return t != nil && t.Len() > 0 }

// plan is a fully resolved resize: per-axis output length, scale and roi.
type plan struct {
	inShape []int
	out     []int
	scales  []float64
	roi     []float64 // [starts..., ends...] over all axes, or nil
}

// makePlan resolves the output shape and per-axis scales from either scales
// or sizes (exactly one must be given), following the ONNX reference: with
// scales, out = floor(in*scale); with sizes, scale = out/in, adjusted by the
// keep_aspect_ratio_policy.
func makePlan(n *graph.Node, a attrs, in []int, roiT, scalesT, sizesT *graph.Tensor) (*plan, error) {
	rank := len(in)
	axes, err := normAxes(n, a.axes, rank)
	if err != nil {
		return nil, err
	}
	p := &plan{inShape: in, out: append([]int{}, in...), scales: make([]float64, rank)}
	for i := range p.scales {
		p.scales[i] = 1
	}
	hasScales, hasSizes := present(scalesT), present(sizesT)
	switch {
	case hasScales && hasSizes:
		return nil, kernels.Invalidf(n, "only one of scales and sizes may be given")
	case hasScales:
		sc := scalesT.Float64s()
		if len(sc) != len(axes) {
			return nil, kernels.Invalidf(n, "scales has %d elements, expected %d", len(sc), len(axes))
		}
		for i, ax := range axes {
			s := sc[i]
			if !(s > 0) || math.IsInf(s, 0) {
				return nil, kernels.Invalidf(n, "scales[%d] = %g must be positive and finite", i, s)
			}
			o := math.Floor(float64(in[ax]) * s)
			if o > math.MaxInt32*8 {
				return nil, kernels.Invalidf(n, "output dimension %g is too large", o)
			}
			p.scales[ax] = s
			p.out[ax] = int(o)
		}
	case hasSizes:
		if sizesT.DType != graph.Int64 && sizesT.DType != graph.Int32 {
			return nil, kernels.Invalidf(n, "sizes must be int64, got %v", sizesT.DType)
		}
		sz := sizesT.Int64s()
		if len(sz) != len(axes) {
			return nil, kernels.Invalidf(n, "sizes has %d elements, expected %d", len(sz), len(axes))
		}
		for i, ax := range axes {
			if sz[i] < 0 || sz[i] > math.MaxInt32*8 {
				return nil, kernels.Invalidf(n, "sizes[%d] = %d is out of range", i, sz[i])
			}
			if in[ax] == 0 {
				if sz[i] != 0 {
					return nil, kernels.Invalidf(n, "cannot resize an empty axis %d to %d", ax, sz[i])
				}
				continue
			}
			p.scales[ax] = float64(sz[i]) / float64(in[ax])
			p.out[ax] = int(sz[i])
		}
		if a.policy != "stretch" && len(axes) > 0 {
			s := p.scales[axes[0]]
			for _, ax := range axes[1:] {
				if a.policy == "not_larger" {
					s = math.Min(s, p.scales[ax])
				} else {
					s = math.Max(s, p.scales[ax])
				}
			}
			for _, ax := range axes {
				if in[ax] == 0 {
					continue
				}
				p.scales[ax] = s
				o := math.Floor(s*float64(in[ax]) + 0.5)
				if o > math.MaxInt32*8 {
					return nil, kernels.Invalidf(n, "output dimension %g is too large", o)
				}
				p.out[ax] = int(o)
			}
		}
	default:
		if rank == 0 {
			return p, nil
		}
		return nil, kernels.Invalidf(n, "one of scales and sizes must be given")
	}
	if a.ctm == ctmTFCropAndResize {
		if !present(roiT) {
			return nil, kernels.Invalidf(n, "tf_crop_and_resize needs the roi input")
		}
		r := roiT.Float64s()
		if len(r) != 2*len(axes) {
			return nil, kernels.Invalidf(n, "roi has %d elements, expected %d", len(r), 2*len(axes))
		}
		p.roi = make([]float64, 2*rank)
		for i := 0; i < rank; i++ {
			p.roi[rank+i] = 1
		}
		for i, ax := range axes {
			p.roi[ax] = r[i]
			p.roi[rank+ax] = r[len(axes)+i]
		}
	}
	return p, nil
}
