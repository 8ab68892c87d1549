package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func TestQuantizeMultiplier(t *testing.T) {
	cases := []struct {
		m     float64
		q     int32
		shift int
	}{
		{0.5, 1 << 30, 0},
		{1, 1 << 30, 1},
		{0.75, 1610612736, 0},
		{1 - math.Pow(2, -40), 1 << 30, 1}, // mantissa rounds up to 2^31: halved
		{1e-12, 0, 0},                      // exponent below −31
		{0, 0, 0},
	}
	for _, c := range cases {
		if q, s := quantizeMultiplier(c.m); q != c.q || s != c.shift {
			t.Errorf("quantizeMultiplier(%g) = %d, %d; want %d, %d", c.m, q, s, c.q, c.shift)
		}
	}
}

func TestRoundingPrimitives(t *testing.T) {
	if got := srdhm(math.MinInt32, math.MinInt32); got != math.MaxInt32 {
		t.Errorf("srdhm overflow case = %d", got)
	}
	// a·b/2^31 = ±1.5: ties go toward +∞
	if got := srdhm(3, 1<<30); got != 2 {
		t.Errorf("srdhm(3, 2^30) = %d, want 2", got)
	}
	if got := srdhm(-3, 1<<30); got != -1 {
		t.Errorf("srdhm(-3, 2^30) = %d, want -1", got)
	}
	// rounding right shifts: ties away from zero
	for _, c := range [][3]int32{{3, 1, 2}, {-3, 1, -2}, {5, 2, 1}, {-5, 2, -1}, {6, 2, 2}, {-6, 2, -2}, {7, 0, 7}} {
		if got := rdbypot(c[0], int(c[1])); got != c[2] {
			t.Errorf("rdbypot(%d, %d) = %d, want %d", c[0], c[1], got, c[2])
		}
	}
	// against exact arithmetic: |x·M − result| ≤ 1 for random values
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		m := math.Exp(rng.Float64()*12 - 10) // 4.5e-5 .. 7.4
		x := int32(rng.IntN(1<<22) - 1<<21)
		q, s := quantizeMultiplier(m)
		got := mulByQuantizedMultiplier(x, q, s)
		exact := float64(x) * float64(q) * math.Pow(2, float64(s-31))
		if math.Abs(float64(got)-exact) > 1 {
			t.Fatalf("x=%d m=%g: %d, exact %g", x, m, got, exact)
		}
	}
}

func TestFixedPointTranscendentals(t *testing.T) {
	for _, v := range []float64{-0.01, -0.25, -0.3, -1, -2.5, -7.9, -16, -31} {
		raw := int32(math.Round(v * (1 << 26))) // Q5.26
		got := float64(expOnNegativeValues(raw, 5)) / (1 << 31)
		if d := math.Abs(got - math.Exp(v)); d > 2e-7+1e-6*math.Exp(v) {
			t.Errorf("exp(%g) = %.9f, want %.9f", v, got, math.Exp(v))
		}
	}
	if expOnNegativeValues(0, 5) != math.MaxInt32 {
		t.Error("exp(0) is not one")
	}
	for _, v := range []float64{0, 0.1, 0.5, 0.9, 0.999} {
		got := float64(oneOverOnePlusX(int32(v*(1<<31)))) / (1 << 31)
		if d := math.Abs(got - 1/(1+v)); d > 1e-7 {
			t.Errorf("1/(1+%g) = %.9f, want %.9f", v, got, 1/(1+v))
		}
	}
}

func q8(shape []int, v ...int8) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func sc(v float32) *graph.Tensor              { return graph.Scalar(v) }
func zp(v int8) *graph.Tensor                 { return graph.Scalar(v) }

func node(op string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{OpType: op, Domain: "switchyard.quant", Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func aints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

func runK(t *testing.T, n *graph.Node, in ...*graph.Tensor) []int8 {
	t.Helper()
	s, ok := kernels.Lookup("switchyard.quant", n.OpType)
	if !ok {
		t.Fatalf("no kernel %s", n.OpType)
	}
	out, err := s.Kernel(&kernels.Context{Opset: 1}, n, in)
	if err != nil {
		t.Fatal(err)
	}
	return out[0].Data.([]int8)
}

// TestConvAgainstFloat: a random per-channel int8 convolution (and its
// depthwise form) agrees with the real-valued convolution requantised by
// rounding within one output step, and exactly where that value is not
// within 0.01 of a rounding tie.
func TestConvAgainstFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const H, W, C, O, K = 5, 6, 3, 4, 3
	x := make([]int8, H*W*C)
	for i := range x {
		x[i] = int8(rng.IntN(256) - 128)
	}
	for _, dw := range []bool{false, true} {
		cout := O
		wshape := []int{O, K, K, C}
		op := "Conv2D"
		if dw {
			cout, wshape, op = 2*C, []int{1, K, K, 2 * C}, "DepthwiseConv2D"
		}
		w := make([]int8, K*K*C*cout/map[bool]int{false: 1, true: C}[dw])
		for i := range w {
			w[i] = int8(rng.IntN(255) - 127)
		}
		ws := make([]float32, cout)
		wz := make([]int8, cout)
		bias := make([]int32, cout)
		for c := range ws {
			ws[c] = 0.001 + 0.002*float32(c)
			bias[c] = int32(rng.IntN(2000) - 1000)
		}
		const xs, xz, ys, yz = 0.05, -3, 0.09, 7
		n := node(op, aints("strides", 2, 1), aints("dilations", 1, 1), aints("pads", 1, 1, 1, 1))
		y := runK(t, n, q8([]int{1, H, W, C}, x...), sc(xs), zp(xz), q8(wshape, w...), graph.MustFromSlice([]int{cout}, ws),
			graph.MustFromSlice([]int{cout}, wz), sc(ys), zp(yz), graph.MustFromSlice([]int{cout}, bias))
		OH, OW := (H+2-K)/2+1, (W+2-K)/1+1
		if len(y) != OH*OW*cout {
			t.Fatalf("%s: %d outputs", op, len(y))
		}
		for oy := 0; oy < OH; oy++ {
			for ox := 0; ox < OW; ox++ {
				for oc := 0; oc < cout; oc++ {
					acc := float64(bias[oc])
					for ky := 0; ky < K; ky++ {
						for kx := 0; kx < K; kx++ {
							iy, ix := oy*2-1+ky, ox-1+kx
							if iy < 0 || iy >= H || ix < 0 || ix >= W {
								continue
							}
							if dw {
								ic := oc / 2
								acc += float64(w[(ky*K+kx)*cout+oc]) * float64(int(x[(iy*W+ix)*C+ic])-xz)
								continue
							}
							for ic := 0; ic < C; ic++ {
								acc += float64(w[((oc*K+ky)*K+kx)*C+ic]) * float64(int(x[(iy*W+ix)*C+ic])-xz)
							}
						}
					}
					real := acc*float64(float32(xs))*float64(ws[oc])/float64(float32(ys)) + yz
					want := math.Max(-128, math.Min(127, math.Round(real)))
					got := float64(y[(oy*OW+ox)*cout+oc])
					frac := math.Abs(real - math.Floor(real) - 0.5)
					if math.Abs(got-want) > 1 || (frac > 0.01 && got != want && real > -128 && real < 127) {
						t.Errorf("%s (%d,%d,%d): %v, real %.4f", op, oy, ox, oc, got, real)
					}
				}
			}
		}
	}
}

func TestAddMulAgainstFloat(t *testing.T) {
	a := make([]int8, 256)
	b := make([]int8, 256)
	for i := range a {
		a[i], b[i] = int8(i-128), int8(127-i)
	}
	const as, az, bs, bz, ys, yz = 0.02, 3, 0.035, -5, 0.05, -1
	add := runK(t, node("Add"), q8([]int{256}, a...), sc(as), zp(az), q8([]int{256}, b...), sc(bs), zp(bz), sc(ys), zp(yz))
	mul := runK(t, node("Mul"), q8([]int{256}, a...), sc(as), zp(az), q8([]int{256}, b...), sc(bs), zp(bz), sc(ys*20), zp(yz))
	for i := range a {
		ra := float64(float32(as)) * float64(int(a[i])-az)
		rb := float64(float32(bs)) * float64(int(b[i])-bz)
		want := math.Max(-128, math.Min(127, math.Round((ra+rb)/float64(float32(ys))+yz)))
		if math.Abs(float64(add[i])-want) > 1 {
			t.Errorf("add %d: %d, want %v", i, add[i], want)
		}
		want = math.Max(-128, math.Min(127, math.Round(ra*rb/float64(float32(ys*20))+yz)))
		if math.Abs(float64(mul[i])-want) > 1 {
			t.Errorf("mul %d: %d, want %v", i, mul[i], want)
		}
	}
	// RELU clamps at the zero point
	relu := runK(t, node("Add", &graph.Attribute{Name: "activation", Type: graph.AttrString, S: "RELU"}),
		q8([]int{256}, a...), sc(as), zp(az), q8([]int{256}, b...), sc(bs), zp(bz), sc(ys), zp(yz))
	for i, v := range relu {
		if v < yz || (add[i] >= yz && v != add[i]) {
			t.Fatalf("relu %d: %d (add %d)", i, v, add[i])
		}
	}
}

func TestPoolMeanSoftmax(t *testing.T) {
	x := q8([]int{1, 2, 2, 1}, 1, 2, 4, -7)
	avg := runK(t, node("AveragePool2D", aints("kernel_shape", 2, 2), aints("strides", 1, 1), aints("pads", 0, 0, 1, 1)), x, sc(1), zp(0), sc(1), zp(0))
	// windows (padding excluded): {1,2,4,-7}=0/4 → 0; {2,-7} → -5/2 → -3 (away from zero); {4,-7} → -2 (-1.5); {-7} → -7
	if want := []int8{0, -3, -2, -7}; !equal(avg, want) {
		t.Errorf("avg pool %v, want %v", avg, want)
	}
	mx := runK(t, node("MaxPool2D", aints("kernel_shape", 2, 2), aints("strides", 1, 1), aints("pads", 0, 0, 1, 1)), x, sc(1), zp(0), sc(1), zp(0))
	if want := []int8{4, 2, 4, -7}; !equal(mx, want) {
		t.Errorf("max pool %v, want %v", mx, want)
	}
	// integer Mean over H, W: (1+2+4-7 - 4·(-1))/4 = 1 in the same scale
	mean := runK(t, node("Mean", aints("axes", 1, 2), &graph.Attribute{Name: "keepdims", Type: graph.AttrInt, I: 1}), x, sc(0.1), zp(-1), sc(0.1), zp(-1))
	if want := []int8{0}; !equal(mean, want) {
		t.Errorf("mean %v, want %v", mean, want)
	}
	sm := runK(t, node("Softmax"), q8([]int{2, 4}, 0, 0, 0, 0, 127, -128, -128, -128), sc(0.1), zp(0), sc(1.0/256), zp(-128))
	if want := []int8{-64, -64, -64, -64, 127, -128, -128, -128}; !equal(sm, want) {
		t.Errorf("softmax %v, want %v", sm, want)
	}
	// a spread row: within one step of the float softmax
	row := []int8{10, -20, 30, 0, -50}
	sm = runK(t, node("Softmax"), q8([]int{5}, row...), sc(0.05), zp(0), sc(1.0/256), zp(-128))
	var z float64
	for _, v := range row {
		z += math.Exp(0.05 * float64(v))
	}
	for i, v := range row {
		want := math.Min(127, math.Round(math.Exp(0.05*float64(v))/z*256)-128)
		if math.Abs(float64(sm[i])-want) > 1 {
			t.Errorf("softmax %d: %d, want %v", i, sm[i], want)
		}
	}
}

func TestQuantizeRoundsHalfAway(t *testing.T) {
	s, ok := kernels.Lookup("switchyard.quant", "Quantize")
	if !ok {
		t.Fatal("no Quantize")
	}
	out, err := s.Kernel(&kernels.Context{}, node("Quantize"), []*graph.Tensor{graph.MustFromSlice([]int{5}, []float32{0.5, -0.5, 1.5, 1000, -1000}), sc(1), zp(0)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out[0].Data.([]int8), []int8{1, -1, 2, 127, -128}; !equal(got, want) {
		t.Errorf("quantize %v, want %v", got, want)
	}
}

func TestBadParamsAreErrors(t *testing.T) {
	s, _ := kernels.Lookup("switchyard.quant", "Add")
	_, err := s.Kernel(&kernels.Context{}, node("Add"), []*graph.Tensor{q8([]int{1}, 1), sc(0), zp(0), q8([]int{1}, 1), sc(1), zp(0), sc(1), zp(0)})
	if err == nil {
		t.Error("scale 0 accepted")
	}
	_, err = s.Kernel(&kernels.Context{}, node("Add"), []*graph.Tensor{q8([]int{1}, 1), sc(1), zp(0)})
	if err == nil {
		t.Error("missing inputs accepted")
	}
}

func equal(a, b []int8) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestLogisticAgainstFloat: the fixed-point int8 logistic is within one
// output step of the real sigmoid over every int8 input, monotone, and
// exactly the zero point's half (0) at real zero.
func TestLogisticAgainstFloat(t *testing.T) {
	x := make([]int8, 256)
	for i := range x {
		x[i] = int8(i - 128)
	}
	const xs, xz = 0.0387753, -2
	y := runK(t, node("Logistic"), q8([]int{256}, x...), sc(xs), zp(xz), sc(1.0/256), zp(-128))
	for i, v := range y {
		r := float64(float32(xs)) * float64(int(x[i])-xz)
		want := math.Min(127, math.Round(256/(1+math.Exp(-r)))-128)
		if math.Abs(float64(v)-want) > 1 {
			t.Errorf("logistic(%g) = %d, want %v", r, v, want)
		}
		if i > 0 && v < y[i-1] {
			t.Errorf("not monotone at %d", i)
		}
	}
	if y[xz+128] != 0 {
		t.Errorf("logistic(0) = %d, want 0 (one half)", y[xz+128])
	}
}

// TestTanhAgainstFloat: the fixed-point int8 tanh is within one output
// step (1/128) of the real tanh over every int8 input for two input
// scales (one saturating well inside the int8 range), monotone, odd
// around the zero point within a step, exactly 0 at real zero and ±127/−128
// at the ends.
func TestTanhAgainstFloat(t *testing.T) {
	x := make([]int8, 256)
	for i := range x {
		x[i] = int8(i - 128)
	}
	for _, c := range []struct {
		xs float32
		xz int32
	}{{0.0235, 3}, {0.07, -1}} {
		y := runK(t, node("Tanh"), q8([]int{256}, x...), sc(c.xs), zp(int8(c.xz)), sc(1.0/128), zp(0))
		exact := 0
		for i, v := range y {
			r := float64(c.xs) * float64(int32(x[i])-c.xz)
			want := math.Max(-128, math.Min(127, math.Round(128*math.Tanh(r))))
			if math.Abs(float64(v)-want) > 1 {
				t.Errorf("xs %g: tanh(%g) = %d, want %v", c.xs, r, v, want)
			}
			if float64(v) == want {
				exact++
			}
			if i > 0 && v < y[i-1] {
				t.Errorf("xs %g: not monotone at %d", c.xs, i)
			}
		}
		if y[c.xz+128] != 0 {
			t.Errorf("xs %g: tanh(0) = %d, want 0", c.xs, y[c.xz+128])
		}
		if y[0] != -128 && y[0] != -127 || y[255] != 127 {
			t.Errorf("xs %g: ends %d, %d", c.xs, y[0], y[255])
		}
		t.Logf("xs %g: %d of 256 equal to round(128·tanh)", c.xs, exact)
	}
}

// TestTanhPrimitives: (1−x)/(1+x) and the Q4.27 tanh against float64.
func TestTanhPrimitives(t *testing.T) {
	for _, v := range []float64{0, 0.1, 0.5, 0.9, 0.999} {
		got := float64(oneMinusXOverOnePlusX(int32(v*(1<<31)))) / (1 << 31)
		if d := math.Abs(got - (1-v)/(1+v)); d > 1e-7 {
			t.Errorf("(1-%g)/(1+%g) = %.9f, want %.9f", v, v, got, (1-v)/(1+v))
		}
	}
	for _, v := range []float64{-7.5, -2, -0.5, -0.01, 0.01, 0.3, 1, 3, 7.9} {
		got := float64(tanhQ0(int32(math.Round(v*(1<<27))), 4)) / (1 << 31)
		if d := math.Abs(got - math.Tanh(v)); d > 1e-6 {
			t.Errorf("tanh(%g) = %.9f, want %.9f", v, got, math.Tanh(v))
		}
	}
}
