package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// PRelu: y = x < 0 ? slope·x : x, slope broadcast to x (ONNX's
// unidirectional broadcast). Every slope layout that varies along one
// contiguous range of x's dims takes the vector kernels: a scalar, per
// channel on NCHW ([C,1,1], [1,C,1,1]: constant over each plane), per
// channel on NHWC (TFLite's [1,1,C]: consecutive along the last dim) and
// a full-size slope; any other broadcast runs the reference kernel, as do
// other dtypes and the errors.

func checkPRelu(sg *hal.Subgraph, n *graph.Node) string {
	if len(n.Inputs) != 2 || len(n.Outputs) != 1 {
		return fmt.Sprintf("native: PRelu with %d inputs", len(n.Inputs))
	}
	return needF32(sg, n, 0, 1)
}

// preluTask is PRelu's loop (chunksFor).
type preluTask struct {
	y, x, s []float32
	p       pattern
}

func buildPRelu(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	ref, _ := kernels.Lookup("", "PRelu")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x, s := in[0], in[1]
		if x == nil || s == nil || x.DType != graph.Float32 || s.DType != graph.Float32 || len(s.Shape) > len(x.Shape) {
			return ref.Kernel(ctx, node, in)
		}
		var ob [8]int
		out, err := broadcastInto(&ob, x.Shape, s.Shape)
		if err != nil || !graph.SameShape(out, x.Shape) {
			return ref.Kernel(ctx, node, in)
		}
		p, ok := bcastPattern(x.Shape, s.Shape)
		if !ok {
			return ref.Kernel(ctx, node, in)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		t := preluTask{y: f32(y), x: f32(x), s: f32(s), p: p}
		chunksFor(bc.pool, len(t.y), t, func(t preluTask, i0, i1 int) {
			for i := i0; i < i1; {
				j, run, constant := locate(t.p, i, len(t.y))
				run = min(run, i1-i)
				if constant {
					preluVS(t.y[i:i+run], t.x[i:i+run], t.s[j])
				} else {
					preluVV(t.y[i:i+run], t.x[i:i+run], t.s[j:j+run])
				}
				i += run
			}
		})
		return ctx.Outputs(y), nil
	}, nil
}

func preluVVGo(y, x, s []float32) {
	x, s = x[:len(y)], s[:len(y)]
	for i, v := range x {
		if v < 0 {
			v *= s[i]
		}
		y[i] = v
	}
}

func preluVSGo(y, x []float32, s float32) {
	x = x[:len(y)]
	for i, v := range x {
		if v < 0 {
			v *= s
		}
		y[i] = v
	}
}
