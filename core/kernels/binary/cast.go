package binary

import (
	binaryops "github.com/switchyard-hal/switchyard/core/ops/binary"

	"math"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Cast semantics:
//   - float → integer truncates toward zero; NaN gives 0 and values outside
//     int64 saturate before wrapping to the narrower type (ONNX leaves
//     out-of-range results undefined; this is a defined choice).
//   - integer → integer wraps (two's complement), like numpy's astype.
//   - to float16/bfloat16 rounds once to nearest even.
//   - anything → bool is v != 0 (NaN → true); bool → number is 0/1.
//   - string → number parses decimal/scientific text, "inf", "nan"; number
//     → string uses numpy's style ("1.5", "1e-05", "nan", "inf").
//   - the "saturate" and "round_mode" attributes only concern float8 types,
//     which Switchyard does not support.

func castKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 1); err != nil {
		return nil, err
	}
	to, err := binaryops.CastTo(n)
	if err != nil {
		return nil, err
	}
	out, err := castTensor(ctx, n, in[0], to)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

func castLikeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 2); err != nil {
		return nil, err
	}
	out, err := castTensor(ctx, n, in[0], in[1].DType)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// castTensor converts x to dtype to into a fresh tensor.
func castTensor(ctx *kernels.Context, n *graph.Node, x *graph.Tensor, to graph.DType) (*graph.Tensor, error) {
	if !to.Supported() {
		return nil, kernels.Unsupportedf(n, "cast to %v", to)
	}
	if !x.DType.Supported() {
		return nil, kernels.Unsupportedf(n, "cast from %v", x.DType)
	}
	out, err := ctx.New(to, x.Shape)
	if err != nil {
		return nil, err
	}
	if x.DType == to {
		graph.CopyData(out.Data, x.Data)
		return out, nil
	}
	switch s := x.Data.(type) {
	case []float32:
		castNum(s, out)
	case []float64:
		castNum(s, out)
	case []graph.F16, []graph.BF16:
		castNum(kernels.ToFloat32(x).Data.([]float32), out)
	case []int8:
		castSigned(s, out)
	case []int16:
		castSigned(s, out)
	case []int32:
		castSigned(s, out)
	case []int64:
		castSigned(s, out)
	case []uint8:
		castUnsigned(s, out)
	case []uint16:
		castUnsigned(s, out)
	case []uint32:
		castUnsigned(s, out)
	case []uint64:
		castUnsigned(s, out)
	case []bool:
		castBool(s, out)
	case []string:
		if err := castString(n, s, out); err != nil {
			return nil, err
		}
	default:
		return nil, kernels.Unsupportedf(n, "cast from %v", x.DType)
	}
	return out, nil
}

func convSlice[S, D graph.Numeric](src []S, dst []D) {
	for i, v := range src {
		dst[i] = D(v)
	}
}

// toInt converts numbers to an integer type: floats through f2i/f2u
// (truncate, saturate at 64 bits, then wrap), integers wrap.
func toInt[S graph.Numeric, D sInt | uInt](src []S, dst []D) {
	switch s := any(src).(type) {
	case []float32:
		floatToInt(s, dst)
	case []float64:
		floatToInt(s, dst)
	default:
		convSlice(src, dst)
	}
}

func floatToInt[S float32 | float64, D sInt | uInt](src []S, dst []D) {
	var zero D
	if zero-1 < zero { // signed
		for i, v := range src {
			dst[i] = D(f2i(float64(v)))
		}
		return
	}
	for i, v := range src {
		dst[i] = D(f2u(float64(v)))
	}
}

// castNum converts a numeric slice to every numeric and bool dtype, and a
// float slice to string (integers reach strings through castSigned and
// castUnsigned).
func castNum[S graph.Numeric](src []S, out *graph.Tensor) {
	switch d := out.Data.(type) {
	case []float32:
		convSlice(src, d)
	case []float64:
		convSlice(src, d)
	case []graph.F16:
		for i, v := range src {
			d[i] = f16From64(float64(v))
		}
	case []graph.BF16:
		for i, v := range src {
			d[i] = bf16From64(float64(v))
		}
	case []int8:
		toInt(src, d)
	case []int16:
		toInt(src, d)
	case []int32:
		toInt(src, d)
	case []int64:
		toInt(src, d)
	case []uint8:
		toInt(src, d)
	case []uint16:
		toInt(src, d)
	case []uint32:
		toInt(src, d)
	case []uint64:
		toInt(src, d)
	case []bool:
		for i, v := range src {
			d[i] = v != 0
		}
	case []string:
		switch s := any(src).(type) {
		case []float32:
			for i, v := range s {
				d[i] = formatFloat(float64(v), 32)
			}
		case []float64:
			for i, v := range s {
				d[i] = formatFloat(v, 64)
			}
		}
	}
}

func castSigned[S sInt](src []S, out *graph.Tensor) {
	if d, ok := out.Data.([]string); ok {
		for i, v := range src {
			d[i] = strconv.FormatInt(int64(v), 10)
		}
		return
	}
	castNum(src, out)
}

func castUnsigned[S uInt](src []S, out *graph.Tensor) {
	if d, ok := out.Data.([]string); ok {
		for i, v := range src {
			d[i] = strconv.FormatUint(uint64(v), 10)
		}
		return
	}
	castNum(src, out)
}

func castBool(src []bool, out *graph.Tensor) {
	if d, ok := out.Data.([]string); ok {
		for i, v := range src {
			if v {
				d[i] = "True"
			} else {
				d[i] = "False"
			}
		}
		return
	}
	u := make([]uint8, len(src))
	for i, v := range src {
		if v {
			u[i] = 1
		}
	}
	castNum(u, out)
}

func castString(n *graph.Node, src []string, out *graph.Tensor) error {
	dt := out.DType
	for i, s := range src {
		s = strings.TrimSpace(s)
		switch {
		case dt.IsFloat():
			bits := 64
			if dt == graph.Float32 {
				bits = 32
			}
			v, err := strconv.ParseFloat(s, bits)
			if err != nil && !isRangeErr(err) {
				return kernels.Invalidf(n, "cannot parse %q as %v", s, dt)
			}
			switch d := out.Data.(type) {
			case []float32:
				d[i] = float32(v)
			case []float64:
				d[i] = v
			case []graph.F16:
				d[i] = f16From64(v)
			case []graph.BF16:
				d[i] = bf16From64(v)
			}
		case dt.IsInteger():
			if dt.IsSigned() {
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					f, ferr := strconv.ParseFloat(s, 64)
					if ferr != nil && !isRangeErr(ferr) {
						return kernels.Invalidf(n, "cannot parse %q as %v", s, dt)
					}
					v = f2i(f)
				}
				castNum([]int64{v}, sub1(out, i))
			} else {
				v, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					f, ferr := strconv.ParseFloat(s, 64)
					if ferr != nil && !isRangeErr(ferr) {
						return kernels.Invalidf(n, "cannot parse %q as %v", s, dt)
					}
					v = f2u(f)
				}
				castNum([]uint64{v}, sub1(out, i))
			}
		case dt == graph.Bool:
			d := out.Data.([]bool)
			if f, err := strconv.ParseFloat(s, 64); err == nil || isRangeErr(err) {
				d[i] = f != 0
			} else if b, err := strconv.ParseBool(s); err == nil {
				d[i] = b
			} else {
				return kernels.Invalidf(n, "cannot parse %q as bool", s)
			}
		default:
			return kernels.Unsupportedf(n, "cast from string to %v", dt)
		}
	}
	return nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// sub1 is a one-element view of out at i, for scalar stores through castInt.
func sub1(out *graph.Tensor, i int) *graph.Tensor {
	var d any
	switch s := out.Data.(type) {
	case []int8:
		d = s[i : i+1]
	case []int16:
		d = s[i : i+1]
	case []int32:
		d = s[i : i+1]
	case []int64:
		d = s[i : i+1]
	case []uint8:
		d = s[i : i+1]
	case []uint16:
		d = s[i : i+1]
	case []uint32:
		d = s[i : i+1]
	case []uint64:
		d = s[i : i+1]
	}
	return &graph.Tensor{DType: out.DType, Shape: []int{1}, Data: d}
}

// formatFloat prints a float like numpy's str(): positional notation for
// 1e-4 <= |v| < 1e16 (always with a fractional part), scientific otherwise,
// with the shortest digits that round-trip.
func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	a := math.Abs(v)
	if a == 0 || (a >= 1e-4 && a < 1e16) {
		s := strconv.FormatFloat(v, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	return strconv.FormatFloat(v, 'e', -1, bits)
}

func init() {
	kernels.RegisterKernel("", "Cast", castKernel)
	kernels.RegisterKernel("", "CastLike", castLikeKernel)
}
