package vision

import (
	visionops "github.com/switchyard-hal/switchyard/core/ops/vision"

	"math"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "NonMaxSuppression", nmsKernel)
}

// nmsBox is a box as (ymin, xmin, ymax, xmax).
type nmsBox struct{ y1, x1, y2, x2 float64 }

func (b nmsBox) area() float64 { return (b.y2 - b.y1) * (b.x2 - b.x1) }

// overlaps reports whether the IoU of a and b is strictly above thr.
func overlaps(a, b nmsBox, thr float64) bool {
	iy1, ix1 := math.Max(a.y1, b.y1), math.Max(a.x1, b.x1)
	iy2, ix2 := math.Min(a.y2, b.y2), math.Min(a.x2, b.x2)
	if iy2 <= iy1 || ix2 <= ix1 {
		return false
	}
	inter := (iy2 - iy1) * (ix2 - ix1)
	aa, ab := a.area(), b.area()
	if aa <= 0 || ab <= 0 {
		return false
	}
	union := aa + ab - inter
	if union <= 0 {
		return false
	}
	return inter/union > thr
}

func scalarInput(t *graph.Tensor, name string) (float64, bool, error) {
	if t == nil || t.Len() == 0 {
		return 0, false, nil
	}
	if t.Len() != 1 {
		return 0, false, visionops.ErrInvalid("%s must hold one value, has shape %v", name, t.Shape)
	}
	return t.Float64At(0), true, nil
}

func nmsKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	boxesT, scoresT := kernels.Input(in, 0), kernels.Input(in, 1)
	if boxesT == nil || scoresT == nil {
		return nil, kernels.Invalidf(n, "boxes and scores are required")
	}
	if len(boxesT.Shape) != 3 || boxesT.Shape[2] != 4 {
		return nil, kernels.Invalidf(n, "boxes must have shape [batches, boxes, 4], got %v", boxesT.Shape)
	}
	if len(scoresT.Shape) != 3 || scoresT.Shape[0] != boxesT.Shape[0] || scoresT.Shape[2] != boxesT.Shape[1] {
		return nil, kernels.Invalidf(n, "scores shape %v does not match boxes %v (want [batches, classes, boxes])", scoresT.Shape, boxesT.Shape)
	}
	if !scoresT.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "scores must be a float tensor, got %v", scoresT.DType)
	}
	maxOut := int64(0)
	if t := kernels.Input(in, 2); t != nil && t.Len() > 0 {
		if t.Len() != 1 || t.DType != graph.Int64 {
			return nil, kernels.Invalidf(n, "max_output_boxes_per_class must be one int64, got %v%v", t.DType, t.Shape)
		}
		maxOut = t.Int64At(0)
	}
	iouThr, _, err := scalarInput(kernels.Input(in, 3), "iou_threshold")
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	if !(iouThr >= 0 && iouThr <= 1) {
		return nil, kernels.Invalidf(n, "iou_threshold %v must be in [0, 1]", iouThr)
	}
	scoreThr, hasScoreThr, err := scalarInput(kernels.Input(in, 4), "score_threshold")
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	center := n.AttrInt("center_point_box", 0)
	if center != 0 && center != 1 {
		return nil, kernels.Invalidf(n, "center_point_box must be 0 or 1, got %d", center)
	}
	B, N, C := boxesT.Shape[0], boxesT.Shape[1], scoresT.Shape[1]
	bv := boxesT.Float64s()
	sv := scoresT.Float64s()
	boxes := make([]nmsBox, B*N)
	for i := range boxes {
		a, b, c, d := bv[4*i], bv[4*i+1], bv[4*i+2], bv[4*i+3]
		if center == 1 {
			// [x_center, y_center, width, height]
			boxes[i] = nmsBox{b - d/2, a - c/2, b + d/2, a + c/2}
		} else {
			// [y1, x1, y2, x2], any diagonal pair of corners
			boxes[i] = nmsBox{math.Min(a, c), math.Min(b, d), math.Max(a, c), math.Max(b, d)}
		}
	}
	var sel []int64
	if maxOut > 0 {
		cand := make([]int, 0, N)
		var kept []int
		for b := 0; b < B; b++ {
			bx := boxes[b*N : (b+1)*N]
			for c := 0; c < C; c++ {
				sc := sv[(b*C+c)*N : (b*C+c+1)*N]
				cand = cand[:0]
				for i, s := range sc {
					if s != s {
						continue
					}
					if !hasScoreThr || s > scoreThr {
						cand = append(cand, i)
					}
				}
				// Highest score first; ties keep the lower box index first.
				sort.SliceStable(cand, func(i, j int) bool { return sc[cand[i]] > sc[cand[j]] })
				kept = kept[:0]
				for _, i := range cand {
					if int64(len(kept)) >= maxOut {
						break
					}
					ok := true
					for _, k := range kept {
						if overlaps(bx[k], bx[i], iouThr) {
							ok = false
							break
						}
					}
					if ok {
						kept = append(kept, i)
						sel = append(sel, int64(b), int64(c), int64(i))
					}
				}
			}
		}
	}
	out, err := ctx.New(graph.Int64, []int{len(sel) / 3, 3})
	if err != nil {
		return nil, err
	}
	copy(graph.Data[int64](out), sel)
	return ctx.Outputs(out), nil
}
