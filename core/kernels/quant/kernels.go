package quant

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
)

// params are one quantized tensor's scales and zero points (one entry
// per tensor, or one per channel).
type params struct {
	scale []float32
	zp    []int32
}

func (p params) s(c int) float32 {
	if len(p.scale) == 1 {
		return p.scale[0]
	}
	return p.scale[c]
}

func (p params) z(c int) int32 {
	if len(p.zp) == 1 {
		return p.zp[0]
	}
	return p.zp[c]
}

// zpOne holds each zero point in [−zpOneMax, zpOneMax) once: a per-tensor
// pair's zp (readParams) is a one-element slice of it, read-only, so that
// a kernel reading its parameters on every call allocates nothing.
var zpOne = func() (t [2 * zpOneMax]int32) {
	for i := range t {
		t[i] = int32(i - zpOneMax)
	}
	return t
}()

const zpOneMax = 256

// readParams reads the scale and zero point inputs at i and i+1; channels
// > 0 allows a 1-D per-channel pair of that length.
func readParams(n *graph.Node, in []*graph.Tensor, i int, channels int, what string) (params, error) {
	s, z := kernels.Input(in, i), kernels.Input(in, i+1)
	if s == nil || z == nil {
		return params{}, kernels.Invalidf(n, "missing scale or zero point of %s", what)
	}
	sd, ok := s.Data.([]float32)
	if !ok || s.Check() != nil {
		return params{}, kernels.Invalidf(n, "scale of %s must be float32, got %v", what, s.DType)
	}
	if z.Check() != nil || (z.DType != graph.Int8 && z.DType != graph.Int32) {
		return params{}, kernels.Invalidf(n, "zero point of %s must be int8, got %v", what, z.DType)
	}
	if len(sd) != z.Len() || len(sd) == 0 {
		return params{}, kernels.Invalidf(n, "%s has %d scales and %d zero points", what, len(sd), z.Len())
	}
	if len(sd) != 1 && (channels <= 0 || len(sd) != channels) {
		return params{}, kernels.Invalidf(n, "%s has %d scales; expected 1 or %d", what, len(sd), max(channels, 1))
	}
	p := params{scale: sd}
	if v := z.Int64At(0); len(sd) == 1 && v >= -zpOneMax && v < zpOneMax {
		p.zp = zpOne[v+zpOneMax : v+zpOneMax+1 : v+zpOneMax+1] // read-only, shared
	} else {
		p.zp = make([]int32, len(sd))
		for k := range p.zp {
			p.zp[k] = int32(z.Int64At(k))
		}
	}
	for _, v := range sd {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return params{}, kernels.Invalidf(n, "%s has scale %g; scales must be positive and finite", what, v)
		}
	}
	return p, nil
}

func int8Input(n *graph.Node, in []*graph.Tensor, i int, what string) ([]int8, *graph.Tensor, error) {
	t := kernels.Input(in, i)
	if err := kernels.CheckInput(n, t, what); err != nil {
		return nil, nil, err
	}
	d, ok := t.Data.([]int8)
	if !ok {
		return nil, nil, kernels.Unsupportedf(n, "%s must be int8, got %v", what, t.DType)
	}
	return d, t, nil
}

func actRange(n *graph.Node, y params) (int32, int32, error) {
	lo, hi, ok := activationRange(n.AttrString("activation", "NONE"), y.s(0), y.z(0))
	if !ok {
		return 0, 0, kernels.Unsupportedf(n, "activation %q", n.AttrString("activation", ""))
	}
	return lo, hi, nil
}

func clamp8(v, lo, hi int32) int8 { return int8(min(max(v, lo), hi)) }

func ints(n *graph.Node, name string, def []int64, want int) ([]int, error) {
	v := n.AttrInts(name, def)
	if len(v) != want {
		return nil, kernels.Invalidf(n, "%s needs %d values, got %v", name, want, v)
	}
	out := make([]int, want)
	for i, x := range v {
		if x < 0 || x > 1<<20 {
			return nil, kernels.Invalidf(n, "%s value %d is out of range", name, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

func init() {
	d := quantops.Domain
	kernels.RegisterKernel(d, "Conv2D", func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return conv(ctx, n, in, false)
	})
	kernels.RegisterKernel(d, "DepthwiseConv2D", func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return conv(ctx, n, in, true)
	})
	kernels.RegisterKernel(d, "FullyConnected", fullyConnected)
	kernels.RegisterKernel(d, "Add", binary)
	kernels.RegisterKernel(d, "Sub", binary)
	kernels.RegisterKernel(d, "Mul", binary)
	kernels.RegisterKernel(d, "AveragePool2D", pool)
	kernels.RegisterKernel(d, "MaxPool2D", pool)
	kernels.RegisterKernel(d, "Mean", mean)
	kernels.RegisterKernel(d, "Softmax", softmax)
	kernels.RegisterKernel(d, "Logistic", logistic)
	kernels.RegisterKernel(d, "Tanh", tanh)
	kernels.RegisterKernel(d, "Quantize", quantize)
	kernels.RegisterKernel(d, "Dequantize", dequantize)
}
