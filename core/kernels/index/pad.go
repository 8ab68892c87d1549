package index

import (
	indexops "github.com/switchyard-hal/switchyard/core/ops/index"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Pad", padKernel)
}

// padSpec is a Pad node's resolved parameters: per-axis begin/end pads
// (negative crops) for every axis of the data, the mode and, for constant
// mode, the fill value as a one-element tensor of the data's dtype (nil
// means zero).
type padSpec struct {
	begin, end []int64
	mode       string
	value      *graph.Tensor
}

func padParams(ctx *kernels.Context, n *graph.Node, x *graph.Tensor, in []*graph.Tensor) (*padSpec, error) {
	mode, err := indexops.PadMode(n)
	if err != nil {
		return nil, err
	}
	sp := &padSpec{mode: mode}
	r := x.Rank()
	var pads, axes []int64
	if ctx.Opset < 11 {
		name := "pads"
		if ctx.Opset < 2 {
			name = "paddings"
		}
		if !n.HasAttr(name) {
			return nil, kernels.Invalidf(n, "missing %s attribute", name)
		}
		pads = n.AttrInts(name, nil)
		if n.HasAttr("value") && mode == "constant" {
			v := n.AttrFloat("value", 0)
			if !x.DType.IsNumeric() && x.DType != graph.Bool {
				return nil, kernels.Invalidf(n, "value attribute cannot fill a %v tensor", x.DType)
			}
			t, err := graph.New(x.DType, []int{1})
			if err != nil {
				return nil, kernels.Invalidf(n, "%v", err)
			}
			t.SetFloat64(0, float64(v))
			sp.value = t
		}
	} else {
		pt := kernels.Input(in, 1)
		if pt == nil {
			return nil, kernels.Invalidf(n, "missing pads input")
		}
		if pads, err = indexValues(n, pt, "pads"); err != nil {
			return nil, err
		}
		if pt.Rank() > 1 {
			return nil, kernels.Invalidf(n, "pads must be a 1-D tensor, got shape %v", pt.Shape)
		}
		if cv := kernels.Input(in, 2); cv != nil && mode == "constant" {
			if err := checkTensor(n, cv, "constant_value"); err != nil {
				return nil, err
			}
			if cv.DType != x.DType {
				return nil, kernels.Invalidf(n, "constant_value dtype %v differs from data dtype %v", cv.DType, x.DType)
			}
			if cv.Len() != 1 {
				return nil, kernels.Invalidf(n, "constant_value must be a scalar, got shape %v", cv.Shape)
			}
			sp.value = cv
		}
		if at := kernels.Input(in, 3); at != nil {
			if ctx.Opset < 18 {
				return nil, kernels.Invalidf(n, "the axes input needs opset 18, model has %d", ctx.Opset)
			}
			if axes, err = indexValues(n, at, "axes"); err != nil {
				return nil, err
			}
		}
	}
	if sp.begin, sp.end, err = indexops.ExpandPads(n, pads, axes, r); err != nil {
		return nil, err
	}
	return sp, nil
}

// padAxisMap returns, for every output coordinate along one axis, the input
// coordinate it reads or -1 for the constant. Negative pads crop the input
// first; positive pads then extend what is left according to mode.
func padAxisMap(n *graph.Node, dim int, pb, pe int64, mode string) ([]int, error) {
	cropB, cropE := max(0, -pb), max(0, -pe)
	addB, addE := max(0, pb), max(0, pe)
	m := int64(dim) - cropB - cropE
	if m < 0 {
		return nil, kernels.Invalidf(n, "pads %d, %d crop more than the dimension %d", pb, pe, dim)
	}
	size := m + addB + addE
	if m == 0 && size > 0 && mode != "constant" {
		return nil, kernels.Invalidf(n, "%s padding cannot extend an empty dimension", mode)
	}
	out := make([]int, size)
	for o := range out {
		j := int64(o) - addB
		if j < 0 || j >= m {
			switch mode {
			case "constant":
				out[o] = -1
				continue
			case "edge":
				j = min(max(j, 0), m-1)
			case "wrap":
				j = ((j % m) + m) % m
			case "reflect":
				if m == 1 {
					j = 0
				} else {
					p := 2 * (m - 1)
					j = ((j % p) + p) % p
					if j >= m {
						j = p - j
					}
				}
			}
		}
		out[o] = int(cropB + j)
	}
	return out, nil
}

func padKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "data"); err != nil {
		return nil, err
	}
	sp, err := padParams(ctx, n, x, in)
	if err != nil {
		return nil, err
	}
	r := x.Rank()
	shape := make([]int, r)
	for d := range r {
		v := int64(x.Shape[d]) + sp.begin[d] + sp.end[d]
		if v < 0 || v > int64(graph.MaxTensorBytes) || sp.begin[d] > int64(graph.MaxTensorBytes) || sp.end[d] > int64(graph.MaxTensorBytes) {
			return nil, kernels.Invalidf(n, "pads %d, %d do not fit dimension %d of %v", sp.begin[d], sp.end[d], d, x.Shape)
		}
		shape[d] = int(v)
	}
	if _, err := graph.CheckAlloc(x.DType, shape); err != nil {
		return nil, kernels.Invalidf(n, "output: %v", err)
	}
	maps := make([][]int, r)
	total := kernels.Prod(shape)
	for d := range r {
		if total == 0 {
			break // nothing to compute; the maps could be needlessly large
		}
		if maps[d], err = padAxisMap(n, x.Shape[d], sp.begin[d], sp.end[d], sp.mode); err != nil {
			return nil, err
		}
	}
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	if total == 0 {
		return ctx.Outputs(out), nil
	}
	if sp.value != nil {
		fillFrom(out.Data, sp.value.Data, 0)
	}
	xs := kernels.Strides(x.Shape)
	cnt := make([]int, r)
	takeSeq(out.Data, x.Data, func(int) int {
		src := 0
		for d := range r {
			p := maps[d][cnt[d]]
			if p < 0 {
				src = -1
				break
			}
			src += p * xs[d]
		}
		for d := r - 1; d >= 0; d-- {
			cnt[d]++
			if cnt[d] < shape[d] {
				break
			}
			cnt[d] = 0
		}
		return src
	})
	return ctx.Outputs(out), nil
}
