package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Pad in constant mode on float32 with non-negative pads (opset 11+: pads
// as an int64 input, an optional scalar constant_value, no axes input) —
// the spatial pads of converted TFLite models and the channel padding of
// MediaPipe's residual blocks — copies whole runs: the trailing dims that
// are not padded form one contiguous block per index of the others, so a
// channel pad of an NCHW tensor is two copies and two fills. Anything else
// (other modes and dtypes, crops, axes, old opsets, and the errors) runs
// the reference kernel.

// padKernel is native's Pad: the indices of the leading dims without
// pads (an NCHW tensor's planes under a spatial pad) split over the pool
// in order.
func padKernel(pl *pool) kernels.Func {
	ref, _ := kernels.Lookup("", "Pad")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := kernels.Input(in, 0)
		p := kernels.Input(in, 1)
		if ctx.Opset < 11 || x == nil || p == nil || x.DType != graph.Float32 || p.DType != graph.Int64 ||
			kernels.Input(in, 3) != nil || node.AttrString("mode", "constant") != "constant" {
			return ref.Kernel(ctx, node, in)
		}
		r := len(x.Shape)
		pads := graph.Data[int64](p)
		if r == 0 || r > 8 || len(p.Shape) != 1 || len(pads) != 2*r {
			return ref.Kernel(ctx, node, in)
		}
		value := float32(0)
		if v := kernels.Input(in, 2); v != nil {
			if v.DType != graph.Float32 || v.Len() != 1 {
				return ref.Kernel(ctx, node, in)
			}
			value = graph.Data[float32](v)[0]
		}
		var sb [8]int
		shape := sb[:r]
		var pp padPlan
		for d := range r {
			b, e := pads[d], pads[r+d]
			if b < 0 || e < 0 || b > 1<<30 || e > 1<<30 {
				return ref.Kernel(ctx, node, in)
			}
			shape[d] = x.Shape[d] + int(b) + int(e)
			pp.begin[d], pp.end[d] = int(b), int(e)
		}
		if _, err := graph.CheckAlloc(graph.Float32, shape); err != nil {
			return ref.Kernel(ctx, node, in) // its error
		}
		y, err := ctx.NewUninit(graph.Float32, shape)
		if err != nil {
			return nil, err
		}
		// the trailing dims without pads merge into the block
		last := r - 1
		for last > 0 && pp.begin[last] == 0 && pp.end[last] == 0 {
			last--
		}
		pp.block = 1
		for d := last + 1; d < r; d++ {
			pp.block *= x.Shape[d]
		}
		pp.last = last
		copy(pp.xdim[:], x.Shape)
		// output strides in blocks
		s := 1
		for d := last; d >= 0; d-- {
			pp.ostride[d] = s
			s *= shape[d]
		}
		pp.value = value
		Y, X := f32(y), f32(x)
		if len(Y) == 0 {
			return ctx.Outputs(y), nil
		}
		// the leading dims without pads: units independent blocks of x
		// and of y
		d0, units := 0, 1
		for d0 < last && pp.begin[d0] == 0 && pp.end[d0] == 0 {
			units *= x.Shape[d0]
			d0++
		}
		// about 0.4 ns an output float (pose_detection's 288 planes 14×14
		// → 16×16: 35 µs at one thread)
		tasks := splitTasks(pl.threads(), units, 0.4*float64(len(Y)/units))
		parallelFor(pl, tasks, padTask{pp, d0, units, tasks, X, Y}, padTask.run)
		return ctx.Outputs(y), nil
	}
}

// padTask is a Pad's loop over the units of its leading dims without pads
// (parallelFor; the plan by value: a pointer to it would move it to the
// heap at every call).
type padTask struct {
	pp               padPlan
	d0, units, tasks int
	x, y             []float32
}

func (a padTask) run(t int) {
	xs, ys := len(a.x)/a.units, len(a.y)/a.units
	for u := a.units * t / a.tasks; u < a.units*(t+1)/a.tasks; u++ {
		a.pp.fill(a.d0, a.x[u*xs:(u+1)*xs], a.y[u*ys:(u+1)*ys])
	}
}

// padPlan is one Pad's geometry: per dim up to last, the begin and end pads,
// the input's dim and the output's stride in blocks.
type padPlan struct {
	begin, end, xdim, ostride [8]int
	last, block               int
	value                     float32
}

// fill writes the output of dims d.. from x (the input below the index of
// the dims before d) into y (the same for the output).
func (pp *padPlan) fill(d int, x, y []float32) {
	bs := pp.block
	if d == pp.last {
		b, n, e := pp.begin[d]*bs, pp.xdim[d]*bs, pp.end[d]*bs
		pp.set(y[:b])
		copy(y[b:b+n], x[:n])
		pp.set(y[b+n : b+n+e])
		return
	}
	yo := pp.ostride[d] * bs // floats per index of dim d in y
	xo := len(x) / max(1, pp.xdim[d])
	pp.set(y[:pp.begin[d]*yo])
	y = y[pp.begin[d]*yo:]
	for i := 0; i < pp.xdim[d]; i++ {
		pp.fill(d+1, x[i*xo:(i+1)*xo], y[i*yo:(i+1)*yo])
	}
	pp.set(y[pp.xdim[d]*yo : (pp.xdim[d]+pp.end[d])*yo])
}

func (pp *padPlan) set(y []float32) {
	if pp.value == 0 {
		clear(y)
		return
	}
	for i := range y {
		y[i] = pp.value
	}
}
