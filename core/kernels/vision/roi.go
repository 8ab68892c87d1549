package vision

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "RoiAlign", roiAlignKernel)
	kernels.RegisterKernel("", "MaxRoiPool", maxRoiPoolKernel)
}

func roiAlignKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, rois, bi := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	if x == nil || rois == nil || bi == nil {
		return nil, kernels.Invalidf(n, "X, rois and batch_indices are required")
	}
	if len(x.Shape) != 4 {
		return nil, kernels.Invalidf(n, "X must be 4-D [N, C, H, W], got %v", x.Shape)
	}
	if !rois.DType.IsFloat() || len(rois.Shape) != 2 || rois.Shape[1] != 4 {
		return nil, kernels.Invalidf(n, "rois must be a float tensor of shape [num_rois, 4], got %v%v", rois.DType, rois.Shape)
	}
	R := rois.Shape[0]
	if !bi.DType.IsInteger() || len(bi.Shape) != 1 || bi.Shape[0] != R {
		return nil, kernels.Invalidf(n, "batch_indices must be an integer tensor of shape [%d], got %v%v", R, bi.DType, bi.Shape)
	}
	mode := n.AttrString("mode", "avg")
	if mode != "avg" && mode != "max" {
		return nil, kernels.Invalidf(n, "unknown mode %q", mode)
	}
	ctm := "output_half_pixel"
	if ctx.Opset >= 16 {
		ctm = n.AttrString("coordinate_transformation_mode", "half_pixel")
	}
	if ctm != "half_pixel" && ctm != "output_half_pixel" {
		return nil, kernels.Invalidf(n, "unknown coordinate_transformation_mode %q", ctm)
	}
	oh, ow := n.AttrInt("output_height", 1), n.AttrInt("output_width", 1)
	sr := n.AttrInt("sampling_ratio", 0)
	if oh < 1 || ow < 1 || oh > 1<<31 || ow > 1<<31 || sr < 0 || sr > 1<<20 {
		return nil, kernels.Invalidf(n, "bad output_height %d, output_width %d or sampling_ratio %d", oh, ow, sr)
	}
	scale := float64(n.AttrFloat("spatial_scale", 1))
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	PH, PW := int(oh), int(ow)
	outShape := []int{R, C, PH, PW}
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	batches := bi.Int64s()
	for _, b := range batches {
		if b < 0 || b >= int64(N) {
			return nil, kernels.Invalidf(n, "batch index %d out of range [0, %d)", b, N)
		}
	}
	xv := x.Float64s()
	rv := rois.Float64s()
	yv := make([]float64, kernels.Prod(outShape))
	off := 0.0
	if ctm == "half_pixel" {
		off = 0.5
	}
	var samples []roiSample
	for r := 0; r < R; r++ {
		if H == 0 || W == 0 {
			break
		}
		x1, y1 := rv[4*r]*scale-off, rv[4*r+1]*scale-off
		x2, y2 := rv[4*r+2]*scale-off, rv[4*r+3]*scale-off
		rw, rh := x2-x1, y2-y1
		if ctm == "output_half_pixel" {
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		bh, bw := rh/float64(PH), rw/float64(PW)
		gh, gw := int(sr), int(sr)
		if sr == 0 {
			gh, gw = int(clampF(math.Ceil(rh/float64(PH)))), int(clampF(math.Ceil(rw/float64(PW))))
			if rh != rh {
				gh = 0
			}
			if rw != rw {
				gw = 0
			}
			gh, gw = max(gh, 0), max(gw, 0)
		}
		if gh > 1<<20 || gw > 1<<20 || gh*gw > 1<<20 {
			return nil, kernels.Invalidf(n, "roi %d needs a %dx%d sampling grid per bin; too large", r, gh, gw)
		}
		count := float64(max(gh*gw, 1))
		b := int(batches[r])
		for ph := 0; ph < PH; ph++ {
			for pw := 0; pw < PW; pw++ {
				samples = samples[:0]
				for iy := 0; iy < gh; iy++ {
					yy := y1 + float64(ph)*bh + (float64(iy)+0.5)*bh/float64(gh)
					for ix := 0; ix < gw; ix++ {
						xx := x1 + float64(pw)*bw + (float64(ix)+0.5)*bw/float64(gw)
						samples = append(samples, bilinearSample(yy, xx, H, W))
					}
				}
				for c := 0; c < C; c++ {
					plane := xv[(b*C+c)*H*W : (b*C+c+1)*H*W]
					o := ((r*C+c)*PH+ph)*PW + pw
					if mode == "avg" {
						acc := 0.0
						for _, s := range samples {
							acc += s.w[0]*plane[s.pos[0]] + s.w[1]*plane[s.pos[1]] + s.w[2]*plane[s.pos[2]] + s.w[3]*plane[s.pos[3]]
						}
						yv[o] = acc / count
						continue
					}
					// max mode (as ONNX Runtime and the ONNX reference): the
					// largest weighted corner value over all samples
					acc := 0.0
					for i, s := range samples {
						v := math.Max(math.Max(math.Max(s.w[0]*plane[s.pos[0]], s.w[1]*plane[s.pos[1]]), s.w[2]*plane[s.pos[2]]), s.w[3]*plane[s.pos[3]])
						if i == 0 || v > acc || v != v {
							acc = v
						}
					}
					yv[o] = acc
				}
			}
		}
	}
	out, err := newFromFloat64(ctx, x.DType, outShape, yv)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// roiSample is one bilinear sample: 4 positions in the plane and weights.
type roiSample struct {
	pos [4]int
	w   [4]float64
}

// bilinearSample computes RoiAlign's bilinear weights at (y, x) in an H×W
// plane (H, W > 0); points more than one pixel outside get zero weights.
func bilinearSample(y, x float64, H, W int) (s roiSample) {
	if y < -1 || y > float64(H) || x < -1 || x > float64(W) || y != y || x != x {
		return s
	}
	y, x = math.Max(y, 0), math.Max(x, 0)
	yl, xl := int(y), int(x)
	var yh, xh int
	if yl >= H-1 {
		yl, yh = H-1, H-1
		y = float64(yl)
	} else {
		yh = yl + 1
	}
	if xl >= W-1 {
		xl, xh = W-1, W-1
		x = float64(xl)
	} else {
		xh = xl + 1
	}
	ly, lx := y-float64(yl), x-float64(xl)
	hy, hx := 1-ly, 1-lx
	s.pos = [4]int{yl*W + xl, yl*W + xh, yh*W + xl, yh*W + xh}
	s.w = [4]float64{hy * hx, hy * lx, ly * hx, ly * lx}
	return s
}

func maxRoiPoolKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, rois := kernels.Input(in, 0), kernels.Input(in, 1)
	if x == nil || rois == nil {
		return nil, kernels.Invalidf(n, "X and rois are required")
	}
	if len(x.Shape) != 4 {
		return nil, kernels.Invalidf(n, "X must be 4-D [N, C, H, W], got %v", x.Shape)
	}
	if !rois.DType.IsFloat() || len(rois.Shape) != 2 || rois.Shape[1] != 5 {
		return nil, kernels.Invalidf(n, "rois must be a float tensor of shape [num_rois, 5], got %v%v", rois.DType, rois.Shape)
	}
	ps := n.AttrInts("pooled_shape", nil)
	if len(ps) != 2 || ps[0] < 1 || ps[1] < 1 || ps[0] > 1<<31 || ps[1] > 1<<31 {
		return nil, kernels.Invalidf(n, "pooled_shape must be two positive ints, got %v", ps)
	}
	scale := float64(n.AttrFloat("spatial_scale", 1))
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	R, PH, PW := rois.Shape[0], int(ps[0]), int(ps[1])
	outShape := []int{R, C, PH, PW}
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	xv, rv := x.Float64s(), rois.Float64s()
	yv := make([]float64, kernels.Prod(outShape))
	// round half away from zero, clamped to a safe int range
	rnd := func(v float64) int { return int(clampF(math.Round(v))) }
	for r := 0; r < R; r++ {
		bf := rv[5*r]
		if !(bf >= 0 && bf < float64(N)) {
			return nil, kernels.Invalidf(n, "roi %d: batch index %v out of range [0, %d)", r, bf, N)
		}
		b := int(bf)
		sw, sh := rnd(rv[5*r+1]*scale), rnd(rv[5*r+2]*scale)
		ew, eh := rnd(rv[5*r+3]*scale), rnd(rv[5*r+4]*scale)
		rh, rw := max(eh-sh+1, 1), max(ew-sw+1, 1)
		bh, bw := float64(rh)/float64(PH), float64(rw)/float64(PW)
		for ph := 0; ph < PH; ph++ {
			hs := min(max(int(math.Floor(float64(ph)*bh))+sh, 0), H)
			he := min(max(int(math.Ceil(float64(ph+1)*bh))+sh, 0), H)
			for pw := 0; pw < PW; pw++ {
				ws := min(max(int(math.Floor(float64(pw)*bw))+sw, 0), W)
				we := min(max(int(math.Ceil(float64(pw+1)*bw))+sw, 0), W)
				for c := 0; c < C; c++ {
					o := ((r*C+c)*PH+ph)*PW + pw
					if he <= hs || we <= ws {
						yv[o] = 0
						continue
					}
					plane := xv[(b*C+c)*H*W : (b*C+c+1)*H*W]
					best := math.Inf(-1)
					for h := hs; h < he; h++ {
						for w := ws; w < we; w++ {
							if v := plane[h*W+w]; v > best || v != v {
								best = v
								if v != v {
									break
								}
							}
						}
						if best != best {
							break
						}
					}
					yv[o] = best
				}
			}
		}
	}
	out, err := newFromFloat64(ctx, x.DType, outShape, yv)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
