package nn

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// ---- helpers ----

type attrs map[string]any

func node(op string, nin, nout int, a attrs) *graph.Node {
	n := &graph.Node{OpType: op, Attrs: map[string]*graph.Attribute{}}
	for i := 0; i < nin; i++ {
		n.Inputs = append(n.Inputs, string(rune('a'+i)))
	}
	for i := 0; i < nout; i++ {
		n.Outputs = append(n.Outputs, string(rune('y'+i)))
	}
	for k, v := range a {
		at := &graph.Attribute{Name: k}
		switch v := v.(type) {
		case int:
			at.Type, at.I = graph.AttrInt, int64(v)
		case float64:
			at.Type, at.F = graph.AttrFloat, float32(v)
		case string:
			at.Type, at.S = graph.AttrString, v
		case []int64:
			at.Type, at.Ints = graph.AttrInts, v
		default:
			panic("bad attr")
		}
		n.Attrs[k] = at
	}
	return n
}

func run(t *testing.T, opset int64, n *graph.Node, in ...*graph.Tensor) []*graph.Tensor {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	out, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		t.Fatalf("%s: %v", n.OpType, err)
	}
	return out
}

func runErr(opset int64, n *graph.Node, in ...*graph.Tensor) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = errors.New("panic")
		}
	}()
	s, _ := kernels.Lookup("", n.OpType)
	_, err = s.Kernel(&kernels.Context{Opset: opset}, n, in)
	return err
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }

func sh(d ...int) []int { return d }

func near(t *testing.T, what string, got *graph.Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if !graph.SameShape(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	g := got.Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(g[i]) || math.Abs(g[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s: [%d] = %v, want %v (all: %v)", what, i, g[i], want[i], g)
		}
	}
}

func fl(v ...float64) []float64 { return v }

// ---- MatMul / Gemm ----

func TestMatMul(t *testing.T) {
	// 1-D · 1-D is a dot product with a scalar result.
	out := run(t, 13, node("MatMul", 2, 1, nil), f32(sh(3), 1, 2, 3), f32(sh(3), 4, 5, 6))
	near(t, "dot", out[0], sh(), fl(32), 0)
	// [2,3]·[3] drops the promoted dim.
	out = run(t, 13, node("MatMul", 2, 1, nil), f32(sh(2, 3), 1, 2, 3, 4, 5, 6), f32(sh(3), 1, 0, -1))
	near(t, "mat-vec", out[0], sh(2), fl(-2, -2), 0)
	// [3]·[2,3,2] broadcasts the vector over the batch.
	out = run(t, 13, node("MatMul", 2, 1, nil), f32(sh(3), 1, 1, 1),
		f32(sh(2, 3, 2), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
	near(t, "vec-batch", out[0], sh(2, 2), fl(9, 12, 27, 30), 0)
	// batch broadcast [2,1,2,2]·[3,2,1]
	a := f32(sh(2, 1, 2, 2), 1, 0, 0, 1, 2, 0, 0, 2)
	b := f32(sh(3, 2, 1), 1, 2, 3, 4, 5, 6)
	out = run(t, 13, node("MatMul", 2, 1, nil), a, b)
	near(t, "bcast", out[0], sh(2, 3, 2, 1), fl(1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12), 0)
	// int32 wraps like numpy.
	ai := graph.MustFromSlice(sh(1, 2), []int32{math.MaxInt32, 1})
	bi := graph.MustFromSlice(sh(2, 1), []int32{2, 3})
	out = run(t, 13, node("MatMul", 2, 1, nil), ai, bi)
	if got := graph.Data[int32](out[0])[0]; got != 1 { // 2*(2^31-1)+3 mod 2^32
		t.Fatalf("int32 wrap: got %d, want 1", got)
	}
	// float16 computes in float32 and rounds.
	h := func(v ...float32) []graph.F16 {
		r := make([]graph.F16, len(v))
		for i, x := range v {
			r[i] = graph.F16FromFloat32(x)
		}
		return r
	}
	out = run(t, 13, node("MatMul", 2, 1, nil), graph.MustFromSlice(sh(1, 2), h(1.5, 2)), graph.MustFromSlice(sh(2, 1), h(2, 0.25)))
	near(t, "f16", out[0], sh(1, 1), fl(3.5), 0)
	// size-0 inner dim gives zeros; size-0 outer dim gives an empty result.
	out = run(t, 13, node("MatMul", 2, 1, nil), f32(sh(2, 0)), f32(sh(0, 3)))
	near(t, "k=0", out[0], sh(2, 3), fl(0, 0, 0, 0, 0, 0), 0)
	out = run(t, 13, node("MatMul", 2, 1, nil), f32(sh(0, 2)), f32(sh(2, 3), 1, 2, 3, 4, 5, 6))
	near(t, "m=0", out[0], sh(0, 3), nil, 0)
}

func TestMatMulBatchedLarge(t *testing.T) {
	// Exercise the blocked path with a broadcast batch against a float64 loop.
	r := rand.New(rand.NewSource(3))
	B, M, K, N := 3, 33, 70, 45
	a := graph.MustFromSlice(sh(B, M, K), randF32(r, B*M*K))
	b := graph.MustFromSlice(sh(1, K, N), randF32(r, K*N))
	out := run(t, 13, node("MatMul", 2, 1, nil), a, b)[0]
	ad, bd, od := graph.Data[float32](a), graph.Data[float32](b), graph.Data[float32](out)
	for bi := 0; bi < B; bi++ {
		for i := 0; i < M; i++ {
			for j := 0; j < N; j++ {
				var want float64
				for q := 0; q < K; q++ {
					want += float64(ad[(bi*M+i)*K+q]) * float64(bd[q*N+j])
				}
				if g := float64(od[(bi*M+i)*N+j]); math.Abs(g-want) > 1e-4 {
					t.Fatalf("[%d,%d,%d] = %v, want %v", bi, i, j, g, want)
				}
			}
		}
	}
}

func TestGemm(t *testing.T) {
	a := f32(sh(2, 3), 1, 2, 3, 4, 5, 6) // used transposed: A' is 3x2
	b := f32(sh(2, 3), 1, 0, 1, 0, 1, 0) // used transposed: B' is 3x2
	// transA only: A' (3x2) · B (2x3)
	out := run(t, 13, node("Gemm", 3, 1, attrs{"transA": 1, "alpha": 2.0, "beta": 0.5}), a, b, f32(sh(3), 10, 20, 30))
	// A' = [[1,4],[2,5],[3,6]]; A'·B = [[1,4,1],[2,5,2],[3,6,3]]
	near(t, "transA", out[0], sh(3, 3), fl(2+5, 8+10, 2+15, 4+5, 10+10, 4+15, 6+5, 12+10, 6+15), 0)
	// transB only: A (2x3) · B' (3x2), scalar C.
	out = run(t, 13, node("Gemm", 3, 1, attrs{"transB": 1}), a, b, f32(sh(), 1))
	near(t, "transB", out[0], sh(2, 2), fl(1+3+1, 2+1, 4+6+1, 5+1), 0)
	// no C (opset 11+), C of shape [2,1].
	out = run(t, 13, node("Gemm", 2, 1, attrs{"transB": 1}), a, b)
	near(t, "noC", out[0], sh(2, 2), fl(4, 2, 10, 5), 0)
	out = run(t, 13, node("Gemm", 3, 1, attrs{"transB": 1}), a, b, f32(sh(2, 1), 1, 2))
	near(t, "colC", out[0], sh(2, 2), fl(5, 3, 12, 7), 0)
	// opset 6 with broadcast=0 needs C of the full shape.
	if err := runErr(6, node("Gemm", 3, 1, attrs{"transB": 1}), a, b, f32(sh(2), 1, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("opset 6 broadcast=0: err %v, want ErrInvalid", err)
	}
	out = run(t, 6, node("Gemm", 3, 1, attrs{"transB": 1, "broadcast": 1}), a, b, f32(sh(2), 1, 2))
	near(t, "opset6 bcast", out[0], sh(2, 2), fl(5, 4, 11, 7), 0)
	// int32 with alpha/beta.
	ai := graph.MustFromSlice(sh(1, 2), []int32{3, 4})
	bi := graph.MustFromSlice(sh(2, 1), []int32{5, 6})
	ci := graph.MustFromSlice(sh(1), []int32{7})
	out = run(t, 13, node("Gemm", 3, 1, attrs{"alpha": 0.5, "beta": 2.0}), ai, bi, ci)
	if got := graph.Data[int32](out[0])[0]; got != 33 { // 0.5*39 + 14 = 33.5 → 33
		t.Fatalf("int gemm: %d, want 33", got)
	}
	// bad: inner dims differ, C not broadcastable.
	if err := runErr(13, node("Gemm", 2, 1, nil), a, b); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("inner mismatch: %v", err)
	}
	if err := runErr(13, node("Gemm", 3, 1, attrs{"transB": 1}), a, b, f32(sh(3), 1, 2, 3)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("C mismatch: %v", err)
	}
}

// ---- Conv ----

// naiveConv is the definition of Conv in float64, for cross-checks.
func naiveConv(x, w, b []float32, xs, ws []int, group int, strides, dil, pads []int, outSp []int) []float64 {
	nd := len(xs) - 2
	N, C, M := xs[0], xs[1], ws[0]
	cg, mg := C/group, M/group
	os := kernels.Prod(outSp)
	is := kernels.Prod(xs[2:])
	ks := kernels.Prod(ws[2:])
	y := make([]float64, N*M*os)
	oIdx := make([]int, nd)
	kIdx := make([]int, nd)
	for n := 0; n < N; n++ {
		for m := 0; m < M; m++ {
			gi := m / mg
			for o := 0; o < os; o++ {
				r := o
				for d := nd - 1; d >= 0; d-- {
					oIdx[d] = r % outSp[d]
					r /= outSp[d]
				}
				s := 0.0
				if b != nil {
					s = float64(b[m])
				}
				for c := 0; c < cg; c++ {
					for kk := 0; kk < ks; kk++ {
						r := kk
						for d := nd - 1; d >= 0; d-- {
							kIdx[d] = r % ws[2+d]
							r /= ws[2+d]
						}
						flat, ok := 0, true
						for d := 0; d < nd; d++ {
							p := oIdx[d]*strides[d] - pads[d] + kIdx[d]*dil[d]
							if p < 0 || p >= xs[2+d] {
								ok = false
								break
							}
							flat = flat*xs[2+d] + p
						}
						if ok {
							s += float64(x[(n*C+gi*cg+c)*is+flat]) * float64(w[(m*cg+c)*ks+kk])
						}
					}
				}
				y[(n*M+m)*os+o] = s
			}
		}
	}
	return y
}

func TestConvHand(t *testing.T) {
	// 1-D: x=[1,2,3,4], w=[1,0,-1], pads 1, bias 10.
	out := run(t, 22, node("Conv", 3, 1, attrs{"pads": []int64{1, 1}}),
		f32(sh(1, 1, 4), 1, 2, 3, 4), f32(sh(1, 1, 3), 1, 0, -1), f32(sh(1), 10))
	near(t, "conv1d", out[0], sh(1, 1, 4), fl(10-2, 10+1-3, 10+2-4, 10+3), 0)
	// 2-D, stride 2, SAME_UPPER vs SAME_LOWER on a 4x4 of 1..16 with a 2x2 ones kernel.
	x := make([]float32, 16)
	for i := range x {
		x[i] = float32(i + 1)
	}
	w := f32(sh(1, 1, 2, 2), 1, 1, 1, 1)
	out = run(t, 22, node("Conv", 2, 1, attrs{"auto_pad": "SAME_UPPER", "strides": []int64{2, 2}}), f32(sh(1, 1, 4, 4), x...), w)
	near(t, "same_upper", out[0], sh(1, 1, 2, 2), fl(1+2+5+6, 3+4+7+8, 9+10+13+14, 11+12+15+16), 0)
	// stride 1, 2x2 kernel: total pad 1, SAME_LOWER puts it at the begin.
	out = run(t, 22, node("Conv", 2, 1, attrs{"auto_pad": "SAME_LOWER"}), f32(sh(1, 1, 4, 4), x...), w)
	if got := out[0].Float64At(0); got != 1 {
		t.Fatalf("same_lower corner = %v, want 1", got)
	}
	out = run(t, 22, node("Conv", 2, 1, attrs{"auto_pad": "SAME_UPPER"}), f32(sh(1, 1, 4, 4), x...), w)
	if got := out[0].Float64At(15); got != 16 {
		t.Fatalf("same_upper corner = %v, want 16", got)
	}
	// Depthwise: 2 channels, each its own 1x1 weight.
	out = run(t, 22, node("Conv", 2, 1, attrs{"group": 2}), f32(sh(1, 2, 1, 2), 1, 2, 3, 4), f32(sh(2, 1, 1, 1), 10, -1))
	near(t, "depthwise", out[0], sh(1, 2, 1, 2), fl(10, 20, -3, -4), 0)
}

func TestConvRandom(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	cases := []struct {
		xs, ws             []int
		group              int
		strides, dil, pads []int
		autoPad            string
		bias               bool
		dtypes             []graph.DType
	}{
		{sh(2, 6, 11, 13), sh(8, 3, 3, 3), 2, sh(1, 1), sh(1, 1), sh(1, 1, 1, 1), "", true, nil},
		{sh(1, 16, 20, 20), sh(40, 16, 3, 3), 1, sh(2, 1), sh(1, 2), sh(0, 2, 1, 0), "", false, nil},
		{sh(1, 4, 9, 9), sh(8, 1, 3, 3), 4, sh(2, 2), sh(1, 1), sh(1, 1, 1, 1), "", true, nil}, // depthwise ×2
		{sh(1, 3, 5, 6, 7), sh(4, 3, 2, 3, 2), 1, sh(1, 2, 1), sh(2, 1, 1), sh(0, 1, 0, 1, 0, 1), "", true, nil},
		{sh(3, 5, 17), sh(7, 5, 4), 1, sh(3), sh(2), sh(2, 3), "", true, nil},
		{sh(1, 32, 7, 7), sh(16, 32, 1, 1), 1, sh(1, 1), sh(1, 1), sh(0, 0, 0, 0), "", true, nil}, // 1x1 direct
	}
	for ci, c := range cases {
		x := randF32(r, kernels.Prod(c.xs))
		w := randF32(r, kernels.Prod(c.ws))
		var b []float32
		in := []*graph.Tensor{graph.MustFromSlice(c.xs, x), graph.MustFromSlice(c.ws, w)}
		if c.bias {
			b = randF32(r, c.ws[0])
			in = append(in, graph.MustFromSlice(sh(c.ws[0]), b))
		}
		nd := len(c.xs) - 2
		outSp := make([]int, nd)
		for d := 0; d < nd; d++ {
			ek := (c.ws[2+d]-1)*c.dil[d] + 1
			outSp[d] = (c.xs[2+d]+c.pads[d]+c.pads[nd+d]-ek)/c.strides[d] + 1
		}
		want := naiveConv(x, w, b, c.xs, c.ws, c.group, c.strides, c.dil, c.pads, outSp)
		toI := func(v []int) []int64 {
			o := make([]int64, len(v))
			for i, x := range v {
				o[i] = int64(x)
			}
			return o
		}
		n := node("Conv", len(in), 1, attrs{"group": c.group, "strides": toI(c.strides), "dilations": toI(c.dil), "pads": toI(c.pads)})
		outShape := append(sh(c.xs[0], c.ws[0]), outSp...)
		out := run(t, 22, n, in...)
		near(t, "conv f32 case "+string(rune('0'+ci)), out[0], outShape, want, 1e-4)
		// float64 and float16 agree too.
		in64 := make([]*graph.Tensor, len(in))
		in16 := make([]*graph.Tensor, len(in))
		for i, tt := range in {
			in64[i], _ = graph.FromFloat64s(graph.Float64, tt.Shape, tt.Float64s())
			in16[i], _ = graph.FromFloat64s(graph.Float16, tt.Shape, tt.Float64s())
		}
		out = run(t, 22, n, in64...)
		near(t, "conv f64", out[0], outShape, want, 1e-9)
		out = run(t, 22, n, in16...)
		if out[0].DType != graph.Float16 || !graph.SameShape(out[0].Shape, outShape) {
			t.Fatalf("conv f16: got %v", out[0])
		}
	}
}

func TestConvTranspose(t *testing.T) {
	// 1-D, stride 1: x=[1,2,3], w=[1,1,1] → full correlation [1,3,6,5,3].
	out := run(t, 22, node("ConvTranspose", 2, 1, nil), f32(sh(1, 1, 3), 1, 2, 3), f32(sh(1, 1, 3), 1, 1, 1))
	near(t, "ct s1", out[0], sh(1, 1, 5), fl(1, 3, 6, 5, 3), 0)
	// stride 2: each input stamps the kernel 2 apart.
	out = run(t, 22, node("ConvTranspose", 2, 1, attrs{"strides": []int64{2}}), f32(sh(1, 1, 3), 1, 2, 3), f32(sh(1, 1, 3), 1, 1, 1))
	near(t, "ct s2", out[0], sh(1, 1, 7), fl(1, 1, 3, 2, 5, 3, 3), 0)
	// pads trim both ends, output_padding adds one at the end, bias.
	out = run(t, 22, node("ConvTranspose", 3, 1, attrs{"strides": []int64{2}, "pads": []int64{1, 1}, "output_padding": []int64{1}}),
		f32(sh(1, 1, 3), 1, 2, 3), f32(sh(1, 1, 3), 1, 1, 1), f32(sh(1), 100))
	near(t, "ct pads", out[0], sh(1, 1, 6), fl(101, 103, 102, 105, 103, 103), 0)
	// output_shape larger than the natural size leaves zeros (+bias) at the end.
	out = run(t, 22, node("ConvTranspose", 2, 1, attrs{"output_shape": []int64{7}}), f32(sh(1, 1, 3), 1, 2, 3), f32(sh(1, 1, 3), 1, 1, 1))
	near(t, "ct output_shape", out[0], sh(1, 1, 7), fl(1, 3, 6, 5, 3, 0, 0), 0)
	// group 2, two output channels per group; channel 0 of W group 1 is 2x.
	out = run(t, 22, node("ConvTranspose", 2, 1, attrs{"group": 2}), f32(sh(1, 2, 1), 1, 3), f32(sh(2, 2, 1), 1, -1, 2, 0))
	near(t, "ct group", out[0], sh(1, 4, 1), fl(1, -1, 6, 0), 0)
}

// ---- pools ----

func TestMaxPool(t *testing.T) {
	x := f32(sh(1, 1, 3, 3), 1, 9, 3, 4, 5, 6, 7, 8, 2)
	out := run(t, 12, node("MaxPool", 1, 2, attrs{"kernel_shape": []int64{2, 2}}), x)
	near(t, "max", out[0], sh(1, 1, 2, 2), fl(9, 9, 8, 8), 0)
	near(t, "argmax", out[1], sh(1, 1, 2, 2), fl(1, 1, 7, 7), 0)
	out = run(t, 12, node("MaxPool", 1, 2, attrs{"kernel_shape": []int64{2, 2}, "storage_order": 1}), x)
	near(t, "argmax col-major", out[1], sh(1, 1, 2, 2), fl(3, 3, 5, 5), 0)
	// ceil_mode with a window hanging over the end; pads ignored in the max.
	out = run(t, 12, node("MaxPool", 1, 1, attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}, "ceil_mode": 1}), x)
	near(t, "ceil", out[0], sh(1, 1, 2, 2), fl(9, 6, 8, 2), 0)
	xn := f32(sh(1, 1, 4), -5, float32(math.NaN()), -7, float32(math.NaN()))
	out = run(t, 12, node("MaxPool", 1, 1, attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "pads": []int64{1, 1}}), xn)
	near(t, "nan", out[0], sh(1, 1, 3), fl(-5, -7, math.NaN()), 0)
	// uint8, dilations.
	xu := graph.MustFromSlice(sh(1, 1, 5), []uint8{1, 200, 3, 4, 250})
	out = run(t, 12, node("MaxPool", 1, 1, attrs{"kernel_shape": []int64{2}, "dilations": []int64{2}}), xu)
	if got := graph.Data[uint8](out[0]); len(got) != 3 || got[0] != 3 || got[1] != 200 || got[2] != 250 {
		t.Fatalf("uint8 dilated: %v", got)
	}
}

func TestAveragePool(t *testing.T) {
	x := f32(sh(1, 1, 2, 2), 1, 2, 3, 4)
	out := run(t, 19, node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}}), x)
	near(t, "exclude pad", out[0], sh(1, 1, 2, 2), fl(1, 2, 3, 4), 0)
	out = run(t, 19, node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}, "strides": []int64{2, 2}, "count_include_pad": 1}), x)
	near(t, "include pad", out[0], sh(1, 1, 2, 2), fl(0.25, 0.5, 0.75, 1), 0)
	// 1-D ceil_mode: the last window is clipped, include_pad counts only
	// taps inside the explicit padding.
	x1 := f32(sh(1, 1, 5), 1, 2, 3, 4, 5)
	out = run(t, 19, node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "ceil_mode": 1, "count_include_pad": 1}), x1)
	near(t, "ceil include", out[0], sh(1, 1, 3), fl(1.5, 3.5, 5), 0)
	// SAME_UPPER
	out = run(t, 19, node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{2}, "auto_pad": "SAME_UPPER"}), x1)
	near(t, "same_upper", out[0], sh(1, 1, 5), fl(1.5, 2.5, 3.5, 4.5, 5), 0)
}

func TestGlobalPoolsAndLRN(t *testing.T) {
	x := f32(sh(1, 2, 2, 2), 1, 2, 3, 6, -1, -2, float32(math.NaN()), 0)
	out := run(t, 22, node("GlobalAveragePool", 1, 1, nil), x)
	near(t, "gap", out[0], sh(1, 2, 1, 1), fl(3, math.NaN()), 0)
	out = run(t, 22, node("GlobalMaxPool", 1, 1, nil), x)
	near(t, "gmp", out[0], sh(1, 2, 1, 1), fl(6, math.NaN()), 0)
	// LRN size 2 over 2 channels: channel 0 sums c0 (and c1: ceil((2-1)/2)=1),
	// channel 1 sums c1 only (floor(1/2)=0 before).
	xl := f32(sh(1, 2, 1, 1), 1, 2)
	out = run(t, 13, node("LRN", 1, 1, attrs{"size": 2, "alpha": 2.0, "beta": 1.0, "bias": 1.0}), xl)
	near(t, "lrn", out[0], sh(1, 2, 1, 1), fl(1/(1+1.0*(1+4)), 2/(1+1.0*4)), 1e-6)
}

// ---- bad input never panics ----

func TestBadInputs(t *testing.T) {
	x := f32(sh(1, 1, 4, 4), make([]float32, 16)...)
	w := f32(sh(1, 1, 2, 2), 1, 1, 1, 1)
	cases := []struct {
		name string
		n    *graph.Node
		in   []*graph.Tensor
	}{
		{"conv stride 0", node("Conv", 2, 1, attrs{"strides": []int64{0, 1}}), []*graph.Tensor{x, w}},
		{"conv negative pad", node("Conv", 2, 1, attrs{"pads": []int64{-1, 0, 0, 0}}), []*graph.Tensor{x, w}},
		{"conv group 0", node("Conv", 2, 1, attrs{"group": 0}), []*graph.Tensor{x, w}},
		{"conv group mismatch", node("Conv", 2, 1, attrs{"group": 2}), []*graph.Tensor{x, w}},
		{"conv kernel_shape mismatch", node("Conv", 2, 1, attrs{"kernel_shape": []int64{3, 3}}), []*graph.Tensor{x, w}},
		{"conv kernel too big", node("Conv", 2, 1, nil), []*graph.Tensor{x, f32(sh(1, 1, 5, 5), make([]float32, 25)...)}},
		{"conv bad bias", node("Conv", 3, 1, nil), []*graph.Tensor{x, w, f32(sh(2), 1, 2)}},
		{"conv rank", node("Conv", 2, 1, nil), []*graph.Tensor{f32(sh(4), 1, 2, 3, 4), w}},
		{"conv bad auto_pad", node("Conv", 2, 1, attrs{"auto_pad": "FOO"}), []*graph.Tensor{x, w}},
		{"pool no kernel", node("MaxPool", 1, 1, nil), []*graph.Tensor{x}},
		{"pool dilations len", node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{2, 2}, "dilations": []int64{1}}), []*graph.Tensor{x}},
		{"pool huge pad", node("MaxPool", 1, 1, attrs{"kernel_shape": []int64{2, 2}, "pads": []int64{1 << 40, 0, 0, 0}}), []*graph.Tensor{x}},
		{"convT negative out", node("ConvTranspose", 2, 1, attrs{"pads": []int64{9, 9, 0, 0}}), []*graph.Tensor{x, w}},
		{"convT W channels", node("ConvTranspose", 2, 1, nil), []*graph.Tensor{x, f32(sh(2, 1, 2, 2), make([]float32, 8)...)}},
		{"matmul scalar", node("MatMul", 2, 1, nil), []*graph.Tensor{f32(sh(), 1), f32(sh(), 1)}},
		{"matmul k", node("MatMul", 2, 1, nil), []*graph.Tensor{f32(sh(2, 3), make([]float32, 6)...), f32(sh(2, 3), make([]float32, 6)...)}},
		{"matmul batch", node("MatMul", 2, 1, nil), []*graph.Tensor{f32(sh(2, 1, 1), 1, 2), f32(sh(3, 1, 1), 1, 2, 3)}},
		{"gemm rank", node("Gemm", 2, 1, nil), []*graph.Tensor{f32(sh(2), 1, 2), f32(sh(2, 1), 1, 2)}},
		{"lrn no size", node("LRN", 1, 1, nil), []*graph.Tensor{x}},
		{"conv missing W", node("Conv", 2, 1, nil), []*graph.Tensor{x, nil}},
	}
	for _, c := range cases {
		err := runErr(22, c.n, c.in...)
		if err == nil || err.Error() == "panic" || !errors.Is(err, kernels.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
	}
}

// ---- shape inference ----

func TestInfer(t *testing.T) {
	dyn := graph.Dim{Param: "N"}
	in := func(dt graph.DType, s graph.Shape) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: s}}
	}
	st := func(d ...int) graph.Shape { return graph.StaticShape(d...) }
	check := func(op string, n *graph.Node, ins []kernels.InferInput, want graph.Shape) {
		t.Helper()
		s, _ := kernels.Lookup("", op)
		got, err := s.Infer(n, 22, ins)
		if err != nil {
			t.Fatalf("%s infer: %v", op, err)
		}
		if got[0].Shape.String() != want.String() || got[0].DType != ins[0].Type.DType {
			t.Fatalf("%s infer: %v, want %v", op, got[0], want)
		}
	}
	check("MatMul", node("MatMul", 2, 1, nil), []kernels.InferInput{in(graph.Float32, graph.Shape{dyn, {Value: 1}, {Value: 3}, {Value: 4}}), in(graph.Float32, st(5, 4, 2))},
		graph.Shape{dyn, {Value: 5}, {Value: 3}, {Value: 2}})
	check("MatMul", node("MatMul", 2, 1, nil), []kernels.InferInput{in(graph.Int64, st(4)), in(graph.Int64, st(4))}, graph.Shape{})
	check("Gemm", node("Gemm", 2, 1, attrs{"transA": 1}), []kernels.InferInput{in(graph.Float32, st(4, 3)), in(graph.Float32, st(4, 5))}, st(3, 5))
	check("Conv", node("Conv", 2, 1, attrs{"strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}}),
		[]kernels.InferInput{in(graph.Float32, graph.Shape{dyn, {Value: 3}, {Value: 224}, {Value: 224}}), in(graph.Float32, st(64, 3, 7, 7))},
		graph.Shape{dyn, {Value: 64}, {Value: 110}, {Value: 110}})
	check("ConvTranspose", node("ConvTranspose", 2, 1, attrs{"strides": []int64{2}, "group": 2}),
		[]kernels.InferInput{in(graph.Float32, st(1, 4, 5)), in(graph.Float32, st(4, 3, 3))}, st(1, 6, 11))
	check("MaxPool", node("MaxPool", 1, 1, attrs{"kernel_shape": []int64{3, 3}, "strides": []int64{2, 2}, "ceil_mode": 1}),
		[]kernels.InferInput{in(graph.Uint8, st(1, 8, 6, 6))}, st(1, 8, 3, 3))
	check("AveragePool", node("AveragePool", 1, 1, attrs{"kernel_shape": []int64{3}, "auto_pad": "SAME_LOWER", "strides": []int64{2}}),
		[]kernels.InferInput{in(graph.Float16, graph.Shape{dyn, dyn, {Value: -1}})}, graph.Shape{dyn, dyn, {Value: -1}})
	check("GlobalMaxPool", node("GlobalMaxPool", 1, 1, nil), []kernels.InferInput{in(graph.Float64, st(2, 3, 4, 5))}, st(2, 3, 1, 1))
	s, _ := kernels.Lookup("", "MatMul")
	if _, err := s.Infer(node("MatMul", 2, 1, nil), 13, []kernels.InferInput{in(graph.Float32, st(2, 3)), in(graph.Float32, st(4, 5))}); err == nil {
		t.Fatalf("MatMul infer accepted mismatched inner dims")
	}
}
