package nn

import (
	nnops "github.com/switchyard-hal/switchyard/core/ops/nn"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "ConvTranspose", convTransposeKernel)
}

type convTPlan struct {
	n, c, m, group int
	cg, mg         int
	nd             int
	g              nnops.Geom3
	outShape       []int
}

func planConvTranspose(n *graph.Node, x, w, b *graph.Tensor) (*convTPlan, error) {
	if len(x.Shape) < 3 {
		return nil, nnops.ErrInvalid("X must have rank >= 3, got shape %v", x.Shape)
	}
	if len(w.Shape) != len(x.Shape) {
		return nil, nnops.ErrInvalid("W has shape %v, X %v: ranks differ", w.Shape, x.Shape)
	}
	group := n.AttrInt("group", 1)
	if group < 1 || group > 1<<31 {
		return nil, nnops.ErrInvalid("group %d must be positive", group)
	}
	p := &convTPlan{n: x.Shape[0], c: x.Shape[1], group: int(group), nd: len(x.Shape) - 2}
	if w.Shape[0] != p.c {
		return nil, nnops.ErrInvalid("W has shape %v, expected %d input channels first", w.Shape, p.c)
	}
	if p.c%p.group != 0 {
		return nil, nnops.ErrInvalid("%d input channels not divisible by group %d", p.c, p.group)
	}
	p.cg, p.mg = p.c/p.group, w.Shape[1]
	p.m = p.mg * p.group
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != p.m) {
		return nil, nnops.ErrInvalid("B has shape %v, expected [%d]", b.Shape, p.m)
	}
	attrs, err := nnops.ReadWindowAttrs(n, p.nd, w.Shape[2:])
	if err != nil {
		return nil, err
	}
	if p.g, err = nnops.ConvTransposeGeom(n, attrs, x.Shape[2:]); err != nil {
		return nil, err
	}
	p.outShape = outShape(p.n, p.m, p.nd, p.g.Out)
	return p, nil
}

func convTransposeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return convLike(ctx, n, in, planConvTranspose, convTransposeRun[float32], convTransposeRun[float64])
}

// scratch is the column buffer: mg·|kernel| × |input plane|.
func (p *convTPlan) scratch() []int { return []int{p.mg * p.g.KSize(), p.g.InSize()} }

func (p *convTPlan) shape() []int { return p.outShape }

// convTransposeRun computes, per image and group, the column matrix
// Wgᵀ·Xg (mg·|kernel| rows × input positions) with the GEMM and scatters
// it into the output (col2im): input position i under tap t lands on
// output position i·stride - pad_begin + t·dilation.
func convTransposeRun[T float32 | float64](st stop, p *convTPlan, x, w, bias, y []T, gemm gemmFunc[T]) {
	g := &p.g
	is, os, ks := g.InSize(), g.OutSize(), g.KSize()
	if len(y) == 0 {
		return
	}
	for i := 0; i < p.n*p.m; i++ {
		var v T
		if bias != nil {
			v = bias[i%p.m]
		}
		row := y[i*os : (i+1)*os]
		for j := range row {
			row[j] = v
		}
	}
	if is == 0 || st.done() {
		return
	}
	par := workers()
	rows := p.mg * ks
	col := make([]T, rows*is)
	for nIdx := 0; nIdx < p.n && !st.done(); nIdx++ {
		for gi := 0; gi < p.group && !st.done(); gi++ {
			clear(col)
			xg := x[(nIdx*p.c+gi*p.cg)*is : (nIdx*p.c+(gi+1)*p.cg)*is]
			wg := w[gi*p.cg*rows : (gi+1)*p.cg*rows]
			gemm(st, rows, is, p.cg, 1, mat[T]{wg, 1, rows}, mat[T]{xg, is, 1}, col, is, par)
			yg := y[(nIdx*p.m+gi*p.mg)*os : (nIdx*p.m+(gi+1)*p.mg)*os]
			parallelTasks(st, p.mg, par, func(m int) {
				col2imPlane(g, col[m*ks*is:(m+1)*ks*is], yg[m*os:(m+1)*os])
			})
		}
	}
}

// col2imPlane adds the ks rows of col (one per kernel tap, each over the
// input positions) into one output plane.
func col2imPlane[T float32 | float64](g *nnops.Geom3, col, y []T) {
	ID, IH, IW := g.In[0], g.In[1], g.In[2]
	OD, OH, OW := g.Out[0], g.Out[1], g.Out[2]
	is := g.InSize()
	t := 0
	for kd := 0; kd < g.K[0]; kd++ {
		for kh := 0; kh < g.K[1]; kh++ {
			for kw := 0; kw < g.K[2]; kw++ {
				src := col[t*is : (t+1)*is]
				t++
				offW := kw*g.D[2] - g.Pb[2]
				// input columns iw with 0 <= iw*s + offW < OW
				wlo, whi := validRange(offW, g.S[2], OW, IW)
				if wlo >= whi {
					continue
				}
				for id := 0; id < ID; id++ {
					od := id*g.S[0] - g.Pb[0] + kd*g.D[0]
					if od < 0 || od >= OD {
						continue
					}
					for ih := 0; ih < IH; ih++ {
						oh := ih*g.S[1] - g.Pb[1] + kh*g.D[1]
						if oh < 0 || oh >= OH {
							continue
						}
						srow := src[(id*IH+ih)*IW : (id*IH+ih+1)*IW]
						drow := y[(od*OH+oh)*OW : (od*OH+oh+1)*OW]
						for iw := wlo; iw < whi; iw++ {
							drow[iw*g.S[2]+offW] += srow[iw]
						}
					}
				}
			}
		}
	}
}
