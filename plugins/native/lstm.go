package native

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// LSTM: the common configuration — forward, layout 0, the default
// activations (sigmoid, tanh, tanh), no clip, no peepholes, no input
// forget, no sequence lengths, float32 — computed on vector dot products
// (each gate row of W and R against the step's input and hidden state),
// in the reference kernel's order of operations otherwise. Any other
// configuration, or inputs that do not fit it at run time, run the
// reference kernel.

func checkLSTM(sg *hal.Subgraph, n *graph.Node) string { return needF32(sg, n, 0, 1, 2) }

// lstmFast says whether a node's attributes are the ones lstmRun computes.
func lstmFast(n *graph.Node, opset int64) bool {
	if n.AttrString("direction", "forward") != "forward" || n.HasAttr("clip") || n.AttrInt("input_forget", 0) != 0 ||
		n.HasAttr("activations") || (opset >= 14 && n.AttrInt("layout", 0) != 0) {
		return false
	}
	for i := 4; i < len(n.Inputs); i++ { // sequence_lens and P absent
		if (i == 4 || i == 7) && n.Inputs[i] != "" {
			return false
		}
	}
	return true
}

func buildLSTM(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	return lstmKernel(bc, n, bc.sg.OpsetVersion(""))
}

// lstmKernel is the kernel of an LSTM node (the reference one when its
// attributes are not lstmRun's).
func lstmKernel(bc *buildCtx, n *graph.Node, opset int64) (kernels.Func, error) {
	ref, ok := kernels.Lookup("", "LSTM")
	if !ok {
		return nil, fmt.Errorf("%w: no reference LSTM kernel", kernels.ErrUnsupported)
	}
	if !lstmFast(n, opset) {
		return ref.Kernel, nil
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if outs, ok, err := lstmRun(ctx, node, in); ok {
			return outs, err
		}
		return ref.Kernel(ctx, node, in)
	}, nil
}

// lstmRun computes the LSTM, or returns false when the inputs are not the
// float32 shapes it takes (the reference kernel then decides).
func lstmRun(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, bool, error) {
	x, w, r := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	b, h0, c0 := kernels.Input(in, 3), kernels.Input(in, 5), kernels.Input(in, 6)
	if x == nil || w == nil || r == nil || len(x.Shape) != 3 || len(w.Shape) != 3 || len(r.Shape) != 3 {
		return nil, false, nil
	}
	for _, t := range []*graph.Tensor{x, w, r, b, h0, c0} {
		if t != nil && t.DType != graph.Float32 {
			return nil, false, nil
		}
	}
	S, B, I := x.Shape[0], x.Shape[1], x.Shape[2]
	H := r.Shape[2]
	G := 4 * H
	if H == 0 || w.Shape[0] != 1 || w.Shape[1] != G || w.Shape[2] != I || r.Shape[0] != 1 || r.Shape[1] != G ||
		(n.HasAttr("hidden_size") && n.AttrInt("hidden_size", 0) != int64(H)) ||
		(b != nil && !graph.SameShape(b.Shape, []int{1, 2 * G})) ||
		(h0 != nil && !graph.SameShape(h0.Shape, []int{1, B, H})) || (c0 != nil && !graph.SameShape(c0.Shape, []int{1, B, H})) {
		return nil, false, nil
	}
	outs := make([]*graph.Tensor, len(n.Outputs))
	for i := range outs {
		if n.Outputs[i] == "" || i > 2 {
			continue
		}
		shape := []int{1, B, H}
		if i == 0 {
			shape = []int{S, 1, B, H}
		}
		t, err := ctx.New(graph.Float32, shape)
		if err != nil {
			return nil, true, err
		}
		outs[i] = t
	}
	X, W, R := f32(x), f32(w), f32(r)
	h, c := make([]float32, B*H), make([]float32, B*H)
	if h0 != nil {
		copy(h, f32(h0))
	}
	if c0 != nil {
		copy(c, f32(c0))
	}
	var bias []float32
	if b != nil {
		bs := f32(b)
		bias = make([]float32, G)
		for g := range bias {
			bias[g] = bs[g] + bs[G+g]
		}
	}
	var Y []float32
	if outs[0] != nil {
		Y = f32(outs[0])
	}
	gx, gh := make([]float32, G), make([]float32, G)
	for s := 0; s < S; s++ {
		for bi := 0; bi < B; bi++ {
			xr := X[(s*B+bi)*I : (s*B+bi+1)*I]
			hb, cb := h[bi*H:(bi+1)*H], c[bi*H:(bi+1)*H]
			for g := 0; g < G; g++ {
				gx[g] = dot(W[g*I:(g+1)*I], xr)
			}
			for g, v := range bias { // none without B
				gx[g] += v
			}
			for g := 0; g < G; g++ {
				gh[g] = dot(R[g*H:(g+1)*H], hb)
			}
			for g := range gh {
				gh[g] += gx[g]
			}
			ig, og, fg, cg := gh[:H], gh[H:2*H], gh[2*H:3*H], gh[3*H:]
			for j := 0; j < H; j++ {
				i, f := sigmoid(ig[j]), sigmoid(fg[j])
				cn := f*cb[j] + i*float32(math.Tanh(float64(cg[j])))
				cb[j] = cn
				hb[j] = sigmoid(og[j]) * float32(math.Tanh(float64(cn)))
			}
			if Y != nil {
				copy(Y[(s*B+bi)*H:(s*B+bi+1)*H], hb)
			}
		}
	}
	if S == 0 { // like the reference: no step, a zero state
		clear(h)
		clear(c)
	}
	for i, st := range [][]float32{h, c} {
		if i+1 < len(outs) && outs[i+1] != nil {
			copy(f32(outs[i+1]), st)
		}
	}
	return outs, true, nil
}
