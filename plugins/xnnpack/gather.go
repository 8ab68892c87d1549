package xnnpack

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
)

// Pure data movement this libXNNPACK has no node for, run as Go steps
// inside the partition (in the value's physical layout, so NHWC data
// stays NHWC): a Slice with constant bounds (any steps), and a nearest
// Resize/Upsample of H and W. Without them such an op splits the
// partition around it, and every split costs two layout conversions of
// the values crossing it (YOLOX's input slicing and FPN upsampling split
// its graph in four).

// checkSlice gives the reason a Slice cannot be mapped, "" when it can.
func checkSlice(n *graph.Node, opset int64, ti typeInfo) string {
	for _, d := range ti.typeOf(n.Outputs[0]).Shape {
		if d.Static() && d.Value == 0 {
			return "Slice to an empty tensor is not mapped (XNNPACK cannot hold one)"
		}
	}
	if opset < 10 {
		if !n.HasAttr("starts") || !n.HasAttr("ends") {
			return "Slice without starts or ends"
		}
		return ""
	}
	for i := 1; i < len(n.Inputs) && i <= 4; i++ {
		if n.Inputs[i] == "" {
			continue
		}
		k := ti.constant(n.Inputs[i])
		if k == nil || (k.DType != graph.Int64 && k.DType != graph.Int32) {
			return fmt.Sprintf("Slice input %d must be an int32 or int64 constant", i)
		}
	}
	return ""
}

// sliceArgs reads a Slice's bounds (attributes before opset 10, constant
// inputs after).
func (b *builder) sliceArgs(n *graph.Node) (shapeops.SliceArgs, error) {
	var a shapeops.SliceArgs
	if b.opset("") < 10 {
		a.Starts, a.Ends = n.AttrInts("starts", nil), n.AttrInts("ends", nil)
		if n.HasAttr("axes") {
			a.Axes, a.HasAxes = n.AttrInts("axes", nil), true
		}
		return a, nil
	}
	get := func(i int) ([]int64, error) {
		k, err := b.konst(n, i)
		if err != nil || k == nil {
			return nil, err
		}
		return k.Int64s(), nil
	}
	var err error
	if a.Starts, err = get(1); err != nil {
		return a, err
	}
	if a.Ends, err = get(2); err != nil {
		return a, err
	}
	if n.Input(3) != "" {
		if a.Axes, err = get(3); err != nil {
			return a, err
		}
		a.HasAxes = true
	}
	if a.Steps, err = get(4); err != nil {
		return a, err
	}
	return a, nil
}

// slice lowers a Slice with constant bounds to a strided copy in x's
// physical layout.
func (b *builder) slice(n *graph.Node, x *val, oshape []int) error {
	a, err := b.sliceArgs(n)
	if err != nil {
		return err
	}
	r := len(x.shape)
	axes, err := a.Check(n, r)
	if err != nil {
		return b.nodeErr(n, "%v", err)
	}
	if len(oshape) != r {
		return b.nodeErr(n, "output rank %d for input rank %d", len(oshape), r)
	}
	start := make([]int, r)
	step := make([]int, r)
	for i := range step {
		step[i] = 1
	}
	for i, ax := range axes {
		st := a.Step(i)
		s, cnt := shapeops.SliceRange(a.Starts[i], a.Ends[i], st, int64(x.shape[ax]))
		if int(cnt) != oshape[ax] {
			return b.nodeErr(n, "axis %d: %d elements sliced, shape inference says %d", ax, cnt, oshape[ax])
		}
		start[ax], step[ax] = int(s), int(st)
	}
	for ax, d := range oshape {
		if d == 0 {
			// XNNPACK cannot hold an empty tensor: the partition runs on
			// the reference kernels for these shapes
			return b.nodeErr(n, "output axis %d is empty", ax)
		}
	}
	src := b.need(x, x.perm)
	perm := x.perm
	if perm == nil {
		perm = identity(r)
	}
	sstr := make([]int, r) // src physical strides
	acc := 1
	for i := r - 1; i >= 0; i-- {
		sstr[i] = acc
		acc *= src.dims[i]
	}
	odims := permute(oshape, perm)
	str := make([]int, r)
	off := 0
	for i, l := range perm {
		off += start[l] * sstr[i]
		str[i] = step[l] * sstr[i]
	}
	out := b.newTensor(odims)
	b.addGo(func(buf func(*tensor) []float32) {
		stridedCopy(buf(out), buf(src), odims, str, off)
	}, []*tensor{src}, out)
	b.setOut(n, &val{t: out, shape: oshape, perm: x.perm})
	return nil
}

// stridedCopy writes dst (row-major dims) from src, where dst index
// (i0..ir) reads src[off + Σ i_k·str_k].
func stridedCopy(dst, src []float32, dims, str []int, off int) {
	r := len(dims)
	n := 1
	for _, d := range dims {
		n *= d
	}
	if n == 0 {
		return
	}
	// merge dims that are contiguous in both (dst row-major; src stride
	// of the outer equals the inner's extent)
	md, ms := []int{dims[r-1]}, []int{str[r-1]}
	for i := r - 2; i >= 0; i-- {
		last := len(md) - 1
		if str[i] == ms[last]*md[last] {
			md[last] *= dims[i]
			continue
		}
		md = append(md, dims[i])
		ms = append(ms, str[i])
	}
	// md/ms are innermost first
	last, ls := md[0], ms[0]
	m := len(md)
	idx := make([]int, m)
	so := off
	for d := 0; d < n; d += last {
		row := dst[d : d+last]
		if ls == 1 {
			copy(row, src[so:so+last])
		} else {
			s := so
			for k := range row {
				row[k] = src[s]
				s += ls
			}
		}
		for j := 1; j < m; j++ {
			idx[j]++
			so += ms[j]
			if idx[j] < md[j] {
				break
			}
			so -= ms[j] * idx[j]
			idx[j] = 0
		}
	}
}

// nearestAttrs reads a nearest Resize's or Upsample's attributes; ok is
// false when the node is not a nearest resize.
func nearestAttrs(n *graph.Node, opset int64) (resizeops.Attrs, bool) {
	var a resizeops.Attrs
	var err error
	if n.OpType == "Upsample" {
		a, err = resizeops.UpsampleAttrs(n)
	} else {
		a, err = resizeops.ResizeAttrs(n, opset)
	}
	return a, err == nil && a.Mode == resizeops.ModeNearest
}

// checkNearest gives the reason a nearest Resize or Upsample cannot be
// mapped, "" when it can (as far as the shapes known at load tell).
func checkNearest(n *graph.Node, opset int64, ti typeInfo) string {
	a, _ := nearestAttrs(n, opset)
	if a.Antialias {
		return "nearest Resize with antialias is not mapped"
	}
	switch a.Ctm {
	case "half_pixel", resizeops.CtmPytorchHalfPixel, resizeops.CtmAsymmetric, resizeops.CtmAlignCorners:
	default:
		return fmt.Sprintf("nearest Resize coordinate_transformation_mode=%q is not mapped (half_pixel, pytorch_half_pixel, asymmetric, align_corners are)", a.Ctm)
	}
	if opset >= 18 && n.AttrInts("axes", nil) != nil {
		return "Resize with axes is not mapped"
	}
	shape := ti.typeOf(n.Input(0)).Shape
	if len(shape) != 4 {
		return fmt.Sprintf("nearest %s on a rank-%d input; rank 4 (NCHW, scaling H and W) is mapped", n.OpType, len(shape))
	}
	if n.OpType == "Upsample" && opset < 9 {
		return "Upsample before opset 9 (scales as an attribute) is not mapped"
	}
	return ""
}

// nearest lowers a nearest Resize or Upsample to a Go step in NHWC: each
// output pixel copies its source pixel's C values.
func (b *builder) nearest(n *graph.Node, x *val, oshape []int) error {
	op := b.opset("")
	a, ok := nearestAttrs(n, op)
	if !ok {
		return b.nodeErr(n, "not a nearest resize")
	}
	konst := func(i int) *graph.Tensor {
		if k, err := b.konst(n, i); err == nil {
			return k
		}
		return nil
	}
	var roi, scales, sizes *graph.Tensor
	switch {
	case n.OpType == "Upsample" || op < 11:
		scales = konst(1)
	default:
		roi, scales, sizes = konst(1), konst(2), konst(3)
	}
	p, err := resizeops.MakePlan(n, a, x.shape, roi, scales, sizes)
	if err != nil {
		return b.nodeErr(n, "%v", err)
	}
	if len(p.Out) != 4 || !graph.SameShape(p.Out, oshape) {
		return b.nodeErr(n, "output %v, shape inference says %v", p.Out, oshape)
	}
	if oshape[0] != x.shape[0] || oshape[1] != x.shape[1] {
		return b.nodeErr(n, "Resize %v → %v changes N or C; H and W are mapped", x.shape, oshape)
	}
	if oshape[2] == 0 || oshape[3] == 0 || x.shape[2] == 0 || x.shape[3] == 0 {
		return b.nodeErr(n, "empty input or output %v → %v", x.shape, oshape)
	}
	rows := resizeops.NearestSources(a, x.shape[2], oshape[2], p.Scales[2])
	cols := resizeops.NearestSources(a, x.shape[3], oshape[3], p.Scales[3])
	in := b.need(x, nhwc)
	out := b.newTensor(permute(oshape, nhwc))
	nb, ih, iw, c := x.shape[0], x.shape[2], x.shape[3], x.shape[1]
	oh, ow := oshape[2], oshape[3]
	b.addGo(func(buf func(*tensor) []float32) {
		s, d := buf(in), buf(out)
		orow := ow * c
		for i := 0; i < nb; i++ {
			for y := 0; y < oh; y++ {
				dr := d[(i*oh+y)*orow : (i*oh+y+1)*orow]
				if y > 0 && rows[y] == rows[y-1] {
					copy(dr, d[(i*oh+y-1)*orow:(i*oh+y)*orow])
					continue
				}
				sr := s[(i*ih+rows[y])*iw*c : (i*ih+rows[y]+1)*iw*c]
				if c == 1 {
					for x, sx := range cols {
						dr[x] = sr[sx]
					}
					continue
				}
				for x, sx := range cols {
					copy(dr[x*c:(x+1)*c], sr[sx*c:(sx+1)*c])
				}
			}
		}
	}, []*tensor{in}, out)
	b.setOut(n, &val{t: out, shape: oshape, perm: nhwc})
	return nil
}
