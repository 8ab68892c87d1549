package native_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// qlcase is one ONNX integer-op node: graph inputs by name (in the
// node's input order), everything else constant.
type qlcase struct {
	name   string
	node   *graph.Node
	extra  []*graph.Node // after node, the last writing y
	inputs []string
	vals   []*graph.Tensor
	consts map[string]*graph.Tensor
}

func qlsubgraph(t testing.TB, c qlcase) *hal.Subgraph {
	t.Helper()
	g := &graph.Graph{Name: c.name, Nodes: append([]*graph.Node{c.node}, c.extra...), Initializers: c.consts, Outputs: []graph.ValueInfo{{Name: "y"}}}
	for i, name := range c.inputs {
		x := c.vals[i]
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: x.DType, Shape: graph.StaticShape(x.Shape...)}})
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}}
	types, issues := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
	if len(issues) > 0 {
		t.Fatalf("inference: %v", issues)
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
		}
	}
	return sg
}

// q8 is a random tensor of dt (int8 or uint8), values from gen(i) when
// given.
func (r qgen) q8(dt graph.DType, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if dt == graph.Uint8 {
		v := make([]uint8, n)
		for i := range v {
			v[i] = uint8(r.rng.IntN(256))
		}
		return graph.MustFromSlice(shape, v)
	}
	return r.i8(shape...)
}

// zpOf is a zero point of dt, often at the extremes.
func (r qgen) zpOf(dt graph.DType, n int) *graph.Tensor {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(r.zp())
	}
	return zpTensor(dt, v)
}

func zpTensor(dt graph.DType, v []int32) *graph.Tensor {
	if dt == graph.Uint8 {
		u := make([]uint8, len(v))
		for i, x := range v {
			u[i] = uint8(x + 128)
		}
		if len(u) == 1 {
			return graph.Scalar(u[0])
		}
		return graph.MustFromSlice([]int{len(u)}, u)
	}
	s := make([]int8, len(v))
	for i, x := range v {
		s[i] = int8(x)
	}
	if len(s) == 1 {
		return graph.Scalar(s[0])
	}
	return graph.MustFromSlice([]int{len(s)}, s)
}

func scalesOf(v []float32) *graph.Tensor {
	if len(v) == 1 {
		return graph.Scalar(v[0])
	}
	return graph.MustFromSlice([]int{len(v)}, v)
}

// qlconv is a random QLinearConv: x of xdt, w of wdt (int8 weights have
// zero point 0 or small ones, uint8 weights 128 ± a little, so that w − wz
// fits int8), y of ydt.
func (r qgen) qlconv(name string, xdt, wdt, ydt graph.DType, dw bool, n, cin, h, w, cout, kh, kw int, st, dl, pd []int64, perChannel, withBias bool, ysMul float64) qlcase {
	consts := map[string]*graph.Tensor{}
	cg := cin
	if dw {
		cout, cg = cin, 1
	}
	nw := cout * cg * kh * kw
	nws := 1
	if perChannel {
		nws = cout
	}
	wz := make([]int32, nws)
	for i := range wz {
		if r.rng.IntN(2) == 0 {
			wz[i] = int32(r.rng.IntN(5) - 2)
		}
	}
	// weights whose difference to the zero point fits int8
	var wt *graph.Tensor
	if wdt == graph.Uint8 {
		v := make([]uint8, nw)
		for i := range v {
			z := wz[(i/(cg*kh*kw))%nws] + 128
			v[i] = uint8(min(max(z+int32(r.rng.IntN(256)-128), max(0, z-128)), min(255, z+127)))
		}
		wt = graph.MustFromSlice([]int{cout, cg, kh, kw}, v)
	} else {
		v := make([]int8, nw)
		for i := range v {
			z := wz[(i/(cg*kh*kw))%nws]
			v[i] = int8(min(max(z+int32(r.rng.IntN(256)-128), max(-128, z-128)), min(127, z+127)))
		}
		wt = graph.MustFromSlice([]int{cout, cg, kh, kw}, v)
	}
	consts["w"] = wt
	xs := r.scale(0.005, 0.1)
	consts["xs"], consts["xz"] = graph.Scalar(xs), r.zpOf(xdt, 1)
	ws := make([]float32, nws)
	for i := range ws {
		ws[i] = r.scale(0.001, 0.05)
	}
	consts["ws"], consts["wz"] = scalesOf(ws), zpTensor(wdt, wz)
	k := kh * kw * cg
	ys := float32(float64(xs) * float64(ws[0]) * 128 * 128 * float64(k) / 64 / 128 * ysMul)
	consts["ys"], consts["yz"] = graph.Scalar(ys), r.zpOf(ydt, 1)
	in := []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}
	if withBias {
		b := make([]int32, cout)
		for i := range b {
			b[i] = int32(r.rng.IntN(1<<18) - 1<<17)
		}
		b[0] = 1<<31 - 1 - int32(r.rng.IntN(1000))
		consts["bias"] = graph.MustFromSlice([]int{cout}, b)
		in = append(in, "bias")
	}
	group := 1
	if dw {
		group = cin
	}
	nd := &graph.Node{Name: name, OpType: "QLinearConv", Inputs: in, Outputs: []string{"y"},
		Attrs: attrs("strides", st, "dilations", dl, "pads", pd, "group", group)}
	return qlcase{name: name, node: nd, inputs: []string{"x"}, vals: []*graph.Tensor{r.q8(xdt, n, cin, h, w)}, consts: consts}
}

func qlcases() []qlcase {
	r := qgen{rand.New(rand.NewPCG(25, 17))}
	var cs []qlcase
	one, pad0 := []int64{1, 1}, []int64{0, 0, 0, 0}
	type geo struct {
		n, cin, h, w, cout, kh, kw int
		st, dl, pd                 []int64
	}
	geos := []geo{
		{1, 16, 7, 9, 24, 1, 1, one, one, pad0},
		{2, 17, 5, 6, 50, 1, 1, one, one, pad0},
		{1, 1, 1, 1, 1, 1, 1, one, one, pad0},
		{1, 3, 11, 13, 32, 3, 3, []int64{2, 2}, one, []int64{0, 0, 1, 1}},
		{1, 8, 9, 9, 65, 3, 3, one, one, []int64{1, 1, 1, 1}},
		{1, 6, 12, 10, 16, 5, 3, []int64{2, 1}, []int64{1, 2}, []int64{2, 1, 0, 3}},
		{2, 33, 8, 8, 20, 3, 3, []int64{3, 3}, []int64{2, 2}, []int64{2, 2, 2, 2}},
		{1, 4, 25, 3, 9, 1, 1, []int64{2, 1}, one, []int64{1, 1, 1, 1}},
	}
	types := [][3]graph.DType{{graph.Int8, graph.Int8, graph.Int8}, {graph.Uint8, graph.Uint8, graph.Uint8}, {graph.Uint8, graph.Int8, graph.Int8}, {graph.Int8, graph.Uint8, graph.Uint8}}
	for i, g := range geos {
		for j, ysMul := range []float64{1, 0.05, 300} {
			for _, dw := range []bool{false, true} {
				ty := types[(i+j)%len(types)]
				pc := r.rng.IntN(3) != 0
				name := fmt.Sprintf("qlconv%d_dw%v_ys%g_pc%v_%v%v%v", i, dw, ysMul, pc, ty[0], ty[1], ty[2])
				cs = append(cs, r.qlconv(name, ty[0], ty[1], ty[2], dw, g.n, g.cin, g.h, g.w, g.cout, g.kh, g.kw, g.st, g.dl, g.pd, pc, r.rng.IntN(4) != 0, ysMul))
			}
		}
	}
	// extreme operands: x and w at the ends of their ranges
	for i := 0; i < 4; i++ {
		for _, dw := range []bool{false, true} {
			c := r.qlconv(fmt.Sprintf("qlextreme%d_dw%v", i, dw), graph.Int8, graph.Int8, graph.Int8, dw, 1, 40, 6, 5, 24, 3, 3, one, one, []int64{1, 1, 1, 1}, i%2 == 0, true, 300)
			c.consts["wz"] = zpTensor(graph.Int8, make([]int32, c.consts["wz"].Len()))
			if c.consts["wz"].Len() == 1 {
				c.consts["wz"] = graph.Scalar(int8(0))
			}
			x, w := graph.Data[int8](c.vals[0]), graph.Data[int8](c.consts["w"])
			for j := range x {
				x[j] = []int8{127, -128}[(j/(7-i))%2]
			}
			for j := range w {
				w[j] = []int8{-128, 127}[(j/(i+1))%2]
			}
			c.consts["xz"] = graph.Scalar(int8([]int{-128, 127, 0, -128}[i]))
			cs = append(cs, c)
		}
	}
	// QLinearConv then Clip (fused), the bounds inside, across and
	// outside the output range, and crossed
	for i := 0; i < 6; i++ {
		ty := types[i%len(types)]
		c := r.qlconv(fmt.Sprintf("qlconvclip%d_%v", i, ty[2]), ty[0], ty[1], ty[2], i%2 == 1, 1, 8, 9, 7, 8, 3, 3, one, one, []int64{1, 1, 1, 1}, true, true, 0.05)
		c.node.Outputs = []string{"c"}
		lo, hi := r.zpOf(ty[2], 1), r.zpOf(ty[2], 1)
		if i == 4 {
			lo = zpTensor(ty[2], []int32{-128})
		}
		c.consts["lo"], c.consts["hi"] = lo, hi
		in := []string{"c", "lo", "hi"}
		if i == 5 {
			in = []string{"c", "", "hi"}
		}
		c.extra = []*graph.Node{{Name: "clip", OpType: "Clip", Inputs: in, Outputs: []string{"y"}}}
		cs = append(cs, c)
	}
	// QLinearMatMul: a [.., M, K] by a constant b [K, N]
	for i, f := range []struct {
		a    []int
		n    int
		adt  graph.DType
		bdt  graph.DType
		ydt  graph.DType
		pcol bool
	}{{[]int{1, 1280}, 1000, graph.Int8, graph.Int8, graph.Int8, false}, {[]int{3, 17}, 5, graph.Uint8, graph.Uint8, graph.Uint8, true},
		{[]int{2, 9, 64}, 48, graph.Int8, graph.Int8, graph.Uint8, true}, {[]int{1, 3}, 1, graph.Uint8, graph.Int8, graph.Int8, false}, {[]int{26, 40}, 33, graph.Int8, graph.Uint8, graph.Int8, true}} {
		k := f.a[len(f.a)-1]
		c := r.qlconv("mm", f.adt, f.bdt, f.ydt, false, 1, k, 1, 1, f.n, 1, 1, one, one, pad0, f.pcol, false, []float64{1, 0.1, 30}[i%3])
		// w [N, K, 1, 1] as b [K, N]
		wb := bytesT(c.consts["w"])
		bb := make([]byte, len(wb))
		for nn := 0; nn < f.n; nn++ {
			for kk := 0; kk < k; kk++ {
				bb[kk*f.n+nn] = wb[nn*k+kk]
			}
		}
		c.consts["w"] = tensorOfBytes(f.bdt, []int{k, f.n}, bb)
		c.node = &graph.Node{Name: "mm", OpType: "QLinearMatMul", Inputs: []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, Outputs: []string{"y"}}
		c.name = fmt.Sprintf("qlmatmul%d_%v%v%v", i, f.adt, f.bdt, f.ydt)
		c.vals[0] = r.q8(f.adt, f.a...)
		cs = append(cs, c)
	}
	// the contrib ops, both types
	for i, shape := range [][]int{{1, 160, 7, 7}, {1, 3, 5, 3}, {2, 9, 33}} {
		for j, dt := range []graph.DType{graph.Int8, graph.Uint8, graph.Int8} {
			as, bs := r.scale(0.01, 0.2), r.scale(0.01, 0.2)
			ys := float32(float64(max(as, bs)) * []float64{1.5, 0.3, 8}[j])
			for _, op := range []string{"QLinearAdd", "QLinearMul"} {
				consts := map[string]*graph.Tensor{
					"as": graph.Scalar(as), "az": r.zpOf(dt, 1), "bs": graph.Scalar(bs), "bz": r.zpOf(dt, 1),
					"ys": graph.Scalar(ys), "yz": r.zpOf(dt, 1),
				}
				if op == "QLinearMul" {
					consts["ys"] = graph.Scalar(float32(float64(as*bs) * 128 * []float64{1, 0.1, 10}[j]))
				}
				nd := &graph.Node{Name: op, OpType: op, Domain: "com.microsoft", Inputs: []string{"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, Outputs: []string{"y"}}
				cs = append(cs, qlcase{name: fmt.Sprintf("%s%d_%d", op, i, j), node: nd, inputs: []string{"a", "b"}, vals: []*graph.Tensor{r.q8(dt, shape...), r.q8(dt, shape...)}, consts: consts})
			}
			consts := map[string]*graph.Tensor{"xs": graph.Scalar(as), "xz": r.zpOf(dt, 1), "ys": graph.Scalar(r.scale(0.002, 0.02)), "yz": r.zpOf(dt, 1)}
			for _, op := range []string{"QLinearSigmoid", "QLinearGlobalAveragePool"} {
				nd := &graph.Node{Name: op, OpType: op, Domain: "com.microsoft", Inputs: []string{"x", "xs", "xz", "ys", "yz"}, Outputs: []string{"y"}}
				if op == "QLinearGlobalAveragePool" && j == 2 {
					nd.Attrs = attrs("channels_last", 1)
				}
				cs = append(cs, qlcase{name: fmt.Sprintf("%s%d_%d", op, i, j), node: nd, inputs: []string{"x"}, vals: []*graph.Tensor{r.q8(dt, shape...)}, consts: consts})
			}
			lo, hi := r.zpOf(dt, 1), r.zpOf(dt, 1)
			nd := &graph.Node{Name: "clip", OpType: "Clip", Inputs: []string{"x", "lo", "hi"}, Outputs: []string{"y"}}
			cs = append(cs, qlcase{name: fmt.Sprintf("clip%d_%d", i, j), node: nd, inputs: []string{"x"}, vals: []*graph.Tensor{r.q8(dt, shape...)},
				consts: map[string]*graph.Tensor{"lo": lo, "hi": hi}})
		}
	}
	return cs
}

func bytesT(t *graph.Tensor) []byte {
	switch d := t.Data.(type) {
	case []uint8:
		return d
	case []int8:
		b := make([]byte, len(d))
		for i, v := range d {
			b[i] = byte(v)
		}
		return b
	}
	panic("not a byte tensor")
}

func tensorOfBytes(dt graph.DType, shape []int, b []byte) *graph.Tensor {
	if dt == graph.Uint8 {
		return graph.MustFromSlice(shape, b)
	}
	v := make([]int8, len(b))
	for i, x := range b {
		v[i] = int8(x)
	}
	return graph.MustFromSlice(shape, v)
}

// Every ONNX integer-op case is bit-identical to the reference kernels
// (the cpu backend), on every int8 kernel family the machine runs, at 1
// and 3 threads.
func TestQLinearAgainstReference(t *testing.T) {
	for _, kern := range native.QuantKernelFamilies() {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("kernel=%s/threads=%d", kern, threads), func(t *testing.T) {
				t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
				if got := native.QuantKernelName(); !strings.HasPrefix(got, kern) {
					t.Fatalf("forcing %q runs the tile kernel %q", kern, got)
				}
				nb := native.New(native.Options{Threads: threads})
				defer nb.Close()
				for _, c := range qlcases() {
					t.Run(c.name, func(t *testing.T) {
						sg := qlsubgraph(t, c)
						vs, err := nb.Supports(context.Background(), sg)
						if err != nil {
							t.Fatal(err)
						}
						for _, v := range vs {
							if !v.Supported {
								t.Fatalf("declined: %s", v.Reason)
							}
						}
						got, want := runOn(t, nb, sg, c.vals), runOn(t, cpu.New(), sg, c.vals)
						if !graph.SameShape(got.Shape, want.Shape) || got.DType != want.DType {
							t.Fatalf("%v%v, want %v%v", got.DType, got.Shape, want.DType, want.Shape)
						}
						gv, wv := bytesT(got), bytesT(want)
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

// Supports declines what the QLinear kernels do not do, saying why.
func TestQLinearDeclines(t *testing.T) {
	r := qgen{rand.New(rand.NewPCG(5, 6))}
	one, pad0 := []int64{1, 1}, []int64{0, 0, 0, 0}
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	cases := map[string]func() qlcase{
		"outside int8": func() qlcase {
			c := r.qlconv("wz", graph.Int8, graph.Int8, graph.Int8, false, 1, 8, 4, 4, 8, 1, 1, one, one, pad0, false, true, 1)
			c.consts["wz"] = graph.Scalar(int8(100))
			return c
		},
		"only group 1 or depthwise": func() qlcase {
			c := r.qlconv("g", graph.Int8, graph.Int8, graph.Int8, false, 1, 8, 4, 4, 8, 1, 1, one, one, pad0, false, true, 1)
			c.node.Attrs["group"] = &graph.Attribute{Name: "group", Type: graph.AttrInt, I: 2}
			c.consts["w"] = r.i8(8, 4, 1, 1)
			return c
		},
		"float16 scales not taken": func() qlcase {
			c := r.qlconv("f16", graph.Int8, graph.Int8, graph.Int8, false, 1, 8, 4, 4, 8, 1, 1, one, one, pad0, false, true, 1)
			c.consts["xs"] = graph.Scalar(graph.F16FromFloat32(0.05))
			return c
		},
		"only per tensor": func() qlcase {
			c := r.qlconv("px", graph.Int8, graph.Int8, graph.Int8, false, 1, 8, 4, 4, 8, 1, 1, one, one, pad0, false, true, 1)
			c.consts["xs"] = graph.MustFromSlice([]int{8}, []float32{1, 1, 1, 1, 1, 1, 1, 1})
			c.consts["xz"] = graph.MustFromSlice([]int{8}, make([]int8, 8))
			return c
		},
	}
	for want, mk := range cases {
		t.Run(want, func(t *testing.T) {
			c := mk()
			sg := qlsubgraph(t, c)
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
