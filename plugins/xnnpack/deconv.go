package xnnpack

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// ConvTranspose maps to xnn_define_deconvolution_2d (21 arguments, so
// called through libffi). Output size there is
// (in−1)·stride + adjustment + (k−1)·dilation + 1 − pad_begin − pad_end,
// ONNX's formula with adjustment = output_padding.

func checkConvTranspose(n *graph.Node, rank int, ti typeInfo) string {
	if rank != 4 {
		return fmt.Sprintf("ConvTranspose on a rank-%d input; only 2D (rank 4, NCHW) is mapped", rank)
	}
	w := ti.constant(n.Input(1))
	if w == nil || w.DType != graph.Float32 || len(w.Shape) != 4 {
		return "ConvTranspose weights must be a float32 rank-4 constant"
	}
	if b := n.Input(2); b != "" {
		if bt := ti.constant(b); bt == nil || bt.DType != graph.Float32 {
			return "ConvTranspose bias must be a float32 constant"
		}
	}
	if os := n.AttrInts("output_shape", nil); os != nil {
		return fmt.Sprintf("ConvTranspose output_shape=%v is not mapped (only explicit pads)", os)
	}
	if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "VALID" {
		return fmt.Sprintf("ConvTranspose auto_pad=%q is not mapped (only explicit pads)", ap)
	}
	if why := checkSpatial(n, true); why != "" {
		return "ConvTranspose " + why
	}
	if g := n.AttrInt("group", 1); g < 1 || w.Shape[0]%int(g) != 0 {
		return fmt.Sprintf("ConvTranspose group=%d does not divide the weights' %d input channels", g, w.Shape[0])
	}
	s := n.AttrInts("strides", []int64{1, 1})
	op := n.AttrInts("output_padding", nil)
	if op != nil && len(op) != 2 {
		return fmt.Sprintf("ConvTranspose output_padding=%v: want 2 values", op)
	}
	for i, p := range op {
		if p < 0 || i >= len(s) || p >= s[i] {
			return fmt.Sprintf("ConvTranspose output_padding=%v with strides=%v: XNNPACK needs 0 <= output_padding < stride", op, s)
		}
	}
	return ""
}

func (b *builder) convTranspose(n *graph.Node, x *val, oshape []int) error {
	wk, err := b.konst(n, 1)
	if err != nil {
		return err
	}
	if wk == nil || wk.DType != graph.Float32 || len(wk.Shape) != 4 {
		return b.nodeErr(n, "weights must be float32 rank 4")
	}
	var bias []float32
	if bk, err := b.konst(n, 2); err != nil {
		return err
	} else if bk != nil {
		bias = graph.Data[float32](bk)
	}
	cin, goc, kh, kw := wk.Shape[0], wk.Shape[1], wk.Shape[2], wk.Shape[3]
	groups := int(n.AttrInt("group", 1))
	if groups < 1 || cin%groups != 0 || x.shape[1] != cin {
		return b.nodeErr(n, "group=%d does not match input channels %d and weights %v", groups, x.shape[1], wk.Shape)
	}
	if ks := n.AttrInts("kernel_shape", nil); len(ks) == 2 && (int(ks[0]) != kh || int(ks[1]) != kw) {
		return b.nodeErr(n, "kernel_shape %v does not match weights %v", ks, wk.Shape)
	}
	gic := cin / groups
	if bias != nil && len(bias) != groups*goc {
		return b.nodeErr(n, "bias has %d values, want %d", len(bias), groups*goc)
	}
	// [Cin, Cout/g, kh, kw] → [g·Cout/g, kh, kw, Cin/g]
	w := graph.Data[float32](wk)
	packed := make([]float32, len(w))
	for g := 0; g < groups; g++ {
		for oc := 0; oc < goc; oc++ {
			for ky := 0; ky < kh; ky++ {
				for kx := 0; kx < kw; kx++ {
					dst := (((g*goc+oc)*kh+ky)*kw + kx) * gic
					for ic := 0; ic < gic; ic++ {
						packed[dst+ic] = w[(((g*gic+ic)*goc+oc)*kh+ky)*kw+kx]
					}
				}
			}
		}
	}
	s, d := ints2(n, "strides", 1), ints2(n, "dilations", 1)
	adj := ints2(n, "output_padding", 0)
	var p [4]int // top, left, bottom, right
	if n.AttrString("auto_pad", "NOTSET") == "NOTSET" {
		if ps := n.AttrInts("pads", nil); len(ps) == 4 {
			for i := range p {
				p[i] = int(ps[i])
			}
		}
	}
	for i := 0; i < 2; i++ {
		k := []int{kh, kw}[i]
		if want := (x.shape[2+i]-1)*s[i] + adj[i] + (k-1)*d[i] + 1 - p[i] - p[i+2]; want != oshape[2+i] {
			return b.nodeErr(n, "output length %d on axis %d, XNNPACK would give %d", oshape[2+i], 2+i, want)
		}
	}
	in := b.need(x, nhwc)
	wt := &tensor{dims: []int{groups * goc, kh, kw, gic}, static: packed, stage: -1, slot: -1}
	var bt *tensor
	if bias != nil {
		bt = &tensor{dims: []int{groups * goc}, static: append([]float32{}, bias...), stage: -1, slot: -1}
	}
	out := b.newTensor(permute(oshape, nhwc))
	b.add(&xop{kind: "deconv", in: []*tensor{in, wt, bt}, out: out,
		u:  []uint32{uint32(p[0]), uint32(p[3]), uint32(p[2]), uint32(p[1]), uint32(adj[0]), uint32(adj[1]), uint32(kh), uint32(kw), uint32(s[0]), uint32(s[1]), uint32(d[0]), uint32(d[1]), uint32(groups)},
		sz: []int{gic, goc}, f: []float32{float32(math.Inf(-1)), inf}})
	b.setOut(n, &val{t: out, shape: oshape, perm: nhwc})
	return nil
}
