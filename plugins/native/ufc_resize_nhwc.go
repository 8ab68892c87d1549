package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"
	"github.com/switchyard-hal/switchyard/hal"
)

// A Resize (or Upsample) whose only reader is a Transpose by [0 2 3 1]
// (NCHW to channels-last: the last node of models converted from
// TensorFlow, deeplab_v3's 21×257×257 logits) is one node writing the
// channels-last output directly: each output row of every channel is
// computed into an L1-sized scratch (the same arithmetic as resize.go's
// rows) and transposed from there into the output, so the NCHW tensor is
// never written out and read back (the Transpose of a large output with
// few channels runs at a fraction of the memory bandwidth: its reads are
// one stream per channel). Resizes the direct path does not take run as
// before into a temporary tensor and transpose it.

// resizeNHWCMaxRow is the largest output row of all channels (C·ow
// floats) the direct path computes in scratch (three such rows a task).
const resizeNHWCMaxRow = 1 << 14

// resizeNHWCFollow returns tr when n is a Resize or Upsample the kernel
// here computes (resizeFast attributes, float32, a rank-4 input) and tr,
// its output's only reader, is a Transpose by [0 2 3 1] of float32 that
// native runs; else nil.
func resizeNHWCFollow(sg *hal.Subgraph, n, tr *graph.Node) *graph.Node {
	if tr == nil || n.Domain != "" || tr.Domain != "" || tr.OpType != "Transpose" || n.OpType != "Resize" && n.OpType != "Upsample" {
		return nil
	}
	if check(sg, n) != "" || check(sg, tr) != "" {
		return nil
	}
	var a resizeops.Attrs
	var err error
	if n.OpType == "Upsample" {
		a, err = resizeops.UpsampleAttrs(n)
	} else {
		a, err = resizeops.ResizeAttrs(n, sg.OpsetVersion(""))
	}
	if err != nil || !resizeFast(a) {
		return nil
	}
	p := tr.Attrs["perm"]
	if p == nil || len(p.Ints) != 4 || p.Ints[0] != 0 || p.Ints[1] != 2 || p.Ints[2] != 3 || p.Ints[3] != 1 {
		return nil
	}
	for _, v := range []string{input0(n), n.Outputs[0]} {
		t, ok := sg.TypeOf(v)
		if !ok || t.DType != graph.Float32 || len(t.Shape) != 4 {
			return nil
		}
	}
	return tr
}

// resizeNHWCDirect reports whether runNHWC takes t's resize of c
// channels.
func resizeNHWCDirect(t *resizeTask, c int) bool {
	return c*t.ow <= resizeNHWCMaxRow
}

// nhwcTask is runNHWC's loop over output rows (chunksFor, by output
// element).
type nhwcTask struct {
	t  *resizeTask
	c  int
	sc *scratch // a row of all channels, and the linear mode's two hrows slots
}

// runNHWC resizes t.x (NCHW) into a new channels-last output of shape
// [N, oh, ow, C] (out is the NCHW shape).
func (k *resizeKernel) runNHWC(ctx *kernels.Context, t *resizeTask, out [4]int) ([]*graph.Tensor, error) {
	c := out[1]
	y, err := ctx.NewUninit(graph.Float32, []int{out[0], out[2], out[3], c})
	if err != nil {
		return nil, err
	}
	t.y = f32(y)
	row := c * t.ow
	size := row
	if !t.nearest {
		size = 3 * row
	}
	chunksFor(k.pool, out[0]*t.oh*row, nhwcTask{t, c, k.ss.of(size)}, func(a nhwcTask, e0, e1 int) {
		t, c := a.t, a.c
		row, plane := c*t.ow, t.ih*t.iw
		b := a.sc.get()
		defer a.sc.put(b)
		buf := (*b)[:row]
		var h hrows
		if !t.nearest {
			h = hrows{buf: (*b)[row : 3*row], key: [2]int{-1, -1}, planes: c}
			h.slots = [2][]float32{h.buf[:row], h.buf[row:]}
		}
		for r := (e0 + row - 1) / row; r < (e1+row-1)/row; r++ {
			n, oy := r/t.oh, r%t.oh
			xs := t.x[n*c*plane : (n+1)*c*plane]
			if t.nearest {
				for ch := 0; ch < c; ch++ {
					src := xs[ch*plane+t.rows.i0[oy]*t.iw:][:t.iw]
					dst := buf[ch*t.ow : (ch+1)*t.ow]
					for ox := range dst {
						dst[ox] = src[t.cols.i0[ox]]
					}
				}
			} else {
				i0, i1 := t.rows.i0[oy], t.rows.i1[oy]
				top, bot := h.pair(t, n*t.ih+i0, xs[i0*t.iw:], n*t.ih+i1, xs[i1*t.iw:])
				lerp(buf, top, bot, t.rows.w[oy])
			}
			transpose2D(t.y[r*row:(r+1)*row], buf, c, t.ow)
		}
	})
	return ctx.Outputs(y), nil
}

// toNHWC returns x (rank 4) transposed by [0 2 3 1] in a new output, and
// gives x back to the allocator.
func toNHWC(ctx *kernels.Context, p *pool, x *graph.Tensor) ([]*graph.Tensor, error) {
	if x.DType != graph.Float32 || len(x.Shape) != 4 {
		return nil, fmt.Errorf("native: a channels-last Resize got a %v %v result", x.DType, x.Shape)
	}
	s := x.Shape
	y, err := ctx.NewUninit(graph.Float32, []int{s[0], s[2], s[3], s[1]})
	if err != nil {
		return nil, err
	}
	transposeF32(p, f32(y), f32(x), x.Shape, []int{0, 2, 3, 1})
	ctx.Release(x)
	return ctx.Outputs(y), nil
}
