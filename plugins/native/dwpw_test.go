package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// dwpwModel is a depthwise 3×3 Conv (stride s) followed by act1, a 1×1
// Conv of c→m channels, act2 and, with res, a residual Add of the input r.
// act is "", "Relu", "Clip" or "SiLU" (Sigmoid and Mul).
func dwpwModel(rng *rand.Rand, c, m, h, w, s int, act1, act2 string, res bool, bias bool) (*graph.Model, []int) {
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	rnd := func(dims ...int) *graph.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return graph.MustFromSlice(dims, v)
	}
	oh, ow := (h+2-3)/s+1, (w+2-3)/s+1
	g := &graph.Graph{
		Inputs:       []graph.ValueInfo{{Name: "x", Type: f32(1, c, h, w)}},
		Initializers: map[string]*graph.Tensor{"wd": rnd(c, 1, 3, 3), "wp": rnd(m, c, 1, 1), "lo": graph.MustFromSlice([]int{}, []float32{-0.5}), "hi": graph.MustFromSlice([]int{}, []float32{0.7})},
	}
	dwIn := []string{"x", "wd"}
	pwIn := []string{"", "wp"}
	if bias {
		g.Initializers["bd"], g.Initializers["bp"] = rnd(c), rnd(m)
		dwIn, pwIn = append(dwIn, "bd"), append(pwIn, "bp")
	}
	k := 0
	add := func(op string, in []string, attrs map[string]*graph.Attribute) string {
		k++
		out := fmt.Sprintf("v%d", k)
		g.Nodes = append(g.Nodes, &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
		return out
	}
	ints := func(name string, v ...int64) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
	}
	act := func(a, v string) string {
		switch a {
		case "Relu":
			return add("Relu", []string{v}, nil)
		case "Clip":
			return add("Clip", []string{v, "lo", "hi"}, nil)
		case "SiLU":
			return add("Mul", []string{v, add("Sigmoid", []string{v}, nil)}, nil)
		}
		return v
	}
	v := add("Conv", dwIn, map[string]*graph.Attribute{"group": {Name: "group", Type: graph.AttrInt, I: int64(c)},
		"kernel_shape": ints("kernel_shape", 3, 3), "pads": ints("pads", 1, 1, 1, 1), "strides": ints("strides", int64(s), int64(s))})
	v = act(act1, v)
	pwIn[0] = v
	v = act(act2, add("Conv", pwIn, map[string]*graph.Attribute{"kernel_shape": ints("kernel_shape", 1, 1)}))
	if res {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "r", Type: f32(1, m, oh, ow)})
		v = add("Add", []string{v, "r"}, nil)
	}
	g.Outputs = []graph.ValueInfo{{Name: v, Type: f32(1, m, oh, ow)}}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}, []int{1, m, oh, ow}
}

// A depthwise 3×3 Conv and the 1×1 Conv after it run as one node
// (dwpw.go) that computes what the two compute apart: strides 1 and 2,
// with and without biases, clamps, SiLU chains on either side and a
// residual Add after the 1×1, planes whose strips end in partial panels,
// at 1 and 2 threads.
func TestDWPWFusion(t *testing.T) {
	if dw3Kernels == nil {
		t.Skip("no 3×3 depthwise row kernels on this CPU")
	}
	defer func(v int) { dwpwMinBytes = v }(dwpwMinBytes)
	dwpwMinBytes = 0
	rng := rand.New(rand.NewPCG(3, 9))
	for _, c := range []struct {
		c, m, h, w, s int
		act1, act2    string
		res, bias     bool
	}{
		{16, 32, 40, 52, 1, "Relu", "Relu", false, true},
		{16, 32, 41, 50, 2, "Relu", "", false, true},
		{8, 12, 23, 37, 1, "SiLU", "SiLU", true, true},
		{12, 24, 30, 44, 2, "SiLU", "SiLU", false, false},
		{32, 6, 30, 40, 1, "Clip", "", false, true},
		{3, 17, 64, 70, 1, "", "Clip", true, false},
		{64, 64, 9, 300, 1, "Relu", "Relu", false, true},
	} {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%dto%d_%dx%d_s%d_%s_%s_res%v_bias%v_t%d", c.c, c.m, c.h, c.w, c.s, c.act1, c.act2, c.res, c.bias, threads)
			t.Run(name, func(t *testing.T) {
				m, _ := dwpwModel(rng, c.c, c.m, c.h, c.w, c.s, c.act1, c.act2, c.res, c.bias)
				feeds := map[string]*graph.Tensor{}
				for _, in := range m.Graph.Inputs {
					dims, _ := in.Type.Shape.Ints()
					n := 1
					for _, d := range dims {
						n *= d
					}
					v := make([]float32, n)
					for i := range v {
						v[i] = rng.Float32()*4 - 2
					}
					feeds[in.Name] = graph.MustFromSlice(dims, v)
				}
				var outs [2]*graph.Tensor
				for i, noFuse := range []bool{true, false} {
					b := New(Options{Threads: threads})
					b.noFuse = noFuse
					dev, err := hal.NewDevice(b, hal.LoadLinked)
					if err != nil {
						t.Fatal(err)
					}
					defer dev.Close()
					if !noFuse {
						tg := *m.Graph
						types, _ := runtime.InferTypes(m)
						for _, n := range tg.Nodes {
							for _, o := range n.Outputs {
								tg.ValueInfo = append(tg.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
							}
						}
						sg := &hal.Subgraph{Graph: &tg, Opsets: m.Opsets}
						fg, fused := fuse(sg)
						pairs := 0
						for _, n := range fg.Nodes {
							if f := fused[n]; f != nil && f.pw != nil {
								pairs++
							}
						}
						if pairs != 1 || len(fg.Nodes) != 1 {
							t.Fatalf("fused graph has %d nodes, %d depthwise+1×1 pairs: want one node", len(fg.Nodes), pairs)
						}
					}
					rm, err := runtime.Prepare(context.Background(), m, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
					if err != nil {
						t.Fatal(err)
					}
					defer rm.Close()
					for range 2 { // the second run on recycled buffers
						got, err := rm.Run(context.Background(), feeds)
						if err != nil {
							t.Fatal(err)
						}
						outs[i] = got[m.Graph.Outputs[0].Name]
					}
				}
				if err := sameOutput(outs[1], outs[0]); err != nil {
					t.Fatalf("fused differs from the two nodes apart: %v", err)
				}
			})
		}
	}
}

// typedSubgraph is m's graph with every value's inferred type, as the
// runtime hands a partition to a backend.
func typedSubgraph(m *graph.Model) *hal.Subgraph {
	tg := *m.Graph
	types, _ := runtime.InferTypes(m)
	for _, n := range tg.Nodes {
		for _, o := range n.Outputs {
			tg.ValueInfo = append(tg.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
		}
	}
	return &hal.Subgraph{Graph: &tg, Opsets: m.Opsets}
}

// benchClock is the thread's CPU time in ns where the clock gives it (the
// caller locked to its thread: at one thread, a run without the time
// other processes held the core), else wall time.
func benchClock() int64 {
	if t := threadClock(); t > 0 {
		return t
	}
	return time.Now().UnixNano()
}

// BenchmarkDWPW times the fused pair against the two nodes apart on
// UltraFace's and YOLOX-nano's large pairs at one thread, alternating
// the two in rounds of 20 runs (the machine is shared; benchClock), and reports each
// one's median of the rounds' least runs and their ratio (fused/apart).
func BenchmarkDWPW(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		c, m, h, w, s int
		act           string
	}{
		{16, 32, 120, 160, 1, "Relu"}, // UltraFace 249→252
		{32, 32, 120, 160, 2, "Relu"}, // UltraFace 255→258
		{32, 32, 60, 80, 1, "Relu"},   // UltraFace 261→264
		{64, 64, 30, 40, 1, "Relu"},   // UltraFace 273→276
		{128, 128, 15, 20, 1, "Relu"}, // UltraFace 350→353 (below dwpwMinBytes)
		{64, 128, 30, 40, 2, "Relu"},  // UltraFace 344→347 (below dwpwMinBytes)
		{16, 32, 208, 208, 2, "SiLU"}, // YOLOX 1180→1183
		{32, 32, 104, 104, 1, "SiLU"}, // YOLOX-like
	} {
		name := fmt.Sprintf("%dto%d_%dx%d_s%d_%s", c.c, c.m, c.h, c.w, c.s, c.act)
		b.Run(name, func(b *testing.B) {
			m, out := dwpwModel(rng, c.c, c.m, c.h, c.w, c.s, c.act, c.act, false, true)
			sg := typedSubgraph(m)
			x := make([]float32, c.c*c.h*c.w)
			for i := range x {
				x[i] = rng.Float32()*2 - 1
			}
			in := []*graph.Tensor{graph.MustFromSlice([]int{1, c.c, c.h, c.w}, x)}
			if v := os.Getenv("DWPW_STRIP"); v != "" {
				defer func(v int) { dwpwStripFloats = v }(dwpwStripFloats)
				fmt.Sscan(v, &dwpwStripFloats)
			}
			defer func(v int) { dwpwMinBytes = v }(dwpwMinBytes)
			dwpwMinBytes = 0
			var exes [2]hal.Executable
			for i, on := range []bool{false, true} {
				useDWPW = on
				nb := New(Options{Threads: 1})
				defer nb.Close()
				e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				exes[i] = e
			}
			useDWPW = true
			goruntime.LockOSThread()
			defer goruntime.UnlockOSThread()
			n := 1
			for _, d := range out {
				n *= d
			}
			y := graph.MustFromSlice(out, make([]float32, n))
			var mins [2][]float64
			for b.Loop() {
				for i, e := range exes {
					best := 1e18
					for range 20 {
						t0 := benchClock()
						if err := e.Execute(context.Background(), in, []*graph.Tensor{y}); err != nil {
							b.Fatal(err)
						}
						best = min(best, float64(benchClock()-t0)/1e3)
					}
					mins[i] = append(mins[i], best)
				}
			}
			med := func(v []float64) float64 { v = append([]float64{}, v...); sort.Float64s(v); return v[len(v)/2] }
			b.ReportMetric(med(mins[0]), "apart-µs")
			b.ReportMetric(med(mins[1]), "fused-µs")
			b.ReportMetric(med(mins[1])/med(mins[0]), "ratio")
		})
	}
}

// BenchmarkDWPWZoo compiles whole zoo models on native with and without
// the depthwise+1×1 fusion and times them alternating, in rounds of 5
// runs (the machine is shared; benchClock): each one's median of the rounds' least runs and the ratio
// fused/apart. DWPW_MODELS picks the models.
func BenchmarkDWPWZoo(b *testing.B) {
	models := []string{"ultraface_rfb_320", "yolox_nano"}
	if s := os.Getenv("DWPW_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	root := shared.Path(b, "testdata/zoo")
	for _, name := range models {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(root, name)
			ir, err := formats.LoadFile(filepath.Join(dir, "model.onnx"), formats.Options{})
			if err != nil {
				b.Fatal(err)
			}
			sg := typedSubgraph(ir)
			ts, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil || len(ts) != len(sg.Graph.Inputs) {
				b.Fatalf("test inputs: %v", err)
			}
			var exes [2]hal.Executable
			for i, on := range []bool{false, true} {
				useDWPW = on
				nb := New(Options{Threads: 1})
				defer nb.Close()
				e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				exes[i] = e
			}
			useDWPW = true
			// CPU time of the thread where the clock has it (at one
			// thread: the run without the time other processes held
			// the core), else wall time
			apart, fused := benchAB(b, exes, ts, len(sg.Graph.Outputs), benchClock)
			b.ReportMetric(apart, "apart-µs")
			b.ReportMetric(fused, "fused-µs")
			b.ReportMetric(fused/apart, "ratio")
		})
	}
}

// benchAB runs the two executables in turn for as long as b loops, five
// runs each a round on the thread it locks, and returns each one's median
// of the rounds' least run in µs (clock: ns).
func benchAB(b *testing.B, exes [2]hal.Executable, ts []*graph.Tensor, nout int, clock func() int64) (a, c float64) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var mins [2][]float64
	for b.Loop() {
		for i, e := range exes {
			best := 1e18
			for range 5 {
				outs := make([]*graph.Tensor, nout)
				for j := range outs {
					outs[j] = &graph.Tensor{}
				}
				t0 := clock()
				if err := e.Execute(context.Background(), ts, outs); err != nil {
					b.Fatal(err)
				}
				best = min(best, float64(clock()-t0)/1e3)
			}
			mins[i] = append(mins[i], best)
		}
	}
	med := func(v []float64) float64 { v = append([]float64{}, v...); sort.Float64s(v); return v[len(v)/2] }
	return med(mins[0]), med(mins[1])
}
