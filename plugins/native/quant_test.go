package native_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// qcase is one int8 node with its inputs (x, and b for Add, as graph
// inputs; everything else constant).
type qcase struct {
	name   string
	node   *graph.Node
	inputs []*graph.Tensor
	consts map[string]*graph.Tensor
}

// qsubgraph builds a one-node subgraph with inferred types.
func qsubgraph(t testing.TB, c qcase) *hal.Subgraph {
	t.Helper()
	g := &graph.Graph{Name: c.name, Nodes: []*graph.Node{c.node}, Initializers: c.consts, Outputs: []graph.ValueInfo{{Name: "y"}}}
	for i, x := range c.inputs {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: c.node.Inputs[3*i], Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(x.Shape...)}})
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "switchyard.quant", Version: 1}}}
	types, issues := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
	if len(issues) > 0 {
		t.Fatalf("inference: %v", issues)
	}
	g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: "y", Type: types["y"]})
	return sg
}

func runOn(t *testing.T, b hal.Backend, sg *hal.Subgraph, ins []*graph.Tensor) *graph.Tensor {
	t.Helper()
	e, err := b.Compile(context.Background(), sg, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	out := []*graph.Tensor{{}}
	if err := e.Execute(context.Background(), ins, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

type qgen struct{ rng *rand.Rand }

func (r qgen) i8(shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(r.rng.IntN(256) - 128)
	}
	return graph.MustFromSlice(shape, v)
}

// zp is a zero point, often at the extremes.
func (r qgen) zp() int8 {
	switch r.rng.IntN(4) {
	case 0:
		return -128
	case 1:
		return 127
	}
	return int8(r.rng.IntN(256) - 128)
}

func (r qgen) scale(lo, hi float64) float32 {
	return float32(lo * math.Pow(hi/lo, r.rng.Float64()))
}

func (r qgen) act() string {
	return []string{"NONE", "RELU", "RELU6", "RELU_N1_TO_1"}[r.rng.IntN(4)]
}

// convCase is a random Conv2D (depthwise: DepthwiseConv2D) case.
func (r qgen) convCase(name string, depthwise bool, n, h, w, cin, cout, kh, kw int, st, dl, pd []int64, perChannel, withBias bool, ysMul float64) qcase {
	consts := map[string]*graph.Tensor{}
	var wt *graph.Tensor
	if depthwise {
		cout = cin
		wt = r.i8(1, kh, kw, cin)
	} else {
		wt = r.i8(cout, kh, kw, cin)
	}
	consts["w"] = wt
	xs := r.scale(0.005, 0.1)
	consts["xs"], consts["xz"] = graph.Scalar(xs), graph.Scalar(r.zp())
	nws := 1
	if perChannel {
		nws = cout
	}
	ws := make([]float32, nws)
	for i := range ws {
		ws[i] = r.scale(0.001, 0.05)
	}
	consts["ws"], consts["wz"] = graph.MustFromSlice([]int{nws}, ws), graph.MustFromSlice([]int{nws}, make([]int8, nws))
	if nws == 1 {
		consts["ws"], consts["wz"] = graph.Scalar(ws[0]), graph.Scalar(int8(0))
	}
	k := kh * kw * cin
	if depthwise {
		k = kh * kw
	}
	// the accumulator's typical size over the output scale: ysMul ≈ 1
	// fills the int8 range, less saturates, more (with small scales) has
	// multipliers above one (left shifts)
	ys := float32(float64(xs) * float64(ws[0]) * 128 * 128 * float64(k) / 64 / 128 * ysMul)
	consts["ys"], consts["yz"] = graph.Scalar(ys), graph.Scalar(r.zp())
	in := []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}
	if withBias {
		b := make([]int32, cout)
		for i := range b {
			b[i] = int32(r.rng.IntN(1<<18) - 1<<17)
		}
		if cout > 0 {
			b[0] = 1<<31 - 1 - int32(r.rng.IntN(1000)) // saturating the high end
		}
		consts["bias"] = graph.MustFromSlice([]int{cout}, b)
		in = append(in, "bias")
	}
	op := "Conv2D"
	if depthwise {
		op = "DepthwiseConv2D"
	}
	nd := &graph.Node{Name: name, OpType: op, Domain: "switchyard.quant", Inputs: in, Outputs: []string{"y"},
		Attrs: attrs("strides", st, "dilations", dl, "pads", pd, "activation", r.act())}
	return qcase{name: name, node: nd, inputs: []*graph.Tensor{r.i8(n, h, w, cin)}, consts: consts}
}

func qcases() []qcase {
	r := qgen{rand.New(rand.NewPCG(17, 8))}
	var cs []qcase
	one, pad0 := []int64{1, 1}, []int64{0, 0, 0, 0}
	type geo struct {
		n, h, w, cin, cout, kh, kw int
		st, dl, pd                 []int64
	}
	geos := []geo{
		{1, 7, 9, 16, 24, 1, 1, one, one, pad0},
		{1, 14, 14, 32, 48, 1, 1, one, one, pad0},
		{2, 5, 6, 17, 50, 1, 1, one, one, pad0},
		{1, 3, 3, 5, 7, 1, 1, one, one, pad0},
		{1, 1, 1, 1, 1, 1, 1, one, one, pad0},
		{1, 11, 13, 3, 32, 3, 3, []int64{2, 2}, one, []int64{0, 0, 1, 1}},
		{1, 9, 9, 8, 65, 3, 3, one, one, []int64{1, 1, 1, 1}},
		{1, 12, 10, 6, 16, 5, 3, []int64{2, 1}, []int64{1, 2}, []int64{2, 1, 0, 3}},
		{2, 8, 8, 33, 20, 3, 3, []int64{3, 3}, []int64{2, 2}, []int64{2, 2, 2, 2}},
		{1, 4, 30, 12, 100, 2, 2, []int64{1, 2}, one, []int64{1, 0, 0, 1}},
		{1, 25, 3, 4, 9, 1, 1, []int64{2, 1}, one, []int64{1, 1, 1, 1}},
	}
	for i, g := range geos {
		for _, ysMul := range []float64{1, 0.05, 300} {
			for _, dw := range []bool{false, true} {
				pc := r.rng.IntN(3) != 0
				name := fmt.Sprintf("conv%d_dw%v_ys%g_pc%v", i, dw, ysMul, pc)
				cs = append(cs, r.convCase(name, dw, g.n, g.h, g.w, g.cin, g.cout, g.kh, g.kw, g.st, g.dl, g.pd, pc, r.rng.IntN(4) != 0, ysMul))
			}
		}
	}
	// FullyConnected: rows × depth, per tensor and per channel
	for i, f := range []struct{ rows, depth, units int }{{1, 1280, 1000}, {3, 17, 5}, {9, 64, 48}, {1, 3, 1}, {26, 40, 33}} {
		for _, pc := range []bool{false, true} {
			c := r.convCase("fc", false, f.rows, 1, 1, f.depth, f.units, 1, 1, one, one, pad0, pc, i%2 == 0, []float64{1, 0.1, 30}[i%3])
			c.name = fmt.Sprintf("fc%d_pc%v", i, pc)
			c.node.OpType = "FullyConnected"
			c.node.Attrs = attrs("activation", r.act())
			c.consts["w"] = graph.MustFromSlice([]int{f.units, f.depth}, graph.Data[int8](c.consts["w"]))
			c.inputs[0] = graph.MustFromSlice([]int{f.rows, f.depth}, graph.Data[int8](c.inputs[0]))
			cs = append(cs, c)
		}
	}
	// Add, equal shapes
	for i, shape := range [][]int{{1, 7, 7, 160}, {1, 3, 5, 3}, {2, 9, 33}} {
		for j := 0; j < 3; j++ {
			as, bs := r.scale(0.01, 0.2), r.scale(0.01, 0.2)
			ys := float32(float64(max(as, bs)) * []float64{1.5, 0.3, 8}[j])
			consts := map[string]*graph.Tensor{
				"as": graph.Scalar(as), "az": graph.Scalar(r.zp()), "bs": graph.Scalar(bs), "bz": graph.Scalar(r.zp()),
				"ys": graph.Scalar(ys), "yz": graph.Scalar(r.zp()),
			}
			nd := &graph.Node{Name: "add", OpType: "Add", Domain: "switchyard.quant", Inputs: []string{"a", "as", "az", "b", "bs", "bz", "ys", "yz"},
				Outputs: []string{"y"}, Attrs: attrs("activation", r.act())}
			cs = append(cs, qcase{name: fmt.Sprintf("add%d_%d", i, j), node: nd, inputs: []*graph.Tensor{r.i8(shape...), r.i8(shape...)}, consts: consts})
		}
	}
	// Mean over the spatial axes (native's kernel) and over others (the
	// reference one inside the partition)
	for i, m := range []struct {
		shape []int
		axes  []int64
	}{{[]int{1, 7, 7, 1280}, []int64{1, 2}}, {[]int{2, 5, 3, 17}, []int64{2, 1}}, {[]int{2, 4, 3, 5}, []int64{3}}} {
		consts := map[string]*graph.Tensor{"xs": graph.Scalar(r.scale(0.01, 0.2)), "xz": graph.Scalar(r.zp()),
			"ys": graph.Scalar(r.scale(0.005, 0.1)), "yz": graph.Scalar(r.zp())}
		nd := &graph.Node{Name: "mean", OpType: "Mean", Domain: "switchyard.quant", Inputs: []string{"x", "xs", "xz", "ys", "yz"},
			Outputs: []string{"y"}, Attrs: attrs("axes", m.axes, "keepdims", i%2)}
		cs = append(cs, qcase{name: fmt.Sprintf("mean%d", i), node: nd, inputs: []*graph.Tensor{r.i8(m.shape...)}, consts: consts})
	}
	// extreme operands: x at 127 or −128 (u = 255 or 0) against weights
	// at −128 or 127, in runs of equal signs, where a u8×s8 pair product
	// summed in int16 (VPMADDUBSW) would saturate
	for i, pat := range []struct{ x, w func(j int) int8 }{
		{func(int) int8 { return 127 }, func(int) int8 { return -128 }},
		{func(int) int8 { return 127 }, func(int) int8 { return 127 }},
		{func(j int) int8 { return []int8{127, -128}[j/7%2] }, func(j int) int8 { return []int8{-128, 127, -128}[j/5%3] }},
		{func(j int) int8 { return []int8{-128, 127}[j%2] }, func(j int) int8 { return []int8{127, -128}[j/2%2] }},
	} {
		for _, dw := range []bool{false, true} {
			c := r.convCase(fmt.Sprintf("extreme%d_dw%v", i, dw), dw, 1, 6, 5, 40, 24, 3, 3, one, one, []int64{1, 1, 1, 1}, i%2 == 0, true, 300)
			c.node.Attrs["activation"] = &graph.Attribute{Name: "activation", Type: graph.AttrString, S: "NONE"}
			for _, tv := range []struct {
				t *graph.Tensor
				f func(int) int8
			}{{c.inputs[0], pat.x}, {c.consts["w"], pat.w}} {
				d := graph.Data[int8](tv.t)
				for j := range d {
					d[j] = tv.f(j)
				}
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// Every int8 case is bit-identical to the reference kernels (the cpu
// backend), on every int8 kernel family the machine runs (AVX-512 VNNI,
// AVX2, the portable Go kernels), at 1 and 3 threads.
func TestQuantAgainstReference(t *testing.T) {
	for _, kern := range native.QuantKernelFamilies() {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("kernel=%s/threads=%d", kern, threads), func(t *testing.T) {
				t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
				if got := native.QuantKernelName(); !strings.HasPrefix(got, kern) {
					t.Fatalf("forcing %q runs the tile kernel %q", kern, got)
				}
				nb := native.New(native.Options{Threads: threads})
				defer nb.Close()
				for _, c := range qcases() {
					t.Run(c.name, func(t *testing.T) {
						sg := qsubgraph(t, c)
						vs, err := nb.Supports(context.Background(), sg)
						if err != nil {
							t.Fatal(err)
						}
						if !vs[0].Supported {
							t.Fatalf("declined: %s", vs[0].Reason)
						}
						got, want := runOn(t, nb, sg, c.inputs), runOn(t, cpu.New(), sg, c.inputs)
						if !graph.SameShape(got.Shape, want.Shape) {
							t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
						}
						gv, wv := graph.Data[int8](got), graph.Data[int8](want)
						diff := 0
						for i := range wv {
							if gv[i] != wv[i] {
								if diff == 0 {
									t.Errorf("element %d: %d, want %d", i, gv[i], wv[i])
								}
								diff++
							}
						}
						if diff > 0 {
							t.Errorf("%d of %d elements differ", diff, len(wv))
						}
					})
				}
			})
		}
	}
}

// Supports declines what the int8 kernels do not do, saying why.
func TestQuantDeclines(t *testing.T) {
	r := qgen{rand.New(rand.NewPCG(3, 4))}
	one, pad0 := []int64{1, 1}, []int64{0, 0, 0, 0}
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	cases := map[string]func() qcase{
		"nonzero weight zero point": func() qcase {
			c := r.convCase("wz", false, 1, 4, 4, 8, 8, 1, 1, one, one, pad0, false, true, 1)
			c.consts["wz"] = graph.Scalar(int8(3))
			return c
		},
		"grouped": func() qcase {
			c := r.convCase("g", false, 1, 4, 4, 8, 8, 1, 1, one, one, pad0, false, true, 1)
			c.inputs[0] = r.i8(1, 4, 4, 16)
			return c
		},
		"channel multiplier 1": func() qcase {
			c := r.convCase("m", true, 1, 4, 4, 4, 4, 3, 3, one, one, pad0, false, false, 1)
			c.consts["w"] = r.i8(1, 3, 3, 8)
			c.consts["ws"], c.consts["wz"] = graph.Scalar(float32(0.01)), graph.Scalar(int8(0))
			return c
		},
		"per-channel quantization of x": func() qcase {
			c := r.convCase("px", false, 1, 4, 4, 8, 8, 1, 1, one, one, pad0, false, true, 1)
			c.consts["xs"] = graph.MustFromSlice([]int{8}, make([]float32, 8))
			c.consts["xz"] = graph.MustFromSlice([]int{8}, make([]int8, 8))
			return c
		},
		"activation": func() qcase {
			c := r.convCase("act", false, 1, 4, 4, 8, 8, 1, 1, one, one, pad0, false, true, 1)
			c.node.Attrs["activation"] = &graph.Attribute{Name: "activation", Type: graph.AttrString, S: "TANH"}
			return c
		},
		"rounding \"half_up\"": func() qcase {
			c := r.convCase("act", false, 1, 4, 4, 8, 8, 1, 1, one, one, pad0, false, true, 1)
			c.node.Attrs["rounding"] = &graph.Attribute{Name: "rounding", Type: graph.AttrString, S: "half_up"}
			return c
		},
		"no broadcasting": func() qcase {
			consts := map[string]*graph.Tensor{"as": graph.Scalar(float32(0.1)), "az": graph.Scalar(int8(0)), "bs": graph.Scalar(float32(0.1)),
				"bz": graph.Scalar(int8(0)), "ys": graph.Scalar(float32(0.1)), "yz": graph.Scalar(int8(0))}
			nd := &graph.Node{Name: "add", OpType: "Add", Domain: "switchyard.quant", Inputs: []string{"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, Outputs: []string{"y"}}
			return qcase{name: "bcast", node: nd, inputs: []*graph.Tensor{r.i8(2, 3), r.i8(1, 3)}, consts: consts}
		},
	}
	for want, mk := range cases {
		t.Run(want, func(t *testing.T) {
			c := mk()
			sg := qsubgraph(t, c)
			vs, err := nb.Supports(context.Background(), sg)
			if err != nil {
				t.Fatal(err)
			}
			if vs[0].Supported || !strings.Contains(vs[0].Reason, want) {
				t.Fatalf("verdict %+v, want a decline naming %q", vs[0], want)
			}
		})
	}
}
