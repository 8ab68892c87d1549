package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestLinearMemo: FullyConnected and Conv2D called again and again on one
// node with one memo slot (as the executor calls them) give, call after
// call, what a call without a memo gives, while their quantisation inputs
// change under them (scales, zero points of x, w and y, per-tensor and
// per-channel); a bad scale after a good memo is still refused; and a
// steady call reuses the memo (allocates nothing but its output).
func TestLinearMemo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const units, depth, rows = 5, 7, 3
	x := make([]int8, rows*depth)
	for i := range x {
		x[i] = int8(rng.IntN(256) - 128)
	}
	w := make([]int8, units*depth)
	for i := range w {
		w[i] = int8(rng.IntN(255) - 127)
	}
	bias := make([]int32, units)
	for i := range bias {
		bias[i] = int32(rng.IntN(4000) - 2000)
	}
	perChannel := func(v ...float32) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	type qset struct{ xs, ws, ys, xz, wz, yz *graph.Tensor }
	sets := []qset{
		{sc(0.05), sc(0.004), sc(0.09), zp(-3), zp(0), zp(7)},
		{sc(0.05), sc(0.004), sc(0.07), zp(-3), zp(0), zp(7)}, // y scale
		{sc(0.05), sc(0.004), sc(0.07), zp(5), zp(0), zp(-2)}, // zero points
		{sc(0.02), perChannel(0.001, 0.002, 0.003, 0.004, 0.005), sc(0.07), zp(5), graph.MustFromSlice([]int{units}, []int8{0, 1, 0, -1, 0}), zp(-2)},
		{sc(0.02), perChannel(0.001, 0.002, 0.003, 0.004, 0.006), sc(0.07), zp(5), graph.MustFromSlice([]int{units}, []int8{0, 1, 0, -1, 0}), zp(-2)},
		{sc(0.05), sc(0.004), sc(0.09), zp(-3), zp(0), zp(7)},
	}
	fc, _ := kernels.Lookup("switchyard.quant", "FullyConnected")
	n := node("FullyConnected", &graph.Attribute{Name: "activation", Type: graph.AttrString, S: "RELU"})
	var memo kernels.Memo
	ctx := &kernels.Context{Opset: 1, Memo: &memo}
	for i, q := range sets {
		in := []*graph.Tensor{q8([]int{rows, depth}, x...), q.xs, q.xz, q8([]int{units, depth}, w...), q.ws, q.wz, q.ys, q.yz, graph.MustFromSlice([]int{units}, bias)}
		for rep := 0; rep < 2; rep++ {
			got, err := fc.Kernel(ctx, n, in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fc.Kernel(&kernels.Context{Opset: 1}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			if !equal(got[0].Data.([]int8), want[0].Data.([]int8)) {
				t.Fatalf("set %d call %d: memoised %v, fresh %v", i, rep, got[0].Data, want[0].Data)
			}
		}
		if ctx.Memoized() == nil {
			t.Fatalf("set %d: nothing memoised", i)
		}
	}
	// a bad scale after a memo of good ones
	bad := []*graph.Tensor{q8([]int{rows, depth}, x...), sc(0.05), zp(-3), q8([]int{units, depth}, w...), sc(0), zp(0), sc(0.09), zp(7), nil}
	if _, err := fc.Kernel(ctx, n, bad); err == nil {
		t.Error("scale 0 accepted after a memo")
	}
	// steady state: the memo is reused
	q := sets[0]
	in := []*graph.Tensor{q8([]int{rows, depth}, x...), q.xs, q.xz, q8([]int{units, depth}, w...), q.ws, q.wz, q.ys, q.yz, graph.MustFromSlice([]int{units}, bias)}
	if _, err := fc.Kernel(ctx, n, in); err != nil {
		t.Fatal(err)
	}
	m := ctx.Memoized()
	if _, err := fc.Kernel(ctx, n, in); err != nil {
		t.Fatal(err)
	}
	if ctx.Memoized() != m {
		t.Error("the memo was derived again for the same inputs")
	}
	// the executor marks the quantisation inputs constant: the same
	// tensors are trusted, other tensors (even constant) checked again
	ctx.Const = 1<<1 | 1<<2 | 1<<4 | 1<<5 | 1<<6 | 1<<7
	if _, err := fc.Kernel(ctx, n, in); err != nil || ctx.Memoized() != m {
		t.Errorf("constant inputs: err %v, memo kept %v", err, ctx.Memoized() == m)
	}
	in2 := append([]*graph.Tensor(nil), in...)
	in2[6] = sc(0.03)
	got, err := fc.Kernel(ctx, n, in2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fc.Kernel(&kernels.Context{Opset: 1}, n, in2)
	if !equal(got[0].Data.([]int8), want[0].Data.([]int8)) || ctx.Memoized() == m {
		t.Errorf("another constant y scale: memoised %v, fresh %v", got[0].Data, want[0].Data)
	}
	ctx.Const = 0

	// Conv2D: the same with one memo across changing y scales
	conv, _ := kernels.Lookup("switchyard.quant", "Conv2D")
	cn := node("Conv2D", aints("strides", 1, 1), aints("dilations", 1, 1), aints("pads", 1, 1, 1, 1))
	var cmemo kernels.Memo
	cctx := &kernels.Context{Opset: 1, Memo: &cmemo}
	cx := q8([]int{1, 3, 3, 2}, x[:18]...)
	cw := q8([]int{2, 3, 3, 2}, append(w[:35:35], 9)...)
	for _, ys := range []float32{0.09, 0.03, 0.09} {
		cin := []*graph.Tensor{cx, sc(0.05), zp(1), cw, sc(0.004), zp(0), sc(ys), zp(2), nil}
		got, err := conv.Kernel(cctx, cn, cin)
		if err != nil {
			t.Fatal(err)
		}
		want, err := conv.Kernel(&kernels.Context{Opset: 1}, cn, cin)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(got[0].Data.([]int8), want[0].Data.([]int8)) {
			t.Fatalf("conv y scale %g: memoised %v, fresh %v", ys, got[0].Data, want[0].Data)
		}
	}
}

// TestFullyConnectedAgainstFloat: int8 FullyConnected (per-tensor and
// per-channel weights, both roundings, a weights zero point and none)
// agrees with the real-valued product requantised by rounding within one
// output step, and exactly away from rounding ties.
func TestFullyConnectedAgainstFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const units, depth, rows = 6, 300, 2 // depth over the kernel's stack row
	x := make([]int8, rows*depth)
	for i := range x {
		x[i] = int8(rng.IntN(256) - 128)
	}
	w := make([]int8, units*depth)
	for i := range w {
		w[i] = int8(rng.IntN(255) - 127)
	}
	bias := make([]int32, units)
	for i := range bias {
		bias[i] = int32(rng.IntN(4000) - 2000)
	}
	fc, _ := kernels.Lookup("switchyard.quant", "FullyConnected")
	for _, rounding := range []string{"away", "half_up"} {
		for _, perChannel := range []bool{false, true} {
			ws := []float32{0.0007}
			wz := []int8{0}
			if perChannel {
				ws, wz = make([]float32, units), make([]int8, units)
				for c := range ws {
					ws[c] = 0.0003 + 0.0002*float32(c)
					wz[c] = int8(c%3 - 1)
				}
			}
			const xs, xz, ys, yz = 0.05, -3, 0.4, 5
			n := node("FullyConnected", &graph.Attribute{Name: "rounding", Type: graph.AttrString, S: rounding})
			var memo kernels.Memo
			in := []*graph.Tensor{q8([]int{rows, depth}, x...), sc(xs), zp(xz), q8([]int{units, depth}, w...),
				graph.MustFromSlice([]int{len(ws)}, ws), graph.MustFromSlice([]int{len(wz)}, wz), sc(ys), zp(yz), graph.MustFromSlice([]int{units}, bias)}
			out, err := fc.Kernel(&kernels.Context{Opset: 1, Memo: &memo}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			y := out[0].Data.([]int8)
			for r := 0; r < rows; r++ {
				for u := 0; u < units; u++ {
					c := 0
					if perChannel {
						c = u
					}
					acc := float64(bias[u])
					for k := 0; k < depth; k++ {
						acc += float64(int(w[u*depth+k])-int(wz[c])) * float64(int(x[r*depth+k])-xz)
					}
					m := float64(float32(xs)) * float64(ws[c]) / float64(float32(ys))
					if !perChannel {
						m = float64(float32(xs)*ws[0]) / float64(float32(ys))
					}
					real := acc*m + yz
					want := math.Max(-128, math.Min(127, math.Round(real)))
					got := float64(y[r*units+u])
					frac := math.Abs(real - math.Floor(real) - 0.5)
					if math.Abs(got-want) > 1 || (frac > 0.01 && got != want && real > -128 && real < 127) {
						t.Errorf("%s per-channel %v (%d,%d): %v, real %.4f", rounding, perChannel, r, u, got, real)
					}
				}
			}
		}
	}
}

// TestRequantAway: the inlinable requantisation is
// mulByQuantizedMultiplier for every multiplier quantizeMultiplier makes
// (q >= 0) over random and extreme accumulators and every exponent.
func TestRequantAway(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	xs := []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 1 << 30, -(1 << 30)}
	for i := 0; i < 2000; i++ {
		xs = append(xs, int32(rng.Uint32()), int32(rng.IntN(1<<20)-1<<19))
	}
	for shift := -31; shift <= 30; shift++ {
		left, right := requantShifts(shift)
		for _, q := range []int32{0, 1 << 30, math.MaxInt32, int32(1<<30 + rng.IntN(1<<30))} {
			for _, x := range xs {
				if got, want := requantAway(x, q, left, right), mulByQuantizedMultiplier(x, q, shift); got != want {
					t.Fatalf("x %d q %d shift %d: %d, want %d", x, q, shift, got, want)
				}
			}
		}
	}
}
