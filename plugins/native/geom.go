package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// window is a 2-D sliding window (1-D windows have kh = 1): kernel, strides,
// dilations and the begin/end pads of the two spatial dims.
type window struct {
	autoPad        string
	kh, kw, sh, sw int
	dh, dw         int
	pt, pl, pb, pr int
	nd             int
	ceil           bool
}

// readWindow reads the window attributes for nd (1 or 2) spatial dims;
// kernel is the kernel shape (from the weights, or kernel_shape).
func readWindow(n *graph.Node, nd int, kernel []int) (window, error) {
	w := window{autoPad: n.AttrString("auto_pad", "NOTSET"), nd: nd, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1}
	if w.autoPad == "" {
		w.autoPad = "NOTSET"
	}
	switch w.autoPad {
	case "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER":
	default:
		return w, fmt.Errorf("%w: auto_pad %q", kernels.ErrInvalid, w.autoPad)
	}
	get := func(name string, cnt int, def int64) ([]int, error) {
		v := n.AttrInts(name, nil)
		if v == nil {
			out := make([]int, cnt)
			for i := range out {
				out[i] = int(def)
			}
			return out, nil
		}
		if len(v) != cnt {
			return nil, fmt.Errorf("%w: %s has %d values, want %d", kernels.ErrInvalid, name, len(v), cnt)
		}
		out := make([]int, cnt)
		for i, x := range v {
			if x < 0 || x > 1<<20 {
				return nil, fmt.Errorf("%w: %s value %d", kernels.ErrInvalid, name, x)
			}
			out[i] = int(x)
		}
		return out, nil
	}
	ks := kernel
	if v := n.AttrInts("kernel_shape", nil); v != nil {
		var err error
		if ks, err = get("kernel_shape", nd, 1); err != nil {
			return w, err
		}
		if kernel != nil && !graph.SameShape(ks, kernel) {
			return w, fmt.Errorf("%w: kernel_shape %v does not match the weights' %v", kernels.ErrInvalid, ks, kernel)
		}
	}
	if len(ks) != nd {
		return w, fmt.Errorf("%w: kernel_shape is required", kernels.ErrInvalid)
	}
	st, err := get("strides", nd, 1)
	if err != nil {
		return w, err
	}
	dl, err := get("dilations", nd, 1)
	if err != nil {
		return w, err
	}
	pads, err := get("pads", 2*nd, 0)
	if err != nil {
		return w, err
	}
	for i := 0; i < nd; i++ {
		if ks[i] < 1 || st[i] < 1 || dl[i] < 1 {
			return w, fmt.Errorf("%w: kernel, strides and dilations must be ≥ 1", kernels.ErrInvalid)
		}
	}
	w.ceil = n.AttrInt("ceil_mode", 0) != 0
	if nd == 2 {
		w.kh, w.kw, w.sh, w.sw, w.dh, w.dw = ks[0], ks[1], st[0], st[1], dl[0], dl[1]
		w.pt, w.pl, w.pb, w.pr = pads[0], pads[1], pads[2], pads[3]
	} else {
		w.kw, w.sw, w.dw = ks[0], st[0], dl[0]
		w.pl, w.pr = pads[0], pads[1]
	}
	return w, nil
}

// geom is a window applied to one input size.
type geom struct {
	window
	ih, iw, oh, ow int
}

// at computes the output size and effective pads for an input of ih×iw.
func (w window) at(ih, iw int) (geom, error) {
	g := geom{window: w, ih: ih, iw: iw}
	var err error
	if g.oh, g.pt, g.pb, err = outDim(w, ih, w.kh, w.sh, w.dh, w.pt, w.pb); err != nil {
		return g, err
	}
	if g.ow, g.pl, g.pr, err = outDim(w, iw, w.kw, w.sw, w.dw, w.pl, w.pr); err != nil {
		return g, err
	}
	return g, nil
}

func outDim(w window, in, k, s, d, pb, pe int) (o, b, e int, err error) {
	ek := (k-1)*d + 1
	switch w.autoPad {
	case "VALID":
		pb, pe = 0, 0
	case "SAME_UPPER", "SAME_LOWER":
		o = (in + s - 1) / s
		total := max(0, (o-1)*s+ek-in)
		if w.autoPad == "SAME_UPPER" {
			pb, pe = total/2, total-total/2
		} else {
			pb, pe = total-total/2, total/2
		}
		return o, pb, pe, nil
	}
	span := in + pb + pe - ek
	if span < 0 {
		return 0, 0, 0, fmt.Errorf("%w: input %d (padded %d) smaller than the kernel extent %d", kernels.ErrInvalid, in, in+pb+pe, ek)
	}
	if w.ceil {
		o = (span+s-1)/s + 1
		if (o-1)*s >= in+pb { // the last window must start inside the input or its begin pad
			o--
		}
	} else {
		o = span/s + 1
	}
	return o, pb, pe, nil
}
