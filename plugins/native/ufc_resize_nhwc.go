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
// computed channels-last from the input transposed to channels-last (the
// same arithmetic as resize.go's rows, a pixel's channels a vector), so
// the NCHW output is never written out and read back, and the transpose
// is of the input (33×33 there), not of the output (the Transpose of a
// large output with few channels runs at a fraction of the memory
// bandwidth: its reads are one stream per channel). Resizes the direct
// path does not take (downsampling) run as before into a temporary
// tensor, transposed from there.

// useResizeNHWC: fuse takes resizeNHWCFollow's pairs (tests and
// benchmarks compare with the two nodes apart).
var useResizeNHWC = true

// resizeNHWCFollow returns tr when n is a Resize or Upsample the kernel
// here computes (resizeFast attributes, float32, a rank-4 input) and tr,
// its output's only reader, is a Transpose by [0 2 3 1] of float32 that
// native runs; else nil.
func resizeNHWCFollow(sg *hal.Subgraph, n, tr *graph.Node) *graph.Node {
	if !useResizeNHWC || tr == nil || n.Domain != "" || tr.Domain != "" || tr.OpType != "Transpose" || n.OpType != "Resize" && n.OpType != "Upsample" {
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
// channels: an upsampling (or a resize to as many values), whose input
// it transposes, smaller than the output.
func resizeNHWCDirect(t *resizeTask, c int) bool {
	return t.ih*t.iw <= t.oh*t.ow && c > 1
}

// nhwcTask is runNHWC's loop over output rows (chunksFor, by output
// element).
type nhwcTask struct {
	t  *resizeTask
	xt []float32 // the input, channels-last
	c  int
	sc *scratch // linear: two horizontally interpolated rows
}

// runNHWC resizes t.x (NCHW) into a new channels-last output of shape
// [N, oh, ow, C] (out is the NCHW shape): the input transposed to
// channels-last into scratch, then each output row as in resizeRow, a
// pixel's C channels a vector.
func (k *resizeKernel) runNHWC(ctx *kernels.Context, t *resizeTask, out [4]int) ([]*graph.Tensor, error) {
	n, c := out[0], out[1]
	y, err := ctx.NewUninit(graph.Float32, []int{n, out[2], out[3], c})
	if err != nil {
		return nil, err
	}
	t.y = f32(y)
	xsc := k.hs.of(len(t.x))
	xb := xsc.get()
	defer xsc.put(xb)
	xt := (*xb)[:len(t.x)]
	transposeF32(k.pool, xt, t.x, []int{n, c, t.ih * t.iw}, []int{0, 2, 1})
	row := c * t.ow
	a := nhwcTask{t: t, xt: xt, c: c}
	if !t.nearest {
		a.sc = k.ss.of(2 * row)
	}
	chunksFor(k.pool, n*t.oh*row, a, func(a nhwcTask, e0, e1 int) {
		t, c := a.t, a.c
		row, img := c*t.ow, t.ih*t.iw*c
		var h hrows
		if a.sc != nil {
			b := a.sc.get()
			defer a.sc.put(b)
			h = hrows{buf: *b, key: [2]int{-1, -1}, nhwc: c}
			h.slots = [2][]float32{h.buf[:row], h.buf[row : 2*row]}
		}
		for r := (e0 + row - 1) / row; r < (e1+row-1)/row; r++ {
			n, oy := r/t.oh, r%t.oh
			xs := a.xt[n*img : (n+1)*img]
			dst := t.y[r*row : (r+1)*row]
			i0 := t.rows.i0[oy]
			if t.nearest {
				src := xs[i0*t.iw*c:]
				for ox, ix := range t.cols.i0[:t.ow] {
					copy(dst[ox*c:(ox+1)*c], src[ix*c:(ix+1)*c])
				}
				continue
			}
			i1 := t.rows.i1[oy]
			top, bot := h.pair(t, n*t.ih+i0, xs[i0*t.iw*c:], n*t.ih+i1, xs[i1*t.iw*c:])
			lerp(dst, top, bot, t.rows.w[oy])
		}
	})
	return ctx.Outputs(y), nil
}

// hlerpNHWC is hlerp of a channels-last row of c channels: output pixel
// ox is src's pixels i0[ox] and i1[ox] blended at w[ox], channel by
// channel (the same arithmetic).
func hlerpNHWC(cm *resizeAxis, dst, src []float32, c int) {
	for ox := range dst[:len(dst)/c] {
		a, b, d := src[cm.i0[ox]*c:][:c], src[cm.i1[ox]*c:][:c], dst[ox*c:(ox+1)*c]
		if c >= 16 {
			lerp(d, a, b, cm.w[ox])
			continue
		}
		w := cm.w[ox]
		for j, v := range a {
			d[j] = v + w*(b[j]-v)
		}
	}
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
