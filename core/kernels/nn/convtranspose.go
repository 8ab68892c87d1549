package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{
		OpType: "ConvTranspose", MinOpset: 1,
		MinInputs: 2, MaxInputs: 3,
		Types:  kernels.FloatTypes,
		Kernel: convTransposeKernel,
		Infer:  convTransposeInfer,
	})
}

// convTransposeGeom computes the output sizes and pads of a transposed
// convolution over in (spatial sizes). Without output_shape the output is
// stride·(in-1) + output_padding + extent - pads (auto_pad SAME_* gives
// in·stride). With an output shape, the total padding
// stride·(in-1) + output_padding + extent - out (0 when negative: the
// excess is left at the end) is split between begin and end as the ONNX
// spec says: the odd one at the end under SAME_UPPER, else at the begin.
func convTransposeGeom(n *graph.Node, w windowAttrs, in []int) (geom3, error) {
	nd := len(in)
	var g geom3
	if nd < 1 || nd > 3 {
		return g, errUnsupportedRank(nd)
	}
	outPad, err := readIntsAttr(n, "output_padding", nd, 0)
	if err != nil {
		return g, err
	}
	var outShape []int
	if os := n.AttrInts("output_shape", nil); os != nil {
		if len(os) == nd+2 {
			os = os[2:]
		}
		if len(os) != nd {
			return g, errInvalid("output_shape %v has %d values, expected %d", os, len(os), nd)
		}
		for _, v := range os {
			if v < 0 || v > 1<<31 {
				return g, errInvalid("output_shape %v out of range", os)
			}
			outShape = append(outShape, int(v))
		}
	}
	off := 3 - nd
	for i := 0; i < 3; i++ {
		g.in[i], g.out[i], g.k[i], g.s[i], g.d[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < nd; i++ {
		I, k, s, d := in[i], w.kernel[i], w.strides[i], w.dilations[i]
		ek := (k-1)*d + 1
		full := s*(I-1) + outPad[i] + ek
		var o, pb, pe int
		switch {
		case outShape != nil || w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER":
			if outShape != nil {
				o = outShape[i]
			} else {
				o = I * s
			}
			total := max(0, full-o)
			if w.autoPad == "SAME_UPPER" {
				pb, pe = total/2, total-total/2
			} else {
				pb, pe = total-total/2, total/2
			}
		case w.autoPad == "VALID":
			o = full
		default:
			pb, pe = w.pads[i], w.pads[nd+i]
			o = full - pb - pe
		}
		if o < 0 {
			return g, errInvalid("spatial dim %d: output size %d is negative", i, o)
		}
		j := off + i
		g.in[j], g.out[j], g.k[j], g.s[j], g.d[j], g.pb[j], g.pe[j] = I, o, k, s, d, pb, pe
	}
	return g, nil
}

func readIntsAttr(n *graph.Node, name string, want, def int) ([]int, error) {
	out := make([]int, want)
	v := n.AttrInts(name, nil)
	if v == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != want {
		return nil, errInvalid("%s has %d values, expected %d", name, len(v), want)
	}
	for i, x := range v {
		if x < 0 || x > 1<<31 {
			return nil, errInvalid("%s value %d out of range", name, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

type convTPlan struct {
	n, c, m, group int
	cg, mg         int
	nd             int
	g              geom3
	outShape       []int
}

func planConvTranspose(n *graph.Node, x, w, b *graph.Tensor) (*convTPlan, error) {
	if len(x.Shape) < 3 {
		return nil, errInvalid("X must have rank >= 3, got shape %v", x.Shape)
	}
	if len(w.Shape) != len(x.Shape) {
		return nil, errInvalid("W has shape %v, X %v: ranks differ", w.Shape, x.Shape)
	}
	group := n.AttrInt("group", 1)
	if group < 1 || group > 1<<31 {
		return nil, errInvalid("group %d must be positive", group)
	}
	p := &convTPlan{n: x.Shape[0], c: x.Shape[1], group: int(group), nd: len(x.Shape) - 2}
	if w.Shape[0] != p.c {
		return nil, errInvalid("W has shape %v, expected %d input channels first", w.Shape, p.c)
	}
	if p.c%p.group != 0 {
		return nil, errInvalid("%d input channels not divisible by group %d", p.c, p.group)
	}
	p.cg, p.mg = p.c/p.group, w.Shape[1]
	p.m = p.mg * p.group
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != p.m) {
		return nil, errInvalid("B has shape %v, expected [%d]", b.Shape, p.m)
	}
	attrs, err := readWindowAttrs(n, p.nd, w.Shape[2:])
	if err != nil {
		return nil, err
	}
	if p.g, err = convTransposeGeom(n, attrs, x.Shape[2:]); err != nil {
		return nil, err
	}
	p.outShape = []int{p.n, p.m}
	for i := 3 - p.nd; i < 3; i++ {
		p.outShape = append(p.outShape, p.g.out[i])
	}
	return p, nil
}

func convTransposeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, b := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	if x == nil || w == nil {
		return nil, kernels.Invalidf(n, "ConvTranspose needs inputs X and W")
	}
	if w.DType != x.DType || (b != nil && b.DType != x.DType) {
		return nil, kernels.Invalidf(n, "input dtypes differ")
	}
	p, err := planConvTranspose(n, x, w, b)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	// The column buffer is mg·|kernel| × |input plane|.
	if _, err := graph.CheckAlloc(x.DType, []int{p.mg * p.g.kSize(), p.g.inSize()}); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	st := stopOf(ctx)
	return dispatchFloat(ctx, n, x, w, b, p.outShape,
		func(x, w, b, y []float32) { convTransposeRun(st, p, x, w, b, y, sgemm) },
		func(x, w, b, y []float64) { convTransposeRun(st, p, x, w, b, y, gemm64) })
}

// convTransposeRun computes, per image and group, the column matrix
// Wgᵀ·Xg (mg·|kernel| rows × input positions) with the GEMM and scatters
// it into the output (col2im): input position i under tap t lands on
// output position i·stride - pad_begin + t·dilation.
func convTransposeRun[T float32 | float64](st stop, p *convTPlan, x, w, bias, y []T, gemm gemmFunc[T]) {
	g := &p.g
	is, os, ks := g.inSize(), g.outSize(), g.kSize()
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
func col2imPlane[T float32 | float64](g *geom3, col, y []T) {
	ID, IH, IW := g.in[0], g.in[1], g.in[2]
	OD, OH, OW := g.out[0], g.out[1], g.out[2]
	is := g.inSize()
	t := 0
	for kd := 0; kd < g.k[0]; kd++ {
		for kh := 0; kh < g.k[1]; kh++ {
			for kw := 0; kw < g.k[2]; kw++ {
				src := col[t*is : (t+1)*is]
				t++
				offW := kw*g.d[2] - g.pb[2]
				// input columns iw with 0 <= iw*s + offW < OW
				wlo, whi := validRange(offW, g.s[2], OW, IW)
				if wlo >= whi {
					continue
				}
				for id := 0; id < ID; id++ {
					od := id*g.s[0] - g.pb[0] + kd*g.d[0]
					if od < 0 || od >= OD {
						continue
					}
					for ih := 0; ih < IH; ih++ {
						oh := ih*g.s[1] - g.pb[1] + kh*g.d[1]
						if oh < 0 || oh >= OH {
							continue
						}
						srow := src[(id*IH+ih)*IW : (id*IH+ih+1)*IW]
						drow := y[(od*OH+oh)*OW : (od*OH+oh+1)*OW]
						for iw := wlo; iw < whi; iw++ {
							drow[iw*g.s[2]+offW] += srow[iw]
						}
					}
				}
			}
		}
	}
}

func convTransposeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	dt := in[0].Type.DType
	xs, ws := in[0].Type.Shape, in[1].Type.Shape
	if xs == nil {
		return []graph.ValueType{{Kind: "tensor", DType: dt}}, nil
	}
	if len(xs) < 3 {
		return nil, kernels.Invalidf(n, "X must have rank >= 3, got %v", xs)
	}
	nd := len(xs) - 2
	out := make(graph.Shape, len(xs))
	out[0] = xs[0]
	for i := 1; i < len(out); i++ {
		out[i] = graph.Dim{Value: -1}
	}
	if ws == nil {
		return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
	}
	if len(ws) != len(xs) {
		return nil, kernels.Invalidf(n, "X %v and W %v ranks differ", xs, ws)
	}
	group := n.AttrInt("group", 1)
	if ws[1].Static() && group >= 1 {
		out[1] = graph.Dim{Value: ws[1].Value * group}
	}
	wk, okW := staticDims(ws[2:])
	in2, okX := staticDims(xs[2:])
	if !okW || !okX || nd > 3 {
		return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
	}
	attrs, err := readWindowAttrs(n, nd, wk)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	g, err := convTransposeGeom(n, attrs, in2)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	for i := 0; i < nd; i++ {
		out[2+i] = graph.Dim{Value: int64(g.out[3-nd+i])}
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
}
