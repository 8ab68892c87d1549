package xnnpack

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Resize maps to xnn_define_static_resize_bilinear_2d, the only resize this
// libXNNPACK (Debian 12, 2022-02) has: bilinear, NHWC, H and W only. Its
// sampling step is in/out per axis, and its flags select the coordinate
// transformation:
//
//	0                                half_pixel: (y+0.5)·in/out − 0.5, clamped to [0, in−1]
//	XNN_FLAG_ALIGN_CORNERS           align_corners: y·(in−1)/(out−1)
//	XNN_FLAG_TENSORFLOW_LEGACY_MODE  asymmetric: y·in/out
//
// ONNX uses 1/scale as the step when scales are given, so a scale is taken
// only when out == in·scale exactly (e.g. 2 on any size), where the two
// agree. The edge handling matches ONNX's (edge padding of the neighbours).

// resizeFlags returns the XNNPACK flags for a Resize node's coordinate
// transformation, or a reason it has none.
func resizeFlags(n *graph.Node, opset int64) (uint32, string) {
	if opset < 11 {
		return xnnFlagTFLegacyMode, "" // Resize-10: asymmetric
	}
	switch ctm := n.AttrString("coordinate_transformation_mode", "half_pixel"); ctm {
	case "half_pixel", "pytorch_half_pixel", "half_pixel_symmetric":
		// pytorch_half_pixel differs only for an output length of 1, and
		// half_pixel_symmetric only when out != in·scale; both are checked
		// with the shapes
		return 0, ""
	case "align_corners":
		return xnnFlagAlignCorners, ""
	case "asymmetric":
		return xnnFlagTFLegacyMode, ""
	default:
		return 0, fmt.Sprintf("Resize coordinate_transformation_mode=%q: XNNPACK's bilinear resize implements half_pixel, pytorch_half_pixel, align_corners and asymmetric only", ctm)
	}
}

// resizeParams returns the constant scales and sizes inputs (nil when
// absent or empty).
func resizeParams(n *graph.Node, opset int64, konst func(name string) *graph.Tensor) (scales []float64, sizes []int64, why string) {
	si, zi := 2, 3
	if opset < 11 {
		si, zi = 1, -1
	}
	if name := n.Input(si); name != "" {
		k := konst(name)
		if k == nil {
			return nil, nil, "Resize scales must be a constant"
		}
		if k.Len() > 0 {
			if !k.DType.IsFloat() {
				return nil, nil, fmt.Sprintf("Resize scales are %v, want float", k.DType)
			}
			for i := 0; i < k.Len(); i++ {
				scales = append(scales, k.Float64At(i))
			}
		}
	}
	if zi >= 0 {
		if name := n.Input(zi); name != "" {
			k := konst(name)
			if k == nil || k.DType != graph.Int64 {
				return nil, nil, "Resize sizes must be an int64 constant"
			}
			if k.Len() > 0 {
				sizes = k.Int64s()
			}
		}
	}
	if scales == nil && sizes == nil {
		return nil, nil, "Resize has neither scales nor sizes"
	}
	return scales, sizes, ""
}

// checkResize gives the reason a Resize node cannot be mapped, "" when it
// can (as far as the shapes known at load tell; lower checks again).
func checkResize(n *graph.Node, opset int64, ti typeInfo) string {
	mode := n.AttrString("mode", "nearest")
	if mode != "linear" {
		return fmt.Sprintf("Resize mode=%q: this libXNNPACK (Debian 12, 2022-02) has bilinear resize only (no nearest or cubic node)", mode)
	}
	shape := ti.typeOf(n.Input(0)).Shape
	if len(shape) != 4 {
		return fmt.Sprintf("Resize on a rank-%d input; XNNPACK's bilinear resize takes rank 4 (NCHW, scaling H and W)", len(shape))
	}
	if _, why := resizeFlags(n, opset); why != "" {
		return why
	}
	if opset >= 18 {
		if n.AttrInt("antialias", 0) != 0 {
			return "Resize antialias=1: XNNPACK's bilinear resize has no antialias filter"
		}
		if ax := n.AttrInts("axes", nil); ax != nil {
			return fmt.Sprintf("Resize axes=%v is not mapped (give scales or sizes for all four axes)", ax)
		}
	}
	scales, sizes, why := resizeParams(n, opset, ti.constant)
	if why != "" {
		return why
	}
	if opset >= 18 && sizes != nil {
		if p := n.AttrString("keep_aspect_ratio_policy", "stretch"); p != "stretch" {
			return fmt.Sprintf("Resize keep_aspect_ratio_policy=%q is not mapped", p)
		}
	}
	if scales != nil {
		if len(scales) != 4 {
			return fmt.Sprintf("Resize scales %v: want 4 values", scales)
		}
		if scales[0] != 1 || scales[1] != 1 {
			return fmt.Sprintf("Resize scales %v: XNNPACK resizes H and W only (N and C scales must be 1)", scales)
		}
		for i := 2; i < 4; i++ {
			if !(scales[i] > 0) {
				return fmt.Sprintf("Resize scales %v must be positive", scales)
			}
			if d := shape[i]; d.Static() {
				if why := resizeStep(n, opset, i, int(d.Value), int(math.Floor(float64(d.Value)*scales[i])), scales[i]); why != "" {
					return why
				}
			}
		}
	} else {
		if len(sizes) != 4 {
			return fmt.Sprintf("Resize sizes %v: want 4 values", sizes)
		}
		for i := 0; i < 2; i++ {
			if d := shape[i]; d.Static() && d.Value != sizes[i] {
				return fmt.Sprintf("Resize sizes %v: XNNPACK resizes H and W only (N and C must stay %v)", sizes, shape[:2])
			}
		}
		for i := 2; i < 4; i++ {
			if sizes[i] < 1 {
				return fmt.Sprintf("Resize sizes %v must be positive", sizes)
			}
			if d := shape[i]; d.Static() {
				if why := resizeStep(n, opset, i, int(d.Value), int(sizes[i]), 0); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

// resizeStep checks that XNNPACK's sampling of axis (in → out; scale 0 when
// given by sizes) is the one ONNX asks for.
func resizeStep(n *graph.Node, opset int64, axis, in, out int, scale float64) string {
	if out < 1 {
		return fmt.Sprintf("Resize to an empty axis %d (%d → %d)", axis, in, out)
	}
	if scale != 0 && math.Abs(float64(in)*scale-float64(out)) > 1e-6*float64(out) {
		return fmt.Sprintf("Resize scale %g on axis %d of length %d gives %d, not %g: XNNPACK samples with step in/out, ONNX with 1/scale", scale, axis, in, out, float64(in)*scale)
	}
	if opset >= 11 && out == 1 && n.AttrString("coordinate_transformation_mode", "half_pixel") == "pytorch_half_pixel" {
		return "Resize pytorch_half_pixel to a length-1 axis samples at 0; XNNPACK's half-pixel resize samples the centre"
	}
	return ""
}

// resize lowers a bilinear Resize to one XNNPACK node on NHWC data.
func (b *builder) resize(n *graph.Node, x *val, oshape []int) error {
	op := b.opset("")
	flags, why := resizeFlags(n, op)
	if why != "" {
		return b.nodeErr(n, "%s", why)
	}
	scales, _, why := resizeParams(n, op, func(name string) *graph.Tensor {
		if v := b.vals[name]; v != nil {
			return v.konst
		}
		return nil
	})
	if why != "" {
		return b.nodeErr(n, "%s", why)
	}
	if len(oshape) != 4 || oshape[0] != x.shape[0] || oshape[1] != x.shape[1] {
		return b.nodeErr(n, "Resize %v → %v changes N or C; XNNPACK resizes H and W only", x.shape, oshape)
	}
	for i := 2; i < 4; i++ {
		s := 0.0
		if scales != nil {
			s = scales[i]
		}
		if why := resizeStep(n, op, i, x.shape[i], oshape[i], s); why != "" {
			return b.nodeErr(n, "%s", why)
		}
	}
	in := b.need(x, nhwc)
	out := b.newTensor(permute(oshape, nhwc))
	b.add(&xop{kind: "resize", in: []*tensor{in}, out: out, sz: []int{oshape[2], oshape[3]}, u: []uint32{flags}})
	b.setOut(n, &val{t: out, shape: oshape, perm: nhwc})
	return nil
}
