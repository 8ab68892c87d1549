package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
)

// Slice of float32 with unit steps (UltraFace's box decoding cuts
// [1, 4420, 4] into its centre and size halves, runs of 2 floats): the
// output as rows of one contiguous run each, copied straight from the
// input's offsets, with no plan built or allocated per call (the
// reference kernel took 26 µs and 10 allocations a node for it). The
// reference kernel runs anything else, and the errors.

// sliceMaxRank bounds the rank (and the entries of starts/ends) taken.
const sliceMaxRank = 8

// sliceSpec is one call's Slice arguments, read into fixed arrays (st:
// the steps, 1 where none are given).
type sliceSpec struct {
	k                      int
	starts, ends, axes, st [sliceMaxRank]int64
	hasAxes                bool
}

// readSliceInts copies a small int32 or int64 tensor into dst; false:
// another dtype or too many entries.
func readSliceInts(t *graph.Tensor, dst *[sliceMaxRank]int64) (int, bool) {
	if t == nil || t.Check() != nil {
		return 0, false
	}
	switch v := t.Data.(type) {
	case []int64:
		if len(v) > sliceMaxRank {
			return 0, false
		}
		return copy(dst[:], v), true
	case []int32:
		if len(v) > sliceMaxRank {
			return 0, false
		}
		for i, x := range v {
			dst[i] = int64(x)
		}
		return len(v), true
	}
	return 0, false
}

// readSliceAttr copies an ints attribute into dst.
func readSliceAttr(n *graph.Node, name string, dst *[sliceMaxRank]int64) (int, bool) {
	a := n.Attrs[name]
	if a == nil || len(a.Ints) > sliceMaxRank {
		return 0, false
	}
	return copy(dst[:], a.Ints), true
}

// read fills s from the node's attributes (opset < 10) or inputs.
func (s *sliceSpec) read(opset int64, n *graph.Node, in []*graph.Tensor) bool {
	var ok bool
	var ke int
	for i := range s.st {
		s.st[i] = 1
	}
	if opset < 10 {
		if s.k, ok = readSliceAttr(n, "starts", &s.starts); !ok {
			return false
		}
		if ke, ok = readSliceAttr(n, "ends", &s.ends); !ok || ke != s.k {
			return false
		}
		if n.Attrs["axes"] != nil {
			var ka int
			if ka, ok = readSliceAttr(n, "axes", &s.axes); !ok || ka != s.k {
				return false
			}
			s.hasAxes = true
		}
		return true
	}
	if s.k, ok = readSliceInts(kernels.Input(in, 1), &s.starts); !ok {
		return false
	}
	if ke, ok = readSliceInts(kernels.Input(in, 2), &s.ends); !ok || ke != s.k {
		return false
	}
	if t := kernels.Input(in, 3); t != nil {
		var ka int
		if ka, ok = readSliceInts(t, &s.axes); !ok || ka != s.k {
			return false
		}
		s.hasAxes = true
	}
	if t := kernels.Input(in, 4); t != nil {
		var ks int
		if ks, ok = readSliceInts(t, &s.st); !ok || ks != s.k {
			return false
		}
		for _, v := range s.st[:ks] {
			if v < 1 {
				return false // negative steps: the reference kernel
			}
		}
	}
	return true
}

// slicePlan is a call's output shape, the input offset of each output
// axis's start and its step (stepped: some step is not 1).
type slicePlan struct {
	r                int
	out, start, step [sliceMaxRank]int
	stepped          bool
}

// plan works the spec out against shape (false: an axis out of range or
// repeated: the reference kernel reports it).
func (s *sliceSpec) plan(shape []int) (slicePlan, bool) {
	p := slicePlan{r: len(shape)}
	copy(p.out[:], shape)
	for d := range p.step {
		p.step[d] = 1
	}
	var seen [sliceMaxRank]bool
	for i := 0; i < s.k; i++ {
		ax := i
		if s.hasAxes {
			ax = int(s.axes[i])
		}
		if ax < 0 {
			ax += p.r
		}
		if ax < 0 || ax >= p.r || seen[ax] {
			return p, false
		}
		seen[ax] = true
		start, cnt := shapeops.SliceRange(s.starts[i], s.ends[i], s.st[i], int64(shape[ax]))
		p.out[ax], p.start[ax] = int(cnt), int(start)
		if cnt == 0 {
			p.start[ax] = 0
		}
		if cnt > 1 && s.st[i] != 1 {
			p.step[ax], p.stepped = int(s.st[i]), true
		}
	}
	return p, true
}

// buildSlice takes a Slice whose data the subgraph types float32 (others,
// shape arithmetic on integers, keep the executor's move plans).
func buildSlice(bc *buildCtx, n *graph.Node) kernels.Func {
	if len(n.Inputs) == 0 {
		return nil
	}
	if t, ok := bc.sg.TypeOf(n.Inputs[0]); !ok || t.Kind != "tensor" || t.DType != graph.Float32 {
		return nil
	}
	return sliceKernel(bc.pool)
}

// sliceKernel is Slice of float32 with unit steps (sliceCopy) or other
// positive ones (sliceStrided, on the pool), the reference kernel for
// anything else.
func sliceKernel(pl *pool) kernels.Func {
	ref, _ := kernels.Lookup("", "Slice")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := kernels.Input(in, 0)
		var s sliceSpec
		if x == nil || x.DType != graph.Float32 || len(x.Shape) > sliceMaxRank || x.Check() != nil || !s.read(ctx.Opset, node, in) {
			return ref.Kernel(ctx, node, in)
		}
		p, ok := s.plan(x.Shape)
		if !ok {
			return ref.Kernel(ctx, node, in)
		}
		y, err := ctx.NewUninit(graph.Float32, p.out[:p.r])
		if err != nil {
			return nil, err
		}
		if p.stepped {
			sliceStrided(pl, f32(y), f32(x), x.Shape, &p) // thr_slice.go
		} else {
			sliceCopy(f32(y), f32(x), x.Shape, &p)
		}
		return ctx.Outputs(y), nil
	}
}

// sliceCopy writes y, the slice p of x (of shape shape): the innermost
// axis that is cut (k) and the whole axes after it make one contiguous
// run per index over the axes before it.
func sliceCopy(y, x []float32, shape []int, p *slicePlan) {
	r := p.r
	if len(y) == 0 {
		return
	}
	k := -1
	for d := r - 1; d >= 0; d-- {
		if p.out[d] != shape[d] {
			k = d
			break
		}
	}
	if k < 0 {
		copy(y, x)
		return
	}
	var stride [sliceMaxRank]int // the input's element strides
	s := 1
	for d := r - 1; d >= 0; d-- {
		stride[d] = s
		s *= shape[d]
	}
	run := p.out[k] * stride[k]
	base := 0
	for d := 0; d <= k; d++ {
		base += p.start[d] * stride[d]
	}
	// the axes before k: rows (an odometer over their indices)
	var idx [sliceMaxRank]int
	rows := len(y) / run
	if k > 0 && p.out[k-1] == rows {
		// one axis of rows (the others of size 1): a fixed input stride
		rowStride := stride[k-1]
		switch run {
		case 1:
			for i := range y {
				y[i] = x[base+i*rowStride]
			}
		case 2:
			for i := 0; i < rows; i++ {
				o := base + i*rowStride
				y[2*i], y[2*i+1] = x[o], x[o+1]
			}
		default:
			for i := 0; i < rows; i++ {
				copy(y[i*run:(i+1)*run], x[base+i*rowStride:])
			}
		}
		return
	}
	for i := 0; i < rows; i++ {
		off := base
		for d := 0; d < k; d++ {
			off += idx[d] * stride[d]
		}
		copy(y[i*run:(i+1)*run], x[off:off+run])
		for d := k - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < p.out[d] {
				break
			}
			idx[d] = 0
		}
	}
}
