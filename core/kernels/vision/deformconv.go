package vision

import (
	visionops "github.com/switchyard-hal/switchyard/core/ops/vision"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "DeformConv", deformConvKernel)
}

func deformConvKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, off := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	b, mask := kernels.Input(in, 3), kernels.Input(in, 4)
	if x == nil || w == nil || off == nil {
		return nil, kernels.Invalidf(n, "X, W and offset are required")
	}
	rank := len(x.Shape)
	nd := rank - 2
	if nd < 1 || len(w.Shape) != rank || len(off.Shape) != rank {
		return nil, kernels.Invalidf(n, "X %v, W %v and offset %v must have the same rank >= 3", x.Shape, w.Shape, off.Shape)
	}
	for _, t := range []*graph.Tensor{w, off, b, mask} {
		if t != nil && t.DType != x.DType {
			return nil, kernels.Invalidf(n, "all float inputs must share X's dtype %v, got %v", x.DType, t.DType)
		}
	}
	N, C, OC := x.Shape[0], x.Shape[1], w.Shape[0]
	group := n.AttrInt("group", 1)
	G := n.AttrInt("offset_group", 1)
	if group < 1 || G < 1 || group > 1<<31 || G > 1<<31 {
		return nil, kernels.Invalidf(n, "group %d and offset_group %d must be positive", group, G)
	}
	grp, og := int(group), int(G)
	if C != w.Shape[1]*grp || OC%grp != 0 {
		return nil, kernels.Invalidf(n, "X %v and W %v do not match group %d", x.Shape, w.Shape, grp)
	}
	if C%og != 0 {
		return nil, kernels.Invalidf(n, "%d input channels are not divisible by offset_group %d", C, og)
	}
	kernel := append([]int{}, w.Shape[2:]...)
	if ks := n.AttrInts("kernel_shape", nil); ks != nil {
		k, err := visionops.ReadInts(n, "kernel_shape", nd, 1, 1)
		if err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		if !graph.SameShape(k, kernel) {
			return nil, kernels.Invalidf(n, "kernel_shape %v does not match W's %v", k, kernel)
		}
	}
	win, err := visionops.ReadWindow(n, kernel)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	inSp := x.Shape[2:]
	outSp, err := win.OutSizes(inSp, "NOTSET", false)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	K := kernels.Prod(kernel)
	wantOff := append([]int{N, og * K * nd}, outSp...)
	if !graph.SameShape(off.Shape, wantOff) {
		return nil, kernels.Invalidf(n, "offset shape %v, expected %v", off.Shape, wantOff)
	}
	if mask != nil {
		wantMask := append([]int{N, og * K}, outSp...)
		if !graph.SameShape(mask.Shape, wantMask) {
			return nil, kernels.Invalidf(n, "mask shape %v, expected %v", mask.Shape, wantMask)
		}
	}
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != OC) {
		return nil, kernels.Invalidf(n, "B must have shape [%d], got %v", OC, b.Shape)
	}
	outShape := append([]int{N, OC}, outSp...)
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	if _, err := checkScratch([]int{C, K}); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	xv, wv, ov := x.Float64s(), w.Float64s(), off.Float64s()
	var mv, bv []float64
	if mask != nil {
		mv = mask.Float64s()
	}
	if b != nil {
		bv = b.Float64s()
	}
	inSize, outSize := kernels.Prod(inSp), kernels.Prod(outSp)
	inStr := kernels.Strides(inSp)
	cPerG, cPerGrp, ocPerGrp := C/og, C/grp, OC/grp
	yv := make([]float64, N*OC*outSize)
	col := make([]float64, C*K) // sampled (and masked) values at one output position
	// N-linear taps of one sampling point
	offs := make([]int, 0, 1<<min(nd, 16))
	ws := make([]float64, 0, 1<<min(nd, 16))
	pos := make([]float64, nd)
	for bi := 0; bi < N; bi++ {
		oi := 0
		for oc := newCounter(outSp); !oc.done; oc.next() {
			for g := 0; g < og; g++ {
				ki := 0
				for kc := newCounter(kernel); !kc.done; kc.next() {
					for a := 0; a < nd; a++ {
						d := ov[((bi*og+g)*K*nd+ki*nd+a)*outSize+oi]
						pos[a] = float64(oc.idx[a]*win.Strides[a]-win.Pads[a]+kc.idx[a]*win.Dilations[a]) + d
					}
					m := 1.0
					if mv != nil {
						m = mv[((bi*og+g)*K+ki)*outSize+oi]
					}
					offs, ws = linearTaps(pos, inSp, inStr, offs[:0], ws[:0])
					for c := g * cPerG; c < (g+1)*cPerG; c++ {
						plane := xv[(bi*C+c)*inSize : (bi*C+c+1)*inSize]
						s := 0.0
						for j, o := range offs {
							s += ws[j] * plane[o]
						}
						col[c*K+ki] = s * m
					}
					ki++
				}
			}
			for o := 0; o < OC; o++ {
				gr := o / ocPerGrp
				s := 0.0
				if bv != nil {
					s = bv[o]
				}
				wo := wv[o*cPerGrp*K : (o+1)*cPerGrp*K]
				cs := col[gr*cPerGrp*K : (gr+1)*cPerGrp*K]
				for j, v := range wo {
					s += v * cs[j]
				}
				yv[(bi*OC+o)*outSize+oi] = s
			}
			oi++
		}
	}
	out, err := newFromFloat64(ctx, x.DType, outShape, yv)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// linearTaps appends the in-range corners of the N-linear interpolation at
// pos (input index space) as flat offsets and weights; corners outside the
// input read zero and are dropped.
func linearTaps(pos []float64, dims, strides []int, offs []int, ws []float64) ([]int, []float64) {
	offs = append(offs, 0)
	ws = append(ws, 1)
	for a, p := range pos {
		if p != p || p <= -1 || p >= float64(dims[a]) {
			return offs[:0], ws[:0]
		}
		f := math.Floor(p)
		i0 := int(f)
		t := p - f
		n := len(offs)
		for j := 0; j < n; j++ {
			o, w := offs[j], ws[j]
			if i0 >= 0 {
				offs = append(offs, o+i0*strides[a])
				ws = append(ws, w*(1-t))
			}
			if i0+1 < dims[a] {
				offs = append(offs, o+(i0+1)*strides[a])
				ws = append(ws, w*t)
			}
		}
		offs = append(offs[:0], offs[n:]...)
		ws = append(ws[:0], ws[n:]...)
	}
	return offs, ws
}
