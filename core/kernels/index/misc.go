package index

import (
	indexops "github.com/switchyard-hal/switchyard/core/ops/index"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "NonZero", nonZeroKernel)
	kernels.RegisterKernel("", "OneHot", oneHotKernel)
	kernels.RegisterKernel("", "Trilu", triluKernel)
	kernels.RegisterKernel("", "DepthToSpace", depthToSpaceKernel)
	kernels.RegisterKernel("", "SpaceToDepth", spaceToDepthKernel)
}

// ---- NonZero ----

func nzNum[T graph.Numeric](m []bool, d []T) {
	for i, v := range d {
		m[i] = v != 0 // NaN is non-zero
	}
}

func nonZeroMask(x *graph.Tensor) []bool {
	m := make([]bool, x.Len())
	switch d := x.Data.(type) {
	case []graph.F16:
		for i, v := range d {
			m[i] = v&0x7fff != 0 // ±0 are zero; NaN is non-zero
		}
	case []graph.BF16:
		for i, v := range d {
			m[i] = v&0x7fff != 0
		}
	case []bool:
		copy(m, d)
	case []string:
		for i, v := range d {
			m[i] = v != ""
		}
	case []float32:
		nzNum(m, d)
	case []float64:
		nzNum(m, d)
	case []int8:
		nzNum(m, d)
	case []int16:
		nzNum(m, d)
	case []int32:
		nzNum(m, d)
	case []int64:
		nzNum(m, d)
	case []uint8:
		nzNum(m, d)
	case []uint16:
		nzNum(m, d)
	case []uint32:
		nzNum(m, d)
	case []uint64:
		nzNum(m, d)
	}
	return m
}

func nonZeroKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "X"); err != nil {
		return nil, err
	}
	m := nonZeroMask(x)
	nnz := 0
	for _, b := range m {
		if b {
			nnz++
		}
	}
	r := x.Rank()
	shape := x.Shape
	if r == 0 { // a scalar is treated as a one-element vector
		r, shape = 1, []int{1}
	}
	out, err := ctx.New(graph.Int64, []int{r, nnz})
	if err != nil {
		return nil, err
	}
	o := out.Data.([]int64)
	cnt := make([]int, r)
	k := 0
	for i, b := range m {
		if b {
			for d := range r {
				o[d*nnz+k] = int64(cnt[d])
			}
			k++
		}
		if i == len(m)-1 {
			break
		}
		for d := r - 1; d >= 0; d-- {
			cnt[d]++
			if cnt[d] < shape[d] {
				break
			}
			cnt[d] = 0
		}
	}
	return ctx.Outputs(out), nil
}

// ---- OneHot ----

func oneHotKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	ind, dep, vals := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	for i, t := range []*graph.Tensor{ind, dep, vals} {
		if err := checkTensor(n, t, []string{"indices", "depth", "values"}[i]); err != nil {
			return nil, err
		}
	}
	if !ind.DType.IsNumeric() || !dep.DType.IsNumeric() {
		return nil, kernels.Invalidf(n, "indices (%v) and depth (%v) must be numeric", ind.DType, dep.DType)
	}
	if dep.Len() != 1 || dep.Rank() > 1 {
		return nil, kernels.Invalidf(n, "depth must be a scalar or a one-element vector, got shape %v", dep.Shape)
	}
	if vals.Len() != 2 || vals.Rank() != 1 {
		return nil, kernels.Invalidf(n, "values must be a two-element vector [off, on], got shape %v", vals.Shape)
	}
	df := dep.Float64At(0)
	if df != df || df < 0 || df > float64(math.MaxInt32)*8 {
		return nil, kernels.Invalidf(n, "depth %v must be a non-negative size", df)
	}
	depth := int(df) // float depths truncate, as a cast to int64 would
	r := ind.Rank()
	axis, err := kernels.NormAxis(n.AttrInt("axis", -1), r+1)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	shape := append(append(append([]int{}, ind.Shape[:axis]...), depth), ind.Shape[axis:]...)
	out, err := ctx.New(vals.DType, shape)
	if err != nil {
		return nil, err
	}
	// hot[i] is the class of index element i, or -1 where it is out of
	// range (those rows are all "off", as the spec says).
	hot := make([]int, ind.Len())
	for i := range hot {
		var v int64
		if ind.DType.IsFloat() {
			f := ind.Float64At(i)
			if f != f || f >= float64(math.MaxInt64) || f <= float64(math.MinInt64) {
				hot[i] = -1
				continue
			}
			v = int64(f)
		} else {
			v = ind.Int64At(i)
			if ind.DType == graph.Uint64 && ind.Data.([]uint64)[i] > math.MaxInt64 {
				hot[i] = -1
				continue
			}
		}
		if v < 0 && ctx.Opset >= 11 {
			v += int64(depth)
		}
		if v < 0 || v >= int64(depth) {
			hot[i] = -1
		} else {
			hot[i] = int(v)
		}
	}
	inner := kernels.Prod(ind.Shape[axis:])
	takeSeq(out.Data, vals.Data, func(i int) int {
		// output index i = (outer, c, inner) with c in [0, depth)
		o, rest := i/(depth*inner), i%(depth*inner)
		c, k := rest/inner, rest%inner
		if hot[o*inner+k] == c {
			return 1
		}
		return 0
	})
	return ctx.Outputs(out), nil
}

// ---- Trilu ----

func triluKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "input"); err != nil {
		return nil, err
	}
	if x.Rank() < 2 {
		return nil, kernels.Invalidf(n, "input must have rank >= 2, got shape %v", x.Shape)
	}
	var k int64
	if kt := kernels.Input(in, 1); kt != nil {
		kv, err := indexValues(n, kt, "k")
		if err != nil {
			return nil, err
		}
		if len(kv) != 1 {
			return nil, kernels.Invalidf(n, "k must be a scalar, got shape %v", kt.Shape)
		}
		k = kv[0]
	}
	upper := n.AttrInt("upper", 1) != 0
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, err
	}
	rows, cols := x.Shape[x.Rank()-2], x.Shape[x.Rank()-1]
	if rows == 0 || cols == 0 {
		return ctx.Outputs(out), nil
	}
	takeSeq(out.Data, x.Data, func(idx int) int {
		j := int64(idx % cols)
		i := int64(idx / cols % rows)
		keep := j-i <= k
		if upper {
			keep = j-i >= k
		}
		if keep {
			return idx
		}
		return -1
	})
	return ctx.Outputs(out), nil
}

// ---- DepthToSpace / SpaceToDepth ----

func depthToSpaceKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "input"); err != nil {
		return nil, err
	}
	bs, err := indexops.BlockSize(n)
	if err != nil {
		return nil, err
	}
	crd := false
	if ctx.Opset >= 11 {
		switch m := n.AttrString("mode", "DCR"); m {
		case "DCR":
		case "CRD":
			crd = true
		default:
			return nil, kernels.Invalidf(n, "unknown mode %q", m)
		}
	}
	if x.Rank() != 4 {
		return nil, kernels.Invalidf(n, "input must have rank 4 [N,C,H,W], got shape %v", x.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if C%(bs*bs) != 0 {
		return nil, kernels.Invalidf(n, "channels %d are not divisible by blocksize² = %d", C, bs*bs)
	}
	oc := C / (bs * bs)
	OH, OW := H*bs, W*bs
	out, err := ctx.New(x.DType, []int{N, oc, OH, OW})
	if err != nil {
		return nil, err
	}
	takeSeq(out.Data, x.Data, func(i int) int {
		xx := i % OW
		y := i / OW % OH
		c := i / (OW * OH) % oc
		b := i / (OW * OH * oc)
		b1, h := y%bs, y/bs
		b2, w := xx%bs, xx/bs
		var ch int
		if crd {
			ch = c*bs*bs + b1*bs + b2
		} else {
			ch = (b1*bs+b2)*oc + c
		}
		return ((b*C+ch)*H+h)*W + w
	})
	return ctx.Outputs(out), nil
}

func spaceToDepthKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "input"); err != nil {
		return nil, err
	}
	bs, err := indexops.BlockSize(n)
	if err != nil {
		return nil, err
	}
	if x.Rank() != 4 {
		return nil, kernels.Invalidf(n, "input must have rank 4 [N,C,H,W], got shape %v", x.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if H%bs != 0 || W%bs != 0 {
		return nil, kernels.Invalidf(n, "spatial size %dx%d is not divisible by blocksize %d", H, W, bs)
	}
	OC, OH, OW := C*bs*bs, H/bs, W/bs
	out, err := ctx.New(x.DType, []int{N, OC, OH, OW})
	if err != nil {
		return nil, err
	}
	takeSeq(out.Data, x.Data, func(i int) int {
		w := i % OW
		h := i / OW % OH
		oc := i / (OW * OH) % OC
		b := i / (OW * OH * OC)
		// oc = (b1*bs + b2)*C + c
		c := oc % C
		b2 := oc / C % bs
		b1 := oc / C / bs
		return ((b*C+c)*H+h*bs+b1)*W + w*bs + b2
	})
	return ctx.Outputs(out), nil
}
