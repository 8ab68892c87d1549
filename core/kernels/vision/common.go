package vision

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// errInvalid makes an error wrapping kernels.ErrInvalid; kernels wrap it
// again with the node's label.
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", kernels.ErrInvalid, fmt.Sprintf(format, args...))
}

// floatTypes are the dtypes the float-only ops here accept.
var floatTypes = kernels.FloatTypes

// newFromFloat64 allocates an output of dtype dt and stores vals into it
// (float16/bfloat16 round to nearest even, integers truncate toward zero).
func newFromFloat64(ctx *kernels.Context, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if out.Len() != len(vals) {
		return nil, fmt.Errorf("%w: internal size mismatch %d vs %d", kernels.ErrInvalid, out.Len(), len(vals))
	}
	switch d := out.Data.(type) {
	case []float64:
		copy(d, vals)
	case []float32:
		for i, v := range vals {
			d[i] = float32(v)
		}
	case []graph.F16:
		for i, v := range vals {
			d[i] = graph.F16FromFloat64(v)
		}
	default:
		for i, v := range vals {
			out.SetFloat64(i, v)
		}
	}
	return out, nil
}

// checkScratch refuses a float64 scratch buffer of this shape when it
// would exceed the tensor size limit, before it is allocated.
func checkScratch(shape []int) (int, error) {
	return graph.CheckAlloc(graph.Float64, shape)
}

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

// ---- sliding windows (LpPool, Col2Im, DeformConv) ----

// window holds validated per-spatial-axis window attributes.
type window struct {
	kernel, strides, dilations []int
	pads                       []int // begins then ends
}

// readInts reads an ints attribute with want values (def when absent),
// each in [min, 1<<31].
func readInts(n *graph.Node, name string, want, def int, min int64) ([]int, error) {
	v := n.AttrInts(name, nil)
	out := make([]int, want)
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
		if x < min || x > 1<<31 {
			return nil, errInvalid("%s value %d out of range", name, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// readWindow reads strides, dilations and pads for nd spatial axes; kernel
// is supplied by the caller.
func readWindow(n *graph.Node, kernel []int) (window, error) {
	nd := len(kernel)
	w := window{kernel: kernel}
	var err error
	if w.strides, err = readInts(n, "strides", nd, 1, 1); err != nil {
		return w, err
	}
	if w.dilations, err = readInts(n, "dilations", nd, 1, 1); err != nil {
		return w, err
	}
	if w.pads, err = readInts(n, "pads", 2*nd, 0, 0); err != nil {
		return w, err
	}
	return w, nil
}

// outSizes computes output spatial sizes for a forward window (pooling or
// convolution) over input sizes in. autoPad is NOTSET, VALID, SAME_UPPER or
// SAME_LOWER; with SAME_* the pads in w are replaced by the computed ones.
// ceil selects pooling's ceil_mode.
func (w *window) outSizes(in []int, autoPad string, ceil bool) ([]int, error) {
	nd := len(in)
	out := make([]int, nd)
	for i := 0; i < nd; i++ {
		I, k, s, d := in[i], w.kernel[i], w.strides[i], w.dilations[i]
		ek := (k-1)*d + 1
		switch autoPad {
		case "VALID":
			w.pads[i], w.pads[nd+i] = 0, 0
			if I < ek {
				return nil, errInvalid("spatial dim %d: input %d smaller than the kernel extent %d", i, I, ek)
			}
			out[i] = (I-ek)/s + 1
		case "SAME_UPPER", "SAME_LOWER":
			o := (I + s - 1) / s
			total := max(0, (o-1)*s+ek-I)
			if autoPad == "SAME_UPPER" {
				w.pads[i], w.pads[nd+i] = total/2, total-total/2
			} else {
				w.pads[i], w.pads[nd+i] = total-total/2, total/2
			}
			out[i] = o
		case "NOTSET", "":
			pb, pe := w.pads[i], w.pads[nd+i]
			span := I + pb + pe - ek
			if span < 0 {
				return nil, errInvalid("spatial dim %d: padded input %d smaller than the kernel extent %d", i, I+pb+pe, ek)
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
			return nil, errInvalid("unknown auto_pad %q", autoPad)
		}
	}
	return out, nil
}

// counter iterates over all indices of a shape in row-major order.
type counter struct {
	shape []int
	idx   []int
	done  bool
}

func newCounter(shape []int) *counter {
	c := &counter{shape: shape, idx: make([]int, len(shape))}
	for _, d := range shape {
		if d <= 0 {
			c.done = true
		}
	}
	return c
}

// next advances; it returns false once every index has been visited.
func (c *counter) next() bool {
	for i := len(c.idx) - 1; i >= 0; i-- {
		c.idx[i]++
		if c.idx[i] < c.shape[i] {
			return true
		}
		c.idx[i] = 0
	}
	c.done = true
	return false
}

// padInfer wraps an InferFunc so that it always sees at least k inputs
// (missing ones have an unknown type).
func padInfer(k int, f kernels.InferFunc) kernels.InferFunc {
	return func(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
		for len(in) < k {
			in = append(in[:len(in):len(in)], kernels.InferInput{})
		}
		return f(n, opset, in)
	}
}
