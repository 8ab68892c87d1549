package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// gqaTest is one GroupQueryAttention call: sizes, pasts (P = 0: none),
// seqlens_k by batch, total_sequence_length, and the attributes.
type gqaTest struct {
	B, S, N, KV, H, P int
	seqlens           []int
	total             int
	packed            bool
	rotary            int // 0 none, 1 halves, 2 interleaved
	rotWidth          int // cos/sin width (0: H/2)
	softcap, scale    float32
	window            int // local_window_size (0: none)
}

func (c gqaTest) String() string {
	return fmt.Sprintf("B%d_S%d_N%d_KV%d_H%d_P%d_tot%d_pk%v_rot%d_cap%v_sc%v_win%d", c.B, c.S, c.N, c.KV, c.H, c.P, c.total, c.packed, c.rotary, c.softcap, c.scale, c.window)
}

// gqaCall builds the node and its inputs (float32 values in [-1, 1]).
func gqaCall(c gqaTest, rng *rand.Rand) (*graph.Node, []*graph.Tensor) {
	randT := func(shape ...int) *graph.Tensor {
		v := make([]float32, kernelsProd(shape))
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return graph.MustFromSlice(shape, v)
	}
	attr := func(name string, v int) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInt, I: int64(v)}
	}
	n := &graph.Node{Name: "gqa", OpType: "GroupQueryAttention", Domain: "com.microsoft",
		Outputs: []string{"y", "present_key", "present_value"},
		Attrs:   map[string]*graph.Attribute{"num_heads": attr("num_heads", c.N), "kv_num_heads": attr("kv_num_heads", c.KV)}}
	in := make([]*graph.Tensor, 7, 9)
	if c.packed {
		in[0] = randT(c.B, c.S, (c.N+2*c.KV)*c.H)
	} else {
		in[0], in[1], in[2] = randT(c.B, c.S, c.N*c.H), randT(c.B, c.S, c.KV*c.H), randT(c.B, c.S, c.KV*c.H)
	}
	if c.P > 0 {
		in[3], in[4] = randT(c.B, c.KV, c.P, c.H), randT(c.B, c.KV, c.P, c.H)
	}
	sl := make([]int32, c.B)
	for b, v := range c.seqlens {
		sl[b] = int32(v)
	}
	in[5], in[6] = graph.MustFromSlice([]int{c.B}, sl), graph.MustFromSlice([]int{}, []int32{int32(c.total)})
	if c.softcap != 0 {
		n.Attrs["softcap"] = &graph.Attribute{Name: "softcap", Type: graph.AttrFloat, F: c.softcap}
	}
	if c.scale != 0 {
		n.Attrs["scale"] = &graph.Attribute{Name: "scale", Type: graph.AttrFloat, F: c.scale}
	}
	if c.window != 0 {
		n.Attrs["local_window_size"] = attr("local_window_size", c.window)
	}
	if c.rotary > 0 {
		n.Attrs["do_rotary"] = attr("do_rotary", 1)
		n.Attrs["rotary_interleaved"] = attr("rotary_interleaved", c.rotary-1)
		w := c.rotWidth
		if w == 0 {
			w = c.H / 2
		}
		maxPos := max(c.P, c.total) + 3
		cs, sn := make([]float32, maxPos*w), make([]float32, maxPos*w)
		for p := 0; p < maxPos; p++ {
			for i := 0; i < w; i++ {
				a := float64(p) * math.Pow(10000, -float64(2*i)/float64(2*w))
				cs[p*w+i], sn[p*w+i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
		}
		in = append(in, graph.MustFromSlice([]int{maxPos, w}, cs), graph.MustFromSlice([]int{maxPos, w}, sn))
	}
	return n, in
}

func gqaRef(t testing.TB, n *graph.Node, in []*graph.Tensor) []*graph.Tensor {
	t.Helper()
	s, ok := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	if !ok {
		t.Fatal("no reference GroupQueryAttention")
	}
	out, err := s.Kernel(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func noInto(*kernels.Context, int) *graph.Tensor { return nil }

// gqaTol is the bound the native kernel is held to against the
// reference: |native − reference| ≤ 1e-5·(1 + |reference|) (the float32
// dot products, sums and weights against float64; the values are O(1)).
const gqaTol = 1e-5

func gqaClose(t *testing.T, what string, got, want *graph.Tensor) float64 {
	t.Helper()
	return gqaCloseTol(t, what, got, want, gqaTol)
}

func gqaCloseTol(t *testing.T, what string, got, want *graph.Tensor, tol float64) float64 {
	t.Helper()
	if !graph.SameShape(got.Shape, want.Shape) || got.DType != graph.Float32 {
		t.Fatalf("%s: %v %v, want float32 %v", what, got.DType, got.Shape, want.Shape)
	}
	g, w := graph.Data[float32](got), graph.Data[float32](want)
	worst := 0.0
	for i := range w {
		d := math.Abs(float64(g[i]) - float64(w[i]))
		if !(d <= tol*(1+math.Abs(float64(w[i])))) {
			t.Fatalf("%s[%d] = %v, reference %v", what, i, g[i], w[i])
		}
		worst = max(worst, d/(1+math.Abs(float64(w[i]))))
	}
	return worst
}

// gqaCases: decode (S = 1) and prefill or prompt chunks (S > 1), several
// batches with ragged pasts, N = KV, 2·KV, 8·KV, cache buffers longer
// than used (P > total) and exact (P = total), no past, rotary halves and
// interleaved (and a rotary width below H/2), packed QKV, softcap, scale,
// sliding windows, head sizes of each of attendRow's paths (6, 8, 12, 16, 32, 64).
func gqaCases() []gqaTest {
	return []gqaTest{
		{B: 1, S: 1, N: 8, KV: 4, H: 8, P: 32, seqlens: []int{16}, total: 17},
		{B: 1, S: 1, N: 8, KV: 4, H: 8, P: 17, seqlens: []int{16}, total: 17, rotary: 2},
		{B: 2, S: 1, N: 4, KV: 4, H: 16, P: 20, seqlens: []int{3, 11}, total: 12, rotary: 1},
		{B: 3, S: 1, N: 16, KV: 2, H: 8, P: 9, seqlens: []int{8, 0, 5}, total: 9, rotary: 2},
		{B: 1, S: 1, N: 8, KV: 1, H: 32, P: 40, seqlens: []int{39}, total: 40, softcap: 2},
		{B: 1, S: 5, N: 8, KV: 4, H: 8, seqlens: []int{4}, total: 5, rotary: 2},
		{B: 2, S: 6, N: 4, KV: 2, H: 16, P: 16, seqlens: []int{5, 9}, total: 10, rotary: 1},
		{B: 2, S: 3, N: 8, KV: 1, H: 8, P: 12, seqlens: []int{11, 4}, total: 12, rotary: 1, rotWidth: 2},
		{B: 1, S: 4, N: 6, KV: 3, H: 16, P: 6, seqlens: []int{5}, total: 6, rotary: 2, softcap: 1.5, scale: 0.2},
		{B: 2, S: 2, N: 4, KV: 2, H: 8, P: 8, seqlens: []int{3, 7}, total: 8, packed: true, rotary: 1},
		{B: 1, S: 7, N: 4, KV: 1, H: 8, P: 4, seqlens: []int{6}, total: 7, packed: true}, // present longer than the past
		// head sizes off the eight-column path: 12 (four sums), 6 (one)
		{B: 2, S: 3, N: 4, KV: 2, H: 12, P: 10, seqlens: []int{4, 9}, total: 10, rotary: 1},
		{B: 1, S: 1, N: 4, KV: 1, H: 6, P: 9, seqlens: []int{6}, total: 7, rotary: 2, softcap: 1},
		{B: 1, S: 2, N: 2, KV: 2, H: 64, P: 70, seqlens: []int{65}, total: 66, rotary: 2},
		{B: 1, S: 1, N: 32, KV: 8, H: 64, P: 1100, seqlens: []int{1023}, total: 1024, rotary: 1}, // BenchmarkGQA/big, a shorter buffer
		// sliding windows (local_window_size): a prompt longer than the
		// window, ragged decode steps, a window of the query alone
		{B: 1, S: 9, N: 4, KV: 2, H: 16, P: 12, seqlens: []int{8}, total: 9, rotary: 1, window: 4},
		{B: 2, S: 1, N: 8, KV: 4, H: 8, P: 20, seqlens: []int{3, 17}, total: 18, rotary: 2, softcap: 2, window: 6},
		{B: 1, S: 3, N: 2, KV: 1, H: 8, P: 8, seqlens: []int{6}, total: 7, window: 1},
	}
}

// TestGQAMatchesReference: native's float32 GroupQueryAttention agrees
// with the reference kernel within gqaTol on every case, output and
// presents; the presents' used rows bit for bit (copies and rotations
// rounded once as the reference does).
func TestGQAMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	g := gqaKernel()
	for _, c := range gqaCases() {
		t.Run(c.String(), func(t *testing.T) {
			n, in := gqaCall(c, rng)
			want := gqaRef(t, n, in)
			got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			worst := gqaClose(t, "output", got[0], want[0])
			for j, name := range []string{"present_key", "present_value"} {
				gv, wv := graph.Data[float32](got[j+1]), graph.Data[float32](want[j+1])
				if !graph.SameShape(got[j+1].Shape, want[j+1].Shape) {
					t.Fatalf("%s %v, want %v", name, got[j+1].Shape, want[j+1].Shape)
				}
				for i := range wv {
					if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) {
						t.Fatalf("%s[%d] = %v, reference %v", name, i, gv[i], wv[i])
					}
				}
			}
			t.Logf("output: worst |native − reference|/(1+|reference|) %.2g", worst)
		})
	}
}

// TestGQAInPlace: presents bound to the pasts' own memory get only the
// new rows written (every other row, the unused ones holding NaN, stays
// as it was, bit for bit) and the output is the copying call's; a bound
// tensor of its own is filled as a new present; one sharing memory with
// another input (present_value bound to past_key) is not written.
func TestGQAInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	g := &gqaNative{}
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	g.ref = ref.Kernel
	ctx := &kernels.Context{Context: context.Background(), Opset: 1}
	for _, c := range gqaCases() {
		if c.P < c.total {
			continue
		}
		t.Run(c.String(), func(t *testing.T) {
			n, in := gqaCall(c, rng)
			pk, pv := graph.Data[float32](in[3]), graph.Data[float32](in[4])
			for b, sl := range c.seqlens {
				for h := 0; h < c.KV; h++ {
					for r := sl + 1; r < c.P; r++ {
						row := ((b*c.KV+h)*c.P + r) * c.H
						for i := 0; i < c.H; i++ {
							pk[row+i], pv[row+i] = float32(math.NaN()), float32(math.NaN())
						}
					}
				}
			}
			want, err := g.run(ctx, n, in, noInto)
			if err != nil {
				t.Fatal(err)
			}
			// the copying call read no unused row
			for i, v := range graph.Data[float32](want[0]) {
				if v != v {
					t.Fatalf("output[%d] is NaN", i)
				}
			}
			gqaClose(t, "output", want[0], gqaRef(t, n, in)[0])
			bk, bv := in[3].Clone(), in[4].Clone()
			oldK, oldV := graph.Data[float32](bk.Clone()), graph.Data[float32](bv.Clone())
			ins := append([]*graph.Tensor(nil), in...)
			ins[3], ins[4] = bk, bv
			ck, cv := &graph.Tensor{DType: graph.Float32, Shape: bk.Shape, Data: bk.Data}, &graph.Tensor{DType: graph.Float32, Shape: bv.Shape, Data: bv.Data}
			got, err := g.run(ctx, n, ins, func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] })
			if err != nil {
				t.Fatal(err)
			}
			if got[1] != ck || got[2] != cv {
				t.Fatal("in place: the presents are not the bound tensors")
			}
			sameF32(t, "output", got[0], want[0])
			for b, sl := range c.seqlens {
				p := sl + 1 - c.S
				for h := 0; h < c.KV; h++ {
					for r := 0; r < c.P; r++ {
						for i := 0; i < c.H; i++ {
							at := ((b*c.KV+h)*c.P+r)*c.H + i
							wk, wv := oldK[at], oldV[at]
							if r >= p && r < p+c.S {
								wk, wv = graph.Data[float32](want[1])[at], graph.Data[float32](want[2])[at]
							}
							if gk, gv := graph.Data[float32](bk)[at], graph.Data[float32](bv)[at]; math.Float32bits(gk) != math.Float32bits(wk) || math.Float32bits(gv) != math.Float32bits(wv) {
								t.Fatalf("presents at [%d %d %d %d] = %v %v, want %v %v (new rows %d..%d)", b, h, r, i, gk, gv, wk, wv, p, p+c.S-1)
							}
						}
					}
				}
			}
			fk, fv := want[1].Clone(), want[2].Clone()
			for _, f := range [][]float32{graph.Data[float32](fk), graph.Data[float32](fv)} {
				for i := range f {
					f[i] = 5
				}
			}
			got, err = g.run(ctx, n, in, func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, fk, fv}[j] })
			if err != nil {
				t.Fatal(err)
			}
			if got[1] != fk || got[2] != fv {
				t.Fatal("bound presents of their own not written")
			}
			for j := range want {
				sameF32(t, fmt.Sprint("output ", j), got[j], want[j])
			}
			saved := in[3].Clone()
			alias := &graph.Tensor{DType: graph.Float32, Shape: in[3].Shape, Data: in[3].Data}
			got, err = g.run(ctx, n, in, func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, nil, alias}[j] })
			if err != nil {
				t.Fatal(err)
			}
			if got[2] == alias {
				t.Fatal("present_value written into past_key")
			}
			sameF32(t, "past_key", in[3], saved)
			for j := range want {
				sameF32(t, fmt.Sprint("output ", j), got[j], want[j])
			}
		})
	}
}

func sameF32(t *testing.T, what string, got, want *graph.Tensor) {
	t.Helper()
	g, w := graph.Data[float32](got), graph.Data[float32](want)
	if !graph.SameShape(got.Shape, want.Shape) {
		t.Fatalf("%s: %v, want %v", what, got.Shape, want.Shape)
	}
	for i := range w {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g[i], w[i])
		}
	}
}

// TestGQAFallsBack: what the native kernel does not handle runs the
// reference kernel: its errors (a position past the rotary cache, a past
// that does not fit) and what it computes (float64 inputs, int64
// seqlens_k).
func TestGQAFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	g := gqaKernel()
	ctx := &kernels.Context{Context: context.Background(), Opset: 1}
	c := gqaTest{B: 1, S: 1, N: 4, KV: 2, H: 8, P: 8, seqlens: []int{5}, total: 6, rotary: 1}
	n, in := gqaCall(c, rng)
	short := append([]*graph.Tensor(nil), in...)
	short[7], short[8] = graph.MustFromSlice([]int{3, 4}, make([]float32, 12)), graph.MustFromSlice([]int{3, 4}, make([]float32, 12))
	if _, err := g(ctx, n, short); err == nil {
		t.Error("a position past the rotary cache: no error")
	}
	long := append([]*graph.Tensor(nil), in...)
	long[5] = graph.MustFromSlice([]int{1}, []int32{9})
	if _, err := g(ctx, n, long); err == nil {
		t.Error("a past longer than past_key: no error")
	}
	i64 := append([]*graph.Tensor(nil), in...)
	i64[5] = graph.MustFromSlice([]int{1}, []int64{5})
	got, err := g(ctx, n, i64)
	if err != nil {
		t.Fatal(err)
	}
	sameF32(t, "int64 seqlens_k", got[0], gqaRef(t, n, in)[0])
	f64 := append([]*graph.Tensor(nil), in...)
	for _, i := range []int{0, 1, 2} {
		v := graph.Data[float32](in[i])
		d := make([]float64, len(v))
		for j := range v {
			d[j] = float64(v[j])
		}
		f64[i] = graph.MustFromSlice(in[i].Shape, d)
	}
	if got, err = g(ctx, n, f64); err != nil || got[0].DType != graph.Float64 {
		t.Fatalf("float64 query: %v %v", got, err)
	}
}

// TestGQAPlacedOnNative: in a graph like a decoder layer's attention
// (the query, key and value projections, GroupQueryAttention with rotary
// and a cache buffer, the output projection), GroupQueryAttention is
// placed on native, and the run gives the reference kernels' results
// (the output within 1e-4: it went through float32 MatMuls). The model
// width is 512, so that the placement does not hinge on a few hundred
// nanoseconds of calibrated fixed costs: at width 64 the whole graph took
// about 4 µs on either side and a re-measured profile put it on cpu.
func TestGQAPlacedOnNative(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	c := gqaTest{B: 1, S: 1, N: 8, KV: 4, H: 8, P: 32, seqlens: []int{15}, total: 16, rotary: 2}
	n, in := gqaCall(c, rng)
	const D = 512
	w := func(k, m int) *graph.Tensor { return graph.MustFromSlice([]int{k, m}, randSlice(rng, k*m)) }
	init := map[string]*graph.Tensor{"cos_cache": in[7], "sin_cache": in[8],
		"wq": w(D, c.N*c.H), "wk": w(D, c.KV*c.H), "wv": w(D, c.KV*c.H), "wo": w(c.N*c.H, D)}
	mm := func(a, b, y string) *graph.Node {
		return &graph.Node{Name: y, OpType: "MatMul", Inputs: []string{a, b}, Outputs: []string{y}}
	}
	n.Inputs = []string{"q", "k", "v", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"}
	n.Outputs = []string{"attn", "present_key", "present_value"}
	g := &graph.Graph{Name: "attention", Initializers: init,
		Nodes:   []*graph.Node{mm("x", "wq", "q"), mm("x", "wk", "k"), mm("x", "wv", "v"), n, mm("attn", "wo", "y")},
		Outputs: []graph.ValueInfo{{Name: "y"}, {Name: "present_key"}, {Name: "present_value"}}}
	x := graph.MustFromSlice([]int{c.B, c.S, D}, randSlice(rng, c.B*c.S*D))
	feeds := map[string]*graph.Tensor{"x": x, "past_key": in[3], "past_value": in[4], "seqlens_k": in[5], "total_sequence_length": in[6]}
	for _, name := range []string{"x", "past_key", "past_value", "seqlens_k", "total_sequence_length"} {
		t := feeds[name]
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}})
	}
	ir := &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}, Graph: g}
	dev, err := hal.NewDevice(New(Options{Threads: 1}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	m, err := runtime.Prepare(ctx, ir, &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, pn := range m.Plan().Nodes {
		switch {
		case pn.OpType == "GroupQueryAttention" && pn.Backend != Name:
			t.Errorf("%s on %s: %+v", pn.OpType, pn.Backend, pn.Declined)
		case pn.Backend != Name:
			t.Logf("%s %s on %s: %+v", pn.OpType, pn.Name, pn.Backend, pn.Declined)
		}
	}
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := runtime.Prepare(ctx, ir, &runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"y", "present_key", "present_value"} {
		t.Logf("%s: worst %.2g", name, gqaCloseTol(t, name, got[name], want[name], 1e-4))
	}
}

// fixedAlloc hands out the same tensors for the same shapes (a run's
// arena once warm: zeroed for Alloc, as they are for AllocUninit), so
// that AllocsPerRun counts the kernel's own.
type fixedAlloc struct{ by map[[5]int]*graph.Tensor }

func (a *fixedAlloc) AllocUninit(dt graph.DType, shape []int) (*graph.Tensor, error) {
	var k [5]int
	copy(k[:4], shape)
	k[4] = len(shape)<<8 | int(dt)
	if t, ok := a.by[k]; ok {
		return t, nil
	}
	t, err := graph.New(dt, shape)
	a.by[k] = t
	return t, err
}

func (a *fixedAlloc) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	t, err := a.AllocUninit(dt, shape)
	if err == nil {
		if b, ok := graph.RawBytes(t); ok {
			clear(b)
		}
	}
	return t, err
}

// BenchmarkGQA: a decode step of a small model (B 1, S 1, N 8, KV 4, H 8,
// a 512-row cache of which 256 are used) and of a bigger one (N 32, KV 8,
// H 64, 1024 of 2048 rows; no rotary, as core/kernels/contrib's
// BenchmarkGroupQueryAttention), native and the reference kernel, the presents
// written in place (bound to the pasts) or copied (new presents).
//
//	go test ./plugins/native -run '^$' -bench GQA -benchmem
func BenchmarkGQA(b *testing.B) {
	for _, c := range []struct {
		name string
		c    gqaTest
	}{
		{"small", gqaTest{B: 1, S: 1, N: 8, KV: 4, H: 8, P: 512, seqlens: []int{255}, total: 256}},
		{"big", gqaTest{B: 1, S: 1, N: 32, KV: 8, H: 64, P: 2048, seqlens: []int{1023}, total: 1024}},
	} {
		n, in := gqaCall(c.c, rand.New(rand.NewPCG(1, 2)))
		ck, cv := &graph.Tensor{DType: graph.Float32, Shape: in[3].Shape, Data: in[3].Data}, &graph.Tensor{DType: graph.Float32, Shape: in[4].Shape, Data: in[4].Data}
		inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
		ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
		g := &gqaNative{ref: ref.Kernel}
		for _, m := range []struct {
			name string
			run  func(ctx *kernels.Context) error
		}{
			{"native/inplace", func(ctx *kernels.Context) error { _, err := g.run(ctx, n, in, inPlace); return err }},
			{"native/copy", func(ctx *kernels.Context) error { _, err := g.run(ctx, n, in, noInto); return err }},
			{"reference/copy", func(ctx *kernels.Context) error { _, err := ref.Kernel(ctx, n, in); return err }},
		} {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				ctx := &kernels.Context{Context: context.Background(), Opset: 1, Alloc: &fixedAlloc{by: map[[5]int]*graph.Tensor{}}}
				if err := m.run(ctx); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := m.run(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestGQAConcurrent: one node's kernel (its pooled scratch) called from
// several goroutines at once gives each call its sequential result.
func TestGQAConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	g := gqaKernel()
	cases := gqaCases()[:6]
	type call struct {
		n    *graph.Node
		in   []*graph.Tensor
		want []*graph.Tensor
	}
	calls := make([]call, len(cases))
	for i, c := range cases {
		n, in := gqaCall(c, rng)
		want, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
		if err != nil {
			t.Fatal(err)
		}
		calls[i] = call{n, in, want}
	}
	errs := make(chan error, len(calls))
	for _, c := range calls {
		go func() {
			for range 20 {
				got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, c.n, c.in)
				if err != nil {
					errs <- err
					return
				}
				for j := range c.want {
					gv, wv := graph.Data[float32](got[j]), graph.Data[float32](c.want[j])
					for i := range wv {
						if math.Float32bits(gv[i]) != math.Float32bits(wv[i]) {
							errs <- fmt.Errorf("output %d [%d] = %v, alone %v", j, i, gv[i], wv[i])
							return
						}
					}
				}
			}
			errs <- nil
		}()
	}
	for range calls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
