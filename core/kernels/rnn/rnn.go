package rnn

import (
	rnnops "github.com/switchyard-hal/switchyard/core/ops/rnn"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	for op, k := range map[string]rnnops.CellKind{"RNN": rnnops.KindRNN, "GRU": rnnops.KindGRU, "LSTM": rnnops.KindLSTM} {
		kernels.RegisterKernel("", op, makeKernel(k))
	}
}

// config is a fully validated problem.
type config struct {
	*rnnops.Attrs
	acts          []rnnops.Activation
	S, B, I, H, D int
	lens          []int           // per-batch sequence lengths
	done          <-chan struct{} // the run's; polled once per time step
}

func makeKernel(kind rnnops.CellKind) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return runKernel(ctx, n, in, kind)
	}
}

func shapeIs(t *graph.Tensor, dims ...int) bool { return graph.SameShape(t.Shape, dims) }

func runKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, kind rnnops.CellKind) ([]*graph.Tensor, error) {
	a, err := rnnops.ParseAttrs(n, ctx.Opset, kind)
	if err != nil {
		return nil, err
	}
	acts, err := a.Activations(n)
	if err != nil {
		return nil, err
	}
	x, w, r := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	b, seqLens, initH := kernels.Input(in, 3), kernels.Input(in, 4), kernels.Input(in, 5)
	var initC, p *graph.Tensor
	if kind == rnnops.KindLSTM {
		initC, p = kernels.Input(in, 6), kernels.Input(in, 7)
	}
	if x == nil || w == nil || r == nil {
		return nil, kernels.Invalidf(n, "inputs X, W and R are required")
	}
	dt := x.DType
	if !dt.IsFloat() {
		return nil, kernels.Unsupportedf(n, "dtype %v", dt)
	}
	for i, t := range []*graph.Tensor{w, r, b, initH, initC, p} {
		if t != nil && t.DType != dt {
			return nil, kernels.Invalidf(n, "input %s has dtype %v, X has %v", []string{"W", "R", "B", "initial_h", "initial_c", "P"}[i], t.DType, dt)
		}
	}
	if x.Rank() != 3 {
		return nil, kernels.Invalidf(n, "X must have rank 3, has shape %v", x.Shape)
	}
	c := &config{Attrs: a, acts: acts, D: a.Dirs}
	if a.Layout == 0 {
		c.S, c.B = x.Shape[0], x.Shape[1]
	} else {
		c.B, c.S = x.Shape[0], x.Shape[1]
	}
	c.I = x.Shape[2]
	if r.Rank() != 3 {
		return nil, kernels.Invalidf(n, "R must have rank 3, has shape %v", r.Shape)
	}
	c.H = r.Shape[2]
	if a.Hidden >= 0 && a.Hidden != c.H {
		return nil, kernels.Invalidf(n, "hidden_size %d does not match R of shape %v", a.Hidden, r.Shape)
	}
	G := a.Ci.Gates * c.H
	if !shapeIs(w, c.D, G, c.I) {
		return nil, kernels.Invalidf(n, "W has shape %v, expected %v", w.Shape, []int{c.D, G, c.I})
	}
	if !shapeIs(r, c.D, G, c.H) {
		return nil, kernels.Invalidf(n, "R has shape %v, expected %v", r.Shape, []int{c.D, G, c.H})
	}
	if b != nil && !shapeIs(b, c.D, 2*G) {
		return nil, kernels.Invalidf(n, "B has shape %v, expected %v", b.Shape, []int{c.D, 2 * G})
	}
	stateShape := []int{c.D, c.B, c.H}
	if a.Layout == 1 {
		stateShape = []int{c.B, c.D, c.H}
	}
	if initH != nil && !shapeIs(initH, stateShape...) {
		return nil, kernels.Invalidf(n, "initial_h has shape %v, expected %v", initH.Shape, stateShape)
	}
	if initC != nil && !shapeIs(initC, stateShape...) {
		return nil, kernels.Invalidf(n, "initial_c has shape %v, expected %v", initC.Shape, stateShape)
	}
	if p != nil && !shapeIs(p, c.D, 3*c.H) {
		return nil, kernels.Invalidf(n, "P has shape %v, expected %v", p.Shape, []int{c.D, 3 * c.H})
	}
	c.lens = make([]int, c.B)
	if seqLens != nil {
		if !seqLens.DType.IsInteger() {
			return nil, kernels.Invalidf(n, "sequence_lens must be an integer tensor, got %v", seqLens.DType)
		}
		if !shapeIs(seqLens, c.B) {
			return nil, kernels.Invalidf(n, "sequence_lens has shape %v, expected [%d]", seqLens.Shape, c.B)
		}
		for i := range c.lens {
			v := seqLens.Int64At(i)
			if v < 0 || v > int64(c.S) || (seqLens.DType == graph.Uint64 && seqLens.Data.([]uint64)[i] > uint64(c.S)) {
				return nil, kernels.Invalidf(n, "sequence_lens[%d] = %d is outside [0, %d]", i, v, c.S)
			}
			c.lens[i] = int(v)
		}
	} else {
		for i := range c.lens {
			c.lens[i] = c.S
		}
	}
	// Refuse hostile sizes before any scratch allocation (the input
	// projection is the largest buffer).
	if _, err := graph.CheckAlloc(dt, []int{c.S, c.B, G}); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}

	// Outputs, in the node's order; nil where not requested.
	want := func(i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }
	yShape := []int{c.S, c.D, c.B, c.H}
	if a.Layout == 1 {
		yShape = []int{c.B, c.S, c.D, c.H}
	}
	outs := make([]*graph.Tensor, len(n.Outputs))
	for i := range outs {
		if !want(i) {
			continue
		}
		shape := stateShape
		if i == 0 {
			shape = yShape
		}
		if outs[i], err = ctx.New(dt, shape); err != nil {
			return nil, err
		}
	}
	c.done = kernels.DoneOf(ctx)
	if dt == graph.Float64 {
		err = compute[float64](c, x, w, r, b, initH, initC, p, outs)
	} else {
		err = compute[float32](c, x, w, r, b, initH, initC, p, outs)
	}
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	return outs, nil
}

// values returns t's elements as []T (float16/bfloat16 widened to float32);
// the result must not be written to. nil for an absent input.
func values[T float](t *graph.Tensor) []T {
	if t == nil {
		return nil
	}
	return kernels.ToFloat32(t).Data.([]T)
}

// swapOuter maps src laid out [rows, cols, blk] to [cols, rows, blk].
func swapOuter[T any](src []T, rows, cols, blk int) []T {
	dst := make([]T, len(src))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			copy(dst[(j*rows+i)*blk:(j*rows+i+1)*blk], src[(i*cols+j)*blk:(i*cols+j+1)*blk])
		}
	}
	return dst
}

// store writes src (already in the output's layout) into out, rounding to
// out's dtype.
func store[T float](out *graph.Tensor, src []T) {
	switch d := out.Data.(type) {
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	case []float64:
		for i, v := range src {
			d[i] = float64(v)
		}
	case []graph.F16:
		for i, v := range src {
			d[i] = graph.F16FromFloat32(float32(v))
		}
	case []graph.BF16:
		for i, v := range src {
			d[i] = graph.BF16FromFloat32(float32(v))
		}
	}
}

// compute converts the inputs to the seq-major working layout, runs the
// recurrence and writes the requested outputs.
func compute[T float](c *config, x, w, r, b, initH, initC, p *graph.Tensor, outs []*graph.Tensor) error {
	X := values[T](x)
	H0, C0 := values[T](initH), values[T](initC)
	if c.Layout == 1 {
		X = swapOuter(X, c.B, c.S, c.I)
		if H0 != nil {
			H0 = swapOuter(H0, c.B, c.D, c.H)
		}
		if C0 != nil {
			C0 = swapOuter(C0, c.B, c.D, c.H)
		}
	}
	var Y []T
	inPlace := false
	get := func(i int) *graph.Tensor {
		if i < len(outs) {
			return outs[i]
		}
		return nil
	}
	if yt := get(0); yt != nil {
		if d, ok := yt.Data.([]T); ok && c.Layout == 0 {
			Y, inPlace = d, true // compute in place
		} else {
			Y = make([]T, c.S*c.D*c.B*c.H)
		}
	}
	Yh := make([]T, c.D*c.B*c.H)
	var Yc []T
	if c.Kind == rnnops.KindLSTM {
		Yc = make([]T, len(Yh))
	}
	if H0 != nil {
		copy(Yh, H0)
	}
	if C0 != nil && Yc != nil {
		copy(Yc, C0)
	}
	W, R, B, P := values[T](w), values[T](r), values[T](b), values[T](p)
	for d := 0; d < c.D; d++ {
		recur(c, d, X, W, R, B, P, Y, Yh, Yc)
	}
	if yt := get(0); yt != nil {
		if c.Layout == 1 {
			store(yt, swapOuter(Y, c.S*c.D, c.B, c.H))
		} else if !inPlace {
			store(yt, Y)
		}
	}
	for i, st := range [][]T{Yh, Yc} {
		t := get(i + 1)
		if t == nil || st == nil {
			continue
		}
		if c.Layout == 1 {
			st = swapOuter(st, c.D, c.B, c.H)
		}
		store(t, st)
	}
	return nil
}

func clipTo[T float](v []T, lim T) {
	for i, x := range v {
		if x > lim {
			v[i] = lim
		} else if x < -lim {
			v[i] = -lim
		}
	}
}

// recur runs direction d. X is [S,B,I]; Y (optional) is [S,D,B,H]; Yh and
// Yc are [D,B,H], hold the initial state on entry and the final one on exit.
func recur[T float](c *config, d int, X, W, R, B, P, Y, Yh, Yc []T) {
	S, Bn, I, H, D := c.S, c.B, c.I, c.H, c.D
	G := c.Ci.Gates * H
	if Bn == 0 || H == 0 {
		return
	}
	rev := c.Reverse || d == 1
	acts := c.acts[d*c.Ci.Nact : (d+1)*c.Ci.Nact]
	Wd := W[d*G*I : (d+1)*G*I]
	Rd := R[d*G*H : (d+1)*G*H]
	lim := T(c.Clip)
	clip := func(v []T) {
		if c.HasClip {
			clipTo(v, lim)
		}
	}

	// Input projection for every timestep at once: xw[t*B+b] = X[t,b]·Wᵀ + biases.
	xw := make([]T, S*Bn*G)
	gemmNTPar(S*Bn, G, I, X, Wd, xw, G)
	var rbh []T // GRU linear_before_reset keeps Rbh inside the reset product
	if B != nil {
		wb := B[d*2*G : d*2*G+G]
		rb := B[d*2*G+G : (d+1)*2*G]
		bias := make([]T, G)
		for g := range bias {
			bias[g] = wb[g] + rb[g]
		}
		if c.Kind == rnnops.KindGRU && c.Lbr {
			rbh = rb[2*H : 3*H]
			copy(bias[2*H:], wb[2*H:3*H])
		}
		for row := 0; row < S*Bn; row++ {
			xr := xw[row*G : row*G+G]
			for g, v := range bias {
				xr[g] += v
			}
		}
	}

	h := Yh[d*Bn*H : (d+1)*Bn*H]
	var cs, pi, po, pf []T
	if c.Kind == rnnops.KindLSTM {
		cs = Yc[d*Bn*H : (d+1)*Bn*H]
		if P != nil {
			pi, po, pf = P[d*3*H:d*3*H+H], P[d*3*H+H:d*3*H+2*H], P[d*3*H+2*H:d*3*H+3*H]
		}
	}
	maxLen := 0
	for _, l := range c.lens {
		maxLen = max(maxLen, l)
	}
	hr := make([]T, Bn*G)
	var rh, tmp []T
	if c.Kind == rnnops.KindGRU && !c.Lbr {
		rh = make([]T, Bn*H)
	}
	if c.Kind == rnnops.KindLSTM {
		tmp = make([]T, H)
	}
	timeOf := func(b, s int) int {
		if rev {
			return c.lens[b] - 1 - s
		}
		return s
	}
	emit := func(t, b int, hv []T) {
		if Y != nil {
			copy(Y[((t*D+d)*Bn+b)*H:((t*D+d)*Bn+b+1)*H], hv)
		}
	}

	for s := 0; s < maxLen && !kernels.Done(c.done); s++ {
		switch c.Kind {
		case rnnops.KindRNN:
			gemmNT(Bn, H, H, h, Rd, hr, H)
			for b := 0; b < Bn; b++ {
				if s >= c.lens[b] {
					continue
				}
				t := timeOf(b, s)
				pre, xr := hr[b*H:b*H+H], xw[(t*Bn+b)*G:(t*Bn+b)*G+G]
				for j := range pre {
					pre[j] += xr[j]
				}
				clip(pre)
				apply(acts[0], pre)
				hb := h[b*H : b*H+H]
				copy(hb, pre)
				emit(t, b, hb)
			}

		case rnnops.KindGRU:
			nrec := 2 * H // z and r; the h gate's product needs r first
			if c.Lbr {
				nrec = G
			}
			gemmNT(Bn, nrec, H, h, Rd, hr, G)
			for b := 0; b < Bn; b++ {
				if s >= c.lens[b] {
					continue
				}
				t := timeOf(b, s)
				gb, xr := hr[b*G:b*G+G], xw[(t*Bn+b)*G:(t*Bn+b)*G+G]
				zr := gb[:2*H]
				for j := range zr {
					zr[j] += xr[j]
				}
				clip(zr)
				apply(acts[0], zr)
				rg, hh := gb[H:2*H], gb[2*H:]
				if c.Lbr {
					for j := range hh {
						rec := hh[j]
						if rbh != nil {
							rec += rbh[j]
						}
						hh[j] = xr[2*H+j] + rg[j]*rec
					}
				} else {
					hb, rb := h[b*H:b*H+H], rh[b*H:b*H+H]
					for j := range rb {
						rb[j] = rg[j] * hb[j]
					}
				}
			}
			if !c.Lbr {
				gemmNT(Bn, H, H, rh, Rd[2*H*H:], hr[2*H:], G)
			}
			for b := 0; b < Bn; b++ {
				if s >= c.lens[b] {
					continue
				}
				t := timeOf(b, s)
				gb, xr := hr[b*G:b*G+G], xw[(t*Bn+b)*G:(t*Bn+b)*G+G]
				z, hh := gb[:H], gb[2*H:]
				if !c.Lbr {
					for j := range hh {
						hh[j] += xr[2*H+j]
					}
				}
				clip(hh)
				apply(acts[1], hh)
				hb := h[b*H : b*H+H]
				for j := range hb {
					hb[j] = (1-z[j])*hh[j] + z[j]*hb[j]
				}
				emit(t, b, hb)
			}

		case rnnops.KindLSTM:
			gemmNT(Bn, G, H, h, Rd, hr, G)
			for b := 0; b < Bn; b++ {
				if s >= c.lens[b] {
					continue
				}
				t := timeOf(b, s)
				gb, xr := hr[b*G:b*G+G], xw[(t*Bn+b)*G:(t*Bn+b)*G+G]
				for j := range gb {
					gb[j] += xr[j]
				}
				ig, og, fg, cg := gb[:H], gb[H:2*H], gb[2*H:3*H], gb[3*H:]
				cb := cs[b*H : b*H+H]
				if pi != nil {
					for j := range ig {
						ig[j] += pi[j] * cb[j]
					}
				}
				clip(ig)
				apply(acts[0], ig)
				if c.InputForget {
					for j := range fg {
						fg[j] = 1 - ig[j]
					}
				} else {
					if pf != nil {
						for j := range fg {
							fg[j] += pf[j] * cb[j]
						}
					}
					clip(fg)
					apply(acts[0], fg)
				}
				clip(cg)
				apply(acts[1], cg)
				for j := range cb {
					cb[j] = fg[j]*cb[j] + ig[j]*cg[j]
				}
				if po != nil {
					for j := range og {
						og[j] += po[j] * cb[j]
					}
				}
				clip(og)
				apply(acts[0], og)
				copy(tmp, cb) // the cell state is kept unclipped; h's input is clipped
				clip(tmp)
				apply(acts[2], tmp)
				hb := h[b*H : b*H+H]
				for j := range hb {
					hb[j] = og[j] * tmp[j]
				}
				emit(t, b, hb)
			}
		}
	}
	// A batch entry with sequence length 0 runs no step; like ONNX Runtime,
	// its final state is zero rather than the initial state.
	for b, l := range c.lens {
		if l == 0 {
			clear(h[b*H : b*H+H])
			if cs != nil {
				clear(cs[b*H : b*H+H])
			}
		}
	}
}

// ---- shape inference ----
