package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// A zero Pad of the spatial axes whose only reader is a Conv is folded
// into the Conv's own pads: TFLite's explicit PAD before a stride-2
// convolution with VALID padding (pose_detection's zero_padding2d
// layers) then costs no copy of the tensor. Zeros around zeros are the
// same zeros, so the Conv of the unpadded input with the sum of both
// pads computes what the two nodes compute.

// padFold returns the Pad that conv reads as its input when it can be
// folded, and the Conv's pads with it folded in ([h0, w0, h1, w1] for a
// 2-D Conv, [w0, w1] for 1-D); nil when it cannot.
func padFold(sg *hal.Subgraph, conv *graph.Node, producer map[string]*graph.Node, readers map[string][]*graph.Node, isOut map[string]bool, free func(*graph.Node) bool) (*graph.Node, []int64) {
	if len(conv.Inputs) == 0 || conv.AttrString("auto_pad", "NOTSET") != "NOTSET" {
		return nil, nil
	}
	pad := producer[conv.Inputs[0]]
	if pad == nil || pad.OpType != "Pad" || pad.Domain != "" || !free(pad) || len(pad.Outputs) != 1 || isOut[pad.Outputs[0]] ||
		len(readers[pad.Outputs[0]]) != 1 || sg.OpsetVersion("") < 11 || pad.AttrString("mode", "constant") != "constant" ||
		len(pad.Inputs) < 2 || len(pad.Inputs) > 3 || check(sg, pad) != "" {
		return nil, nil
	}
	if len(pad.Inputs) == 3 && pad.Inputs[2] != "" {
		v := constInput(sg, pad, 2)
		if v == nil || v.DType != graph.Float32 || v.Len() != 1 || graph.Data[float32](v)[0] != 0 {
			return nil, nil
		}
	}
	p := constInput(sg, pad, 1)
	w := constInput(sg, conv, 1)
	if p == nil || p.DType != graph.Int64 || w == nil {
		return nil, nil
	}
	r := len(w.Shape)
	pv := graph.Data[int64](p)
	if len(pv) != 2*r || r < 3 || r > 4 {
		return nil, nil
	}
	nd := r - 2
	// batch and channels unpadded, the spatial pads not negative
	for _, i := range []int{0, 1, r, r + 1} {
		if pv[i] != 0 {
			return nil, nil
		}
	}
	own := conv.AttrInts("pads", nil)
	if own == nil {
		own = make([]int64, 2*nd)
	}
	if len(own) != 2*nd {
		return nil, nil
	}
	out := make([]int64, 2*nd)
	for i := 0; i < nd; i++ {
		b, e := pv[2+i], pv[r+2+i]
		if b < 0 || e < 0 {
			return nil, nil
		}
		out[i], out[nd+i] = own[i]+b, own[nd+i]+e
	}
	return pad, out
}

// withPads is a copy of n's attributes with pads set to pads.
func withPads(n *graph.Node, pads []int64) map[string]*graph.Attribute {
	a := make(map[string]*graph.Attribute, len(n.Attrs)+1)
	for k, v := range n.Attrs {
		a[k] = v
	}
	a["pads"] = &graph.Attribute{Name: "pads", Type: graph.AttrInts, Ints: pads}
	return a
}
