package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
)

// windowAttrs are the sliding-window attributes shared by Conv,
// ConvTranspose, MaxPool and AveragePool, validated for nd spatial dims.
type windowAttrs struct {
	autoPad   string
	Kernel    []int
	strides   []int
	dilations []int
	pads      []int // x1_begin, x2_begin, …, x1_end, x2_end, …
}

// ReadWindowAttrs reads and checks the window attributes. wKernel is the
// Kernel shape taken from a weight tensor (Conv), or nil when kernel_shape
// is required (pools).
func ReadWindowAttrs(n *graph.Node, nd int, wKernel []int) (windowAttrs, error) {
	var w windowAttrs
	w.autoPad = n.AttrString("auto_pad", "NOTSET")
	switch w.autoPad {
	case "", "NOTSET":
		w.autoPad = "NOTSET"
	case "VALID", "SAME_UPPER", "SAME_LOWER":
	default:
		return w, ErrInvalid("unknown auto_pad %q", w.autoPad)
	}
	ints := func(name string, want, def int, min int64) ([]int, error) {
		v := n.AttrInts(name, nil)
		if v == nil {
			out := make([]int, want)
			for i := range out {
				out[i] = def
			}
			return out, nil
		}
		if len(v) != want {
			return nil, ErrInvalid("%s has %d values, expected %d", name, len(v), want)
		}
		out := make([]int, want)
		for i, x := range v {
			if x < min || x > 1<<31 {
				return nil, ErrInvalid("%s value %d out of range", name, x)
			}
			out[i] = int(x)
		}
		return out, nil
	}
	var err error
	if ks := n.AttrInts("kernel_shape", nil); ks != nil {
		if w.Kernel, err = ints("kernel_shape", nd, 1, 1); err != nil {
			return w, err
		}
		if wKernel != nil && !graph.SameShape(w.Kernel, wKernel) {
			return w, ErrInvalid("kernel_shape %v does not match the weight's %v", w.Kernel, wKernel)
		}
	} else if wKernel != nil {
		w.Kernel = append([]int{}, wKernel...)
	} else {
		return w, ErrInvalid("kernel_shape is required")
	}
	if w.strides, err = ints("strides", nd, 1, 1); err != nil {
		return w, err
	}
	if w.dilations, err = ints("dilations", nd, 1, 1); err != nil {
		return w, err
	}
	if w.pads, err = ints("pads", 2*nd, 0, 0); err != nil {
		return w, err
	}
	return w, nil
}

// Geom3 is a window geometry with 1–3 spatial dims embedded in 3 (leading
// dims of size 1), so kernels need only one loop nest.
type Geom3 struct {
	In, Out, K, S, D, Pb, Pe [3]int
}

func (g *Geom3) InSize() int { return g.In[0] * g.In[1] * g.In[2] }

func (g *Geom3) OutSize() int { return g.Out[0] * g.Out[1] * g.Out[2] }

func (g *Geom3) KSize() int { return g.K[0] * g.K[1] * g.K[2] }

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func CeilDiv(a, b int) int { return -floorDiv(-a, b) }

// ForwardGeom computes the output sizes and effective pads of a
// convolution or pooling window over in (spatial sizes). ceil selects
// pooling's ceil_mode (the last window must start inside the input or its
// begin padding).
func ForwardGeom(w windowAttrs, in []int, ceil bool) (Geom3, error) {
	nd := len(in)
	var g Geom3
	if nd < 1 || nd > 3 {
		return g, errUnsupportedRank(nd)
	}
	off := 3 - nd
	for i := 0; i < 3; i++ {
		g.In[i], g.Out[i], g.K[i], g.S[i], g.D[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < nd; i++ {
		I, k, s, d := in[i], w.Kernel[i], w.strides[i], w.dilations[i]
		ek := (k-1)*d + 1
		var o, pb, pe int
		switch w.autoPad {
		case "VALID":
			if I < ek {
				return g, ErrInvalid("spatial dim %d: input %d smaller than the kernel extent %d", i, I, ek)
			}
			o = (I-ek)/s + 1
		case "SAME_UPPER", "SAME_LOWER":
			o = CeilDiv(I, s)
			total := max(0, (o-1)*s+ek-I)
			if w.autoPad == "SAME_UPPER" {
				pb, pe = total/2, total-total/2
			} else {
				pb, pe = total-total/2, total/2
			}
		default:
			pb, pe = w.pads[i], w.pads[nd+i]
			span := I + pb + pe - ek
			if span < 0 {
				return g, ErrInvalid("spatial dim %d: padded input %d smaller than the kernel extent %d", i, I+pb+pe, ek)
			}
			if ceil {
				o = CeilDiv(span, s) + 1
				if (o-1)*s >= I+pb {
					o--
				}
			} else {
				o = span/s + 1
			}
		}
		j := off + i
		g.In[j], g.Out[j], g.K[j], g.S[j], g.D[j], g.Pb[j], g.Pe[j] = I, o, k, s, d, pb, pe
	}
	return g, nil
}

// spatialDims extracts the static spatial dims (index 2…) of a declared
// shape; ok is false when any is unknown.
func staticDims(s graph.Shape) ([]int, bool) {
	out := make([]int, len(s))
	for i, d := range s {
		if !d.Static() {
			return nil, false
		}
		out[i] = int(d.Value)
	}
	return out, true
}

// inferWindowOut computes the declared output shape [N, C, spatial…] of a
// conv/pool node given its input's declared shape, or the spatial dims
// unknown when they cannot be derived.
func inferWindowOut(n *graph.Node, x graph.Shape, channels graph.Dim, wKernel []int, ceil bool) (graph.Shape, error) {
	if x == nil {
		return nil, nil
	}
	if len(x) < 3 {
		return nil, ErrInvalid("input must have rank >= 3, got %v", x)
	}
	nd := len(x) - 2
	out := make(graph.Shape, len(x))
	out[0], out[1] = x[0], channels
	for i := 2; i < len(out); i++ {
		out[i] = graph.Dim{Value: -1}
	}
	if wKernel != nil && len(wKernel) != nd {
		return nil, ErrInvalid("weight has %d spatial dims, input %d", len(wKernel), nd)
	}
	if wKernel == nil && n.AttrInts("kernel_shape", nil) == nil {
		return out, nil
	}
	w, err := ReadWindowAttrs(n, nd, wKernel)
	if err != nil {
		return nil, err
	}
	in, ok := staticDims(x[2:])
	if !ok || nd > 3 {
		return out, nil
	}
	g, err := ForwardGeom(w, in, ceil)
	if err != nil {
		return nil, err
	}
	for i := 0; i < nd; i++ {
		out[2+i] = graph.Dim{Value: int64(g.Out[3-nd+i])}
	}
	return out, nil
}
