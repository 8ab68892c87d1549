package vision

import (
	visionops "github.com/switchyard-hal/switchyard/core/ops/vision"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Col2Im", col2imKernel)
}

// col2imPlan maps each (kernel offset, block position) pair to its image
// position: src[k*L+l] is the flat image index or -1 when in padding.
type col2imPlan struct {
	N, C, K, L int
	imgSize    int
	src        []int
}

func col2imKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, imgT, blkT := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	if x == nil || imgT == nil || blkT == nil {
		return nil, kernels.Invalidf(n, "input, image_shape and block_shape are required")
	}
	if imgT.DType != graph.Int64 || blkT.DType != graph.Int64 || len(imgT.Shape) != 1 || len(blkT.Shape) != 1 {
		return nil, kernels.Invalidf(n, "image_shape and block_shape must be 1-D int64 tensors")
	}
	img, blk := imgT.Int64s(), blkT.Int64s()
	r := len(img)
	if r < 1 || len(blk) != r {
		return nil, kernels.Invalidf(n, "image_shape %v and block_shape %v must be non-empty and of equal length", img, blk)
	}
	if len(x.Shape) != 3 {
		return nil, kernels.Invalidf(n, "input must have shape [N, C*prod(block_shape), L], got %v", x.Shape)
	}
	kernel := make([]int, r)
	imgDims := make([]int, r)
	K := 1
	for i := 0; i < r; i++ {
		if blk[i] < 1 || blk[i] > 1<<31 || img[i] < 0 || img[i] > 1<<31 {
			return nil, kernels.Invalidf(n, "bad image_shape %v or block_shape %v", img, blk)
		}
		kernel[i], imgDims[i] = int(blk[i]), int(img[i])
		K *= kernel[i]
		if K > 1<<31 {
			return nil, kernels.Invalidf(n, "block_shape %v is too large", blk)
		}
	}
	w, err := visionops.ReadWindow(n, kernel)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	counts, err := w.OutSizes(imgDims, "NOTSET", false)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	L := kernels.Prod(counts)
	if x.Shape[1]%K != 0 || x.Shape[2] != L {
		return nil, kernels.Invalidf(n, "input shape %v does not match block_shape %v (%d values) and %d blocks", x.Shape, blk, K, L)
	}
	p := col2imPlan{N: x.Shape[0], C: x.Shape[1] / K, K: K, L: L, imgSize: kernels.Prod(imgDims)}
	outShape := append([]int{p.N, p.C}, imgDims...)
	out, err := ctx.New(x.DType, outShape)
	if err != nil {
		return nil, err
	}
	if x.Len() == 0 {
		return ctx.Outputs(out), nil
	}
	if _, err := graph.CheckAlloc(graph.Int64, []int{K, L}); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	p.src = make([]int, K*L)
	imgStr := kernels.Strides(imgDims)
	for kc := newCounter(kernel); !kc.done; kc.next() {
		kf := 0
		for i, v := range kc.idx {
			kf = kf*kernel[i] + v
		}
		for lc := newCounter(counts); !lc.done; lc.next() {
			lf, at := 0, 0
			for i, v := range lc.idx {
				lf = lf*counts[i] + v
				pos := v*w.Strides[i] - w.Pads[i] + kc.idx[i]*w.Dilations[i]
				if at >= 0 && pos >= 0 && pos < imgDims[i] {
					at += pos * imgStr[i]
				} else {
					at = -1
				}
			}
			p.src[kf*L+lf] = at
		}
	}
	switch d := out.Data.(type) {
	case []float32:
		col2im(&p, graph.Data[float32](x), d)
	case []float64:
		col2im(&p, graph.Data[float64](x), d)
	case []graph.F16, []graph.BF16:
		y := make([]float32, out.Len())
		col2im(&p, graph.Data[float32](kernels.ToFloat32(x)), y)
		if out, err = kernels.FromFloat32(ctx, x.DType, outShape, y); err != nil {
			return nil, err
		}
	case []int8:
		col2im(&p, graph.Data[int8](x), d)
	case []int16:
		col2im(&p, graph.Data[int16](x), d)
	case []int32:
		col2im(&p, graph.Data[int32](x), d)
	case []int64:
		col2im(&p, graph.Data[int64](x), d)
	case []uint8:
		col2im(&p, graph.Data[uint8](x), d)
	case []uint16:
		col2im(&p, graph.Data[uint16](x), d)
	case []uint32:
		col2im(&p, graph.Data[uint32](x), d)
	case []uint64:
		col2im(&p, graph.Data[uint64](x), d)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func col2im[T graph.Numeric](p *col2imPlan, x, y []T) {
	KL := p.K * p.L
	for b := 0; b < p.N; b++ {
		for c := 0; c < p.C; c++ {
			xs := x[(b*p.C+c)*KL : (b*p.C+c+1)*KL]
			ys := y[(b*p.C+c)*p.imgSize : (b*p.C+c+1)*p.imgSize]
			for i, at := range p.src {
				if at >= 0 {
					ys[at] += xs[i]
				}
			}
		}
	}
}
