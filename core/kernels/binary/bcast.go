package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// plan is a broadcast iteration over an output shape for k inputs. Adjacent
// output dims that every input either broadcasts or not are merged, so the
// common cases (same shape, scalar operand, row/column broadcast) reduce to
// one or two loops with long contiguous inner runs.
type plan struct {
	n       int     // output elements
	dims    []int   // merged dims (outermost first), none of size 1
	strides [][]int // per input, per merged dim: element stride (0 = broadcast)
	inner   []int   // per input, stride of the innermost merged dim (0 or 1)
	// done, when set, is polled every kernels.StopCheckElems elements; run
	// stops early once it is closed (the executor then discards the output)
	done <-chan struct{}
	// storage for the slices above and run's offsets and counters when the
	// plan has at most planInline inputs and merged dims (the common
	// cases: a plan then allocates only itself)
	dimBuf, cntBuf [planInline]int
	strBuf         [planInline][planInline]int
	stBuf          [planInline][]int
	innerBuf       [planInline]int
	offBuf         [planInline + 1]int
}

// planInline is the most inputs and merged dims a plan keeps in its own
// storage.
const planInline = 4

// newPlan builds a plan; every input shape must be broadcast-compatible with
// out (callers check with kernels.BroadcastShapes first).
func newPlan(out []int, ins ...[]int) *plan {
	p := &plan{n: kernels.Prod(out)}
	if len(ins) <= planInline {
		p.strides, p.inner, p.dims = p.stBuf[:len(ins)], p.innerBuf[:len(ins)], p.dimBuf[:0]
	} else {
		p.strides, p.inner = make([][]int, len(ins)), make([]int, len(ins))
	}
	rank := len(out)
	var bcast [][]bool // per kept dim, per input
	for d := 0; d < rank; d++ {
		if out[d] == 1 {
			continue
		}
		flags := make([]bool, len(ins))
		for j, s := range ins {
			k := d - (rank - len(s))
			flags[j] = k < 0 || s[k] == 1
		}
		if m := len(p.dims); m > 0 && sameFlags(bcast[m-1], flags) {
			p.dims[m-1] *= out[d]
			continue
		}
		p.dims = append(p.dims, out[d])
		bcast = append(bcast, flags)
	}
	for j := range ins {
		var st []int
		if j < planInline && len(p.dims) <= planInline {
			st = p.strBuf[j][:len(p.dims)]
		} else {
			st = make([]int, len(p.dims))
		}
		acc := 1
		for k := len(p.dims) - 1; k >= 0; k-- {
			if !bcast[k][j] {
				st[k] = acc
				acc *= p.dims[k]
			}
		}
		p.strides[j] = st
		if len(st) > 0 {
			p.inner[j] = st[len(st)-1]
		}
	}
	return p
}

func sameFlags(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// run calls fn once per innermost run of n output elements; off[0] is the
// output offset and off[1+j] input j's offset. Within a run input j advances
// by p.inner[j] per element.
func (p *plan) run(fn func(off []int, n int)) {
	k := len(p.strides)
	var off []int
	if k < len(p.offBuf) {
		off = p.offBuf[:k+1]
		clear(off)
	} else {
		off = make([]int, k+1)
	}
	if p.n == 0 {
		return
	}
	if len(p.dims) == 0 {
		fn(off, 1)
		return
	}
	last := len(p.dims) - 1
	inner := p.dims[last]
	outer := p.n / inner
	var counter []int
	if last <= len(p.cntBuf) {
		counter = p.cntBuf[:last]
		clear(counter)
	} else {
		counter = make([]int, last)
	}
	sinceCheck := 0
	for it := 0; it < outer; it++ {
		if sinceCheck += inner; sinceCheck >= kernels.StopCheckElems {
			if kernels.Done(p.done) {
				return
			}
			sinceCheck = 0
		}
		fn(off, inner)
		off[0] += inner
		for d := last - 1; d >= 0; d-- {
			counter[d]++
			for j := 0; j < k; j++ {
				off[j+1] += p.strides[j][d]
			}
			if counter[d] < p.dims[d] {
				break
			}
			for j := 0; j < k; j++ {
				off[j+1] -= p.strides[j][d] * counter[d]
			}
			counter[d] = 0
		}
	}
}

// loop2 computes o[i] = f(a[ia], b[ib]) over a broadcast plan of two inputs.
func loop2[A, B, O any](p *plan, a []A, b []B, o []O, f func(A, B) O) {
	sa, sb := p.inner[0], p.inner[1]
	p.run(func(off []int, n int) {
		dst := o[off[0] : off[0]+n]
		switch {
		case sa == 1 && sb == 1:
			x, y := a[off[1]:off[1]+n], b[off[2]:off[2]+n]
			for i := range dst {
				dst[i] = f(x[i], y[i])
			}
		case sa == 1:
			x, y := a[off[1]:off[1]+n], b[off[2]]
			for i := range dst {
				dst[i] = f(x[i], y)
			}
		case sb == 1:
			x, y := a[off[1]], b[off[2]:off[2]+n]
			for i := range dst {
				dst[i] = f(x, y[i])
			}
		default:
			v := f(a[off[1]], b[off[2]])
			for i := range dst {
				dst[i] = v
			}
		}
	})
}

// spread copies src broadcast to the plan's output (one-input plan).
func spread[T any](p *plan, src, dst []T) {
	s := p.inner[0]
	p.run(func(off []int, n int) {
		d := dst[off[0] : off[0]+n]
		if s == 1 {
			copy(d, src[off[1]:off[1]+n])
			return
		}
		v := src[off[1]]
		for i := range d {
			d[i] = v
		}
	})
}

// checkInputs verifies that the first k inputs are present and consistent.
func checkInputs(n *graph.Node, in []*graph.Tensor, k int) error {
	if len(in) < k {
		return kernels.Invalidf(n, "expected %d inputs, got %d", k, len(in))
	}
	for i := 0; i < k; i++ {
		if in[i] == nil {
			return kernels.Invalidf(n, "missing input %d", i)
		}
		if err := in[i].Check(); err != nil {
			return kernels.Invalidf(n, "input %d: %v", i, err)
		}
	}
	return nil
}

// binaryShapes returns the output shape and plan of a two-input elementwise
// op. Below opset 7, ops with the legacy "broadcast"/"axis" attributes
// (legacy=true) follow those: without broadcast=1 the shapes must match;
// with it B is aligned to A at axis (default: suffix) and broadcast to A's
// shape.
func binaryShapes(ctx *kernels.Context, n *graph.Node, a, b []int, legacy bool) ([]int, *plan, error) {
	if legacy && opsetOf(ctx) < 7 {
		bs, err := legacyB(n, a, b)
		if err != nil {
			return nil, nil, err
		}
		p := newPlan(a, a, bs)
		p.done = kernels.DoneOf(ctx)
		return a, p, nil
	}
	out := a // equal shapes (the common case) need no new one
	if !graph.SameShape(a, b) {
		var err error
		if out, err = kernels.BroadcastShapes(a, b); err != nil {
			return nil, nil, kernels.Invalidf(n, "shapes %v and %v are not broadcast-compatible", a, b)
		}
	}
	p := newPlan(out, a, b)
	p.done = kernels.DoneOf(ctx)
	return out, p, nil
}

func opsetOf(ctx *kernels.Context) int64 {
	if ctx == nil || ctx.Opset == 0 {
		return kernels.MaxKnownOpset
	}
	return ctx.Opset
}

// legacyB maps B's shape to A's rank under the opset<7 broadcast rules.
func legacyB(n *graph.Node, a, b []int) ([]int, error) {
	if n.AttrInt("broadcast", 0) == 0 {
		if !graph.SameShape(a, b) {
			return nil, kernels.Invalidf(n, "shapes %v and %v differ and broadcast is not set", a, b)
		}
		return b, nil
	}
	if len(b) > len(a) {
		return nil, kernels.Invalidf(n, "broadcast: B %v has higher rank than A %v", b, a)
	}
	axis := int64(len(a) - len(b))
	if n.HasAttr("axis") {
		axis = n.AttrInt("axis", axis)
		if axis < 0 {
			axis += int64(len(a))
		}
	}
	if axis < 0 || axis+int64(len(b)) > int64(len(a)) {
		return nil, kernels.Invalidf(n, "broadcast: axis %d does not fit B %v into A %v", n.AttrInt("axis", 0), b, a)
	}
	out := make([]int, len(a))
	for i := range out {
		out[i] = 1
	}
	for i, d := range b {
		k := int(axis) + i
		if d != 1 && d != a[k] {
			return nil, kernels.Invalidf(n, "broadcast: B %v does not match A %v at axis %d", b, a, axis)
		}
		out[k] = d
	}
	return out, nil
}
