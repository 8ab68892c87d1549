package reduce

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

type softmaxKind int

const (
	smSoftmax softmaxKind = iota
	smLogSoftmax
	smHardmax
)

func init() {
	kernels.RegisterKernel("", "Softmax", softmaxKernel(smSoftmax))
	kernels.RegisterKernel("", "LogSoftmax", softmaxKernel(smLogSoftmax))
	kernels.RegisterKernel("", "Hardmax", softmaxKernel(smHardmax))
}

// softmaxLayout splits x's shape into (outer, d, inner) for the softmax
// axis. Before opset 13 the input is coerced to 2-D at axis (default 1) and
// the normalisation runs over the whole second dimension; from opset 13 it
// runs over the single axis (default -1).
func softmaxLayout(n *graph.Node, opset int64, shape []int) (outer, d, inner int, err error) {
	rank := len(shape)
	if opset < 13 {
		axis := n.AttrInt("axis", 1)
		if axis < 0 {
			axis += int64(rank)
		}
		if axis < 0 || axis > int64(rank) {
			return 0, 0, 0, kernels.Invalidf(n, "axis %d out of range for rank %d", n.AttrInt("axis", 1), rank)
		}
		return kernels.Prod(shape[:axis]), kernels.Prod(shape[axis:]), 1, nil
	}
	axis, e := kernels.NormAxis(n.AttrInt("axis", -1), rank)
	if e != nil {
		return 0, 0, 0, kernels.Invalidf(n, "%v", e)
	}
	outer, d, inner = splitAt(shape, axis)
	return outer, d, inner, nil
}

func softmaxKernel(kind softmaxKind) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if err := checkFloat(n, x, "input"); err != nil {
			return nil, err
		}
		outer, d, inner, err := softmaxLayout(n, ctx.Opset, x.Shape)
		if err != nil {
			return nil, err
		}
		v := x.Float64s()
		y := make([]float64, len(v))
		for a := 0; a < outer; a++ {
			for c := 0; c < inner; c++ {
				base := a*d*inner + c
				softmaxSlice(kind, v, y, base, d, inner)
			}
		}
		out, err := newFromFloat64(ctx, x.DType, x.Shape, y)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		return ctx.Outputs(out), nil
	}
}

// softmaxSlice normalises the d elements x[base + k*stride] into y.
func softmaxSlice(kind softmaxKind, x, y []float64, base, d, stride int) {
	if d == 0 {
		return
	}
	// maximum (first NaN wins, as numpy's argmax/max)
	mi := 0
	m := x[base]
	for k := 1; k < d; k++ {
		if v := x[base+k*stride]; m == m && (v != v || v > m) {
			m, mi = v, k
		}
	}
	switch kind {
	case smHardmax:
		for k := 0; k < d; k++ {
			y[base+k*stride] = 0
		}
		y[base+mi*stride] = 1
		return
	}
	sum := 0.0
	for k := 0; k < d; k++ {
		sum += math.Exp(x[base+k*stride] - m)
	}
	for k := 0; k < d; k++ {
		i := base + k*stride
		if kind == smSoftmax {
			y[i] = math.Exp(x[i]-m) / sum
		} else {
			y[i] = x[i] - m - math.Log(sum)
		}
	}
}
