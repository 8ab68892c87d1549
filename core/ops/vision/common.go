package vision

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// ErrInvalid makes an error wrapping kernels.ErrInvalid; kernels wrap it
// again with the node's label.
func ErrInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ops.ErrInvalid, fmt.Sprintf(format, args...))
}

// floatTypes are the dtypes the float-only ops here accept.
var floatTypes = ops.FloatTypes

// dimsOK checks that a shape has no negative dims.
func staticInts(s graph.Shape) ([]int, bool) {
	if s == nil {
		return nil, false
	}
	return s.Ints()
}

func unknownDims(n int) graph.Shape {
	s := make(graph.Shape, n)
	for i := range s {
		s[i] = graph.Dim{Value: -1}
	}
	return s
}

func dimOf(s graph.Shape, i int) graph.Dim {
	if i < len(s) {
		return s[i]
	}
	return graph.Dim{Value: -1}
}

// window holds validated per-spatial-axis window attributes.
type window struct {
	Kernel, Strides, Dilations []int
	Pads                       []int // begins then ends
}

// ReadInts reads an ints attribute with want values (def when absent),
// each in [min, 1<<31].
func ReadInts(n *graph.Node, name string, want, def int, min int64) ([]int, error) {
	v := n.AttrInts(name, nil)
	out := make([]int, want)
	if v == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != want {
		return nil, ErrInvalid("%s has %d values, expected %d", name, len(v), want)
	}
	for i, x := range v {
		if x < min || x > 1<<31 {
			return nil, ErrInvalid("%s value %d out of range", name, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// ReadWindow reads strides, dilations and pads for nd spatial axes; kernel
// is supplied by the caller.
func ReadWindow(n *graph.Node, kernel []int) (window, error) {
	nd := len(kernel)
	w := window{Kernel: kernel}
	var err error
	if w.Strides, err = ReadInts(n, "strides", nd, 1, 1); err != nil {
		return w, err
	}
	if w.Dilations, err = ReadInts(n, "dilations", nd, 1, 1); err != nil {
		return w, err
	}
	if w.Pads, err = ReadInts(n, "pads", 2*nd, 0, 0); err != nil {
		return w, err
	}
	return w, nil
}

// OutSizes computes output spatial sizes for a forward window (pooling or
// convolution) over input sizes in. autoPad is NOTSET, VALID, SAME_UPPER or
// SAME_LOWER; with SAME_* the pads in w are replaced by the computed ones.
// ceil selects pooling's ceil_mode.
func (w *window) OutSizes(in []int, autoPad string, ceil bool) ([]int, error) {
	nd := len(in)
	out := make([]int, nd)
	for i := 0; i < nd; i++ {
		I, k, s, d := in[i], w.Kernel[i], w.Strides[i], w.Dilations[i]
		ek := (k-1)*d + 1
		switch autoPad {
		case "VALID":
			w.Pads[i], w.Pads[nd+i] = 0, 0
			if I < ek {
				return nil, ErrInvalid("spatial dim %d: input %d smaller than the kernel extent %d", i, I, ek)
			}
			out[i] = (I-ek)/s + 1
		case "SAME_UPPER", "SAME_LOWER":
			o := (I + s - 1) / s
			total := max(0, (o-1)*s+ek-I)
			if autoPad == "SAME_UPPER" {
				w.Pads[i], w.Pads[nd+i] = total/2, total-total/2
			} else {
				w.Pads[i], w.Pads[nd+i] = total-total/2, total/2
			}
			out[i] = o
		case "NOTSET", "":
			pb, pe := w.Pads[i], w.Pads[nd+i]
			span := I + pb + pe - ek
			if span < 0 {
				return nil, ErrInvalid("spatial dim %d: padded input %d smaller than the kernel extent %d", i, I+pb+pe, ek)
			}
			if ceil {
				o := (span+s-1)/s + 1
				if (o-1)*s >= I+pb {
					o--
				}
				out[i] = o
			} else {
				out[i] = span/s + 1
			}
		default:
			return nil, ErrInvalid("unknown auto_pad %q", autoPad)
		}
	}
	return out, nil
}

// padInfer wraps an InferFunc so that it always sees at least k inputs
// (missing ones have an unknown type).
func padInfer(k int, f ops.InferFunc) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		for len(in) < k {
			in = append(in[:len(in):len(in)], ops.InferInput{})
		}
		return f(n, opset, in)
	}
}
