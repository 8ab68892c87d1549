package misc

import (
	miscops "github.com/switchyard-hal/switchyard/core/ops/misc"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "CumProd", cumProdKernel)
	kernels.RegisterKernel("", "EyeLike", eyeLikeKernel)
	kernels.RegisterKernel("", "Compress", compressKernel)
	kernels.RegisterKernel("", "CenterCropPad", centerCropPadKernel)
	kernels.RegisterKernel("", "Det", detKernel)
}

// ---- CumProd ----

// cumProdKernel multiplies along the axis given by input 1; exclusive=1
// leaves the element itself out (the first output is 1), reverse=1 runs
// from the end.
func cumProdKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "x"); err != nil {
		return nil, err
	}
	a, err := scalarInt(n, kernels.Input(in, 1), "axis")
	if err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, kernels.Invalidf(n, "input must have rank >= 1")
	}
	axis, err := kernels.NormAxis(a, x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	excl := n.AttrInt("exclusive", 0) != 0
	rev := n.AttrInt("reverse", 0) != 0
	outer, d, inner := splitAt(x.Shape, axis)
	var out *graph.Tensor
	switch x.Data.(type) {
	case []float32, []float64, []graph.F16, []graph.BF16:
		y := make([]float64, x.Len())
		cumprod(x.Float64s(), y, outer, d, inner, excl, rev)
		return wrap(floatsOut(ctx, n, x.DType, x.Shape, y))
	}
	if out, err = alloc(ctx, n, x.DType, x.Shape); err != nil {
		return nil, err
	}
	switch xd := x.Data.(type) {
	case []int8:
		cumprod(xd, out.Data.([]int8), outer, d, inner, excl, rev)
	case []int16:
		cumprod(xd, out.Data.([]int16), outer, d, inner, excl, rev)
	case []int32:
		cumprod(xd, out.Data.([]int32), outer, d, inner, excl, rev)
	case []int64:
		cumprod(xd, out.Data.([]int64), outer, d, inner, excl, rev)
	case []uint8:
		cumprod(xd, out.Data.([]uint8), outer, d, inner, excl, rev)
	case []uint16:
		cumprod(xd, out.Data.([]uint16), outer, d, inner, excl, rev)
	case []uint32:
		cumprod(xd, out.Data.([]uint32), outer, d, inner, excl, rev)
	case []uint64:
		cumprod(xd, out.Data.([]uint64), outer, d, inner, excl, rev)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func wrap(t *graph.Tensor, err error) ([]*graph.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{t}, nil
}

func cumprod[T graph.Numeric](x, y []T, outer, d, inner int, excl, rev bool) {
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			base := a*d*inner + c
			acc := T(1)
			for j := 0; j < d; j++ {
				k := j
				if rev {
					k = d - 1 - j
				}
				i := base + k*inner
				if excl {
					y[i] = acc
					acc *= x[i]
				} else {
					acc *= x[i]
					y[i] = acc
				}
			}
		}
	}
}

// ---- EyeLike ----

// eyeLikeKernel writes ones on the k-th diagonal of a matrix shaped like the
// input, in the dtype attribute's type (default: the input's).
func eyeLikeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "input"); err != nil {
		return nil, err
	}
	if x.Rank() != 2 {
		return nil, kernels.Invalidf(n, "input must be 2-D, got shape %v", x.Shape)
	}
	dt := miscops.EyeLikeDType(n, x.DType)
	if !dt.Supported() || dt == graph.String {
		return nil, kernels.Unsupportedf(n, "output dtype %v", dt)
	}
	out, err := alloc(ctx, n, dt, x.Shape)
	if err != nil {
		return nil, err
	}
	k := n.AttrInt("k", 0)
	rows, cols := int64(x.Shape[0]), int64(x.Shape[1])
	for i := int64(0); i < rows; i++ {
		if j := i + k; j >= 0 && j < cols {
			out.SetFloat64(int(i*cols+j), 1)
		}
	}
	return ctx.Outputs(out), nil
}

// ---- Compress ----

// optAxis is x's shape and its "axis" attribute; without one, x counts
// as flattened (axis 0 of [x.Len()]).
func optAxis(n *graph.Node, x *graph.Tensor) (shape []int, axis int, err error) {
	if !n.HasAttr("axis") {
		return []int{x.Len()}, 0, nil
	}
	if x.Rank() == 0 {
		return nil, 0, kernels.Invalidf(n, "axis given for a scalar input")
	}
	if axis, err = kernels.NormAxis(n.AttrInt("axis", 0), x.Rank()); err != nil {
		return nil, 0, kernels.Invalidf(n, "%v", err)
	}
	return x.Shape, axis, nil
}

// compressKernel keeps the slices along axis (or the elements of the
// flattened input when axis is absent) whose condition is true; entries past
// the condition's length are dropped.
func compressKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, c := kernels.Input(in, 0), kernels.Input(in, 1)
	if err := checkIn(n, x, "input"); err != nil {
		return nil, err
	}
	if err := checkIn(n, c, "condition"); err != nil {
		return nil, err
	}
	if c.DType != graph.Bool || c.Rank() != 1 {
		return nil, kernels.Invalidf(n, "condition must be a 1-D bool tensor, got %v%v", c.DType, c.Shape)
	}
	cond := c.Data.([]bool)
	shape, axis, err := optAxis(n, x)
	if err != nil {
		return nil, err
	}
	outer, d, inner := splitAt(shape, axis)
	var keep []int
	for i, v := range cond {
		if !v {
			continue
		}
		if i >= d {
			return nil, kernels.Invalidf(n, "condition is true at %d, beyond the axis length %d", i, d)
		}
		keep = append(keep, i)
	}
	oshape := append([]int{}, shape...)
	oshape[axis] = len(keep)
	out, err := alloc(ctx, n, x.DType, oshape)
	if err != nil {
		return nil, err
	}
	idx := make([]int, 0, out.Len())
	for o := 0; o < outer; o++ {
		for _, k := range keep {
			base := (o*d + k) * inner
			for i := 0; i < inner; i++ {
				idx = append(idx, base+i)
			}
		}
	}
	if err := gather(n, out, x, idx); err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- CenterCropPad ----

// centerCropPadKernel crops (centred, extra element dropped at the end) or
// zero-pads (centred, extra padding at the end) each listed axis to the
// target size.
func centerCropPadKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, st := kernels.Input(in, 0), kernels.Input(in, 1)
	if err := checkIn(n, x, "input_data"); err != nil {
		return nil, err
	}
	if err := checkIn(n, st, "shape"); err != nil {
		return nil, err
	}
	if !st.DType.IsInteger() || st.Rank() != 1 {
		return nil, kernels.Invalidf(n, "shape must be a 1-D integer tensor, got %v%v", st.DType, st.Shape)
	}
	vals := st.Int64s()
	axes, err := miscops.CropAxes(n, x.Rank(), len(vals))
	if err != nil {
		return nil, err
	}
	r := x.Rank()
	oshape := append([]int{}, x.Shape...)
	off := make([]int, r) // output index = input index + off
	for i, a := range axes {
		v := vals[i]
		if v < 0 || v > math.MaxInt32 {
			return nil, kernels.Invalidf(n, "bad target size %d", v)
		}
		t, d := int(v), x.Shape[a]
		oshape[a] = t
		if t < d {
			off[a] = -((d - t) / 2)
		} else {
			off[a] = (t - d) / 2
		}
	}
	out, err := alloc(ctx, n, x.DType, oshape)
	if err != nil {
		return nil, err
	}
	total := out.Len()
	idx := make([]int, total)
	ist := kernels.Strides(x.Shape)
	cnt := make([]int, r)
	for o := 0; o < total; o++ {
		src := 0
		for d := 0; d < r; d++ {
			j := cnt[d] - off[d]
			if j < 0 || j >= x.Shape[d] {
				src = -1
				break
			}
			src += j * ist[d]
		}
		idx[o] = src
		for d := r - 1; d >= 0; d-- {
			cnt[d]++
			if cnt[d] < oshape[d] {
				break
			}
			cnt[d] = 0
		}
	}
	if err := gather(n, out, x, idx); err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- Det ----

// detKernel computes determinants of the trailing square matrices by LU
// decomposition with partial pivoting in float64.
func detKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "X"); err != nil {
		return nil, err
	}
	r := x.Rank()
	if r < 2 || x.Shape[r-1] != x.Shape[r-2] {
		return nil, kernels.Invalidf(n, "input must be [*, M, M], got %v", x.Shape)
	}
	m := x.Shape[r-1]
	batch := kernels.Prod(x.Shape[:r-2])
	vals := x.Float64s()
	res := make([]float64, batch)
	a := make([]float64, m*m)
	for b := range res {
		copy(a, vals[b*m*m:(b+1)*m*m])
		res[b] = luDet(a, m)
	}
	return wrap(floatsOut(ctx, n, x.DType, x.Shape[:r-2], res))
}

func luDet(a []float64, m int) float64 {
	det := 1.0
	for c := 0; c < m; c++ {
		p := c
		for i := c + 1; i < m; i++ {
			if math.Abs(a[i*m+c]) > math.Abs(a[p*m+c]) {
				p = i
			}
		}
		if a[p*m+c] == 0 {
			// singular unless NaN elsewhere; keep NaN propagation
			for _, v := range a {
				if math.IsNaN(v) {
					return math.NaN()
				}
			}
			return 0
		}
		if p != c {
			for j := 0; j < m; j++ {
				a[c*m+j], a[p*m+j] = a[p*m+j], a[c*m+j]
			}
			det = -det
		}
		piv := a[c*m+c]
		det *= piv
		for i := c + 1; i < m; i++ {
			f := a[i*m+c] / piv
			if f == 0 {
				continue
			}
			for j := c; j < m; j++ {
				a[i*m+j] -= f * a[c*m+j]
			}
		}
	}
	return det
}
