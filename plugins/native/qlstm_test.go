package native_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// qlstmCase builds a one-node switchyard.quant LSTM subgraph: x, h0, c0
// are graph inputs, the weights, bias, weight scales and the scales and
// zero points of x and h constants.
func qlstmCase(t testing.TB, rng *rand.Rand, B, T, I, N int, timeMajor bool, clip float32) (*hal.Subgraph, []*graph.Tensor) {
	t.Helper()
	i8 := func(n int) []int8 {
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(rng.IntN(256) - 128)
		}
		return v
	}
	bias := make([]int32, 4*N)
	for i := range bias {
		bias[i] = int32(rng.IntN(8001) - 4000)
	}
	ws := make([]float32, 8)
	for i := range ws {
		ws[i] = 0.002 + 0.01*rng.Float32()
	}
	c0 := make([]int16, B*N)
	for i := range c0 {
		c0[i] = int16(rng.IntN(16001) - 8000)
	}
	consts := map[string]*graph.Tensor{
		"xs": graph.MustFromSlice([]int{}, []float32{0.0686}), "xz": graph.MustFromSlice([]int{}, []int8{-128}),
		"W": graph.MustFromSlice([]int{4, N, I}, i8(4*N*I)), "R": graph.MustFromSlice([]int{4, N, N}, i8(4*N*N)),
		"ws": graph.MustFromSlice([]int{8}, ws), "B": graph.MustFromSlice([]int{4, N}, bias),
		"hs": graph.MustFromSlice([]int{}, []float32{1.0 / 128}), "hz": graph.MustFromSlice([]int{}, []int8{3}),
	}
	attrs := map[string]*graph.Attribute{
		"cell_scale":        {Name: "cell_scale", Type: graph.AttrInt, I: -11},
		"hidden_scale":      {Name: "hidden_scale", Type: graph.AttrFloat, F: 1.0 / 128},
		"hidden_zero_point": {Name: "hidden_zero_point", Type: graph.AttrInt, I: 3},
		"cell_clip":         {Name: "cell_clip", Type: graph.AttrFloat, F: clip},
	}
	d0, d1 := B, T
	if timeMajor {
		d0, d1 = T, B
		attrs["time_major"] = &graph.Attribute{Name: "time_major", Type: graph.AttrInt, I: 1}
	}
	n := &graph.Node{Name: "lstm", Domain: "switchyard.quant", OpType: "LSTM",
		Inputs: []string{"x", "xs", "xz", "W", "R", "ws", "B", "h0", "hs", "hz", "c0"}, Outputs: []string{"y"}, Attrs: attrs}
	g := &graph.Graph{Name: "qlstm", Nodes: []*graph.Node{n}, Initializers: consts, Outputs: []graph.ValueInfo{{Name: "y"}},
		Inputs: []graph.ValueInfo{
			{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(d0, d1, I)}},
			{Name: "h0", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(B, N)}},
			{Name: "c0", Type: graph.ValueType{Kind: "tensor", DType: graph.Int16, Shape: graph.StaticShape(B, N)}},
		}}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "switchyard.quant", Version: 1}}}
	types, issues := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
	if len(issues) > 0 {
		t.Fatalf("inference: %v", issues)
	}
	g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: "y", Type: types["y"]})
	ins := []*graph.Tensor{graph.MustFromSlice([]int{d0, d1, I}, i8(B*T*I)), graph.MustFromSlice([]int{B, N}, i8(B*N)), graph.MustFromSlice([]int{B, N}, c0)}
	return sg, ins
}

// The integer LSTM on native (every int8 kernel family: the AVX2
// products and the portable Go ones) is bit-identical to the reference
// kernel: sizes not multiples of 16, several steps and sequences, both
// layouts, with and without the cell clip.
func TestQLSTMAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, kern := range native.QuantKernelFamilies() {
		t.Run(kern, func(t *testing.T) {
			t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
			nb := native.New(native.Options{})
			defer nb.Close()
			for _, c := range []struct {
				B, T, I, N int
				tm         bool
				clip       float32
			}{{1, 1, 257, 128, false, 0}, {2, 3, 37, 20, false, 0.5}, {3, 2, 16, 16, true, 0}, {1, 4, 5, 3, true, 1}} {
				t.Run(fmt.Sprintf("B%d_T%d_I%d_N%d_tm%v", c.B, c.T, c.I, c.N, c.tm), func(t *testing.T) {
					sg, ins := qlstmCase(t, rng, c.B, c.T, c.I, c.N, c.tm, c.clip)
					vs, err := nb.Supports(context.Background(), sg)
					if err != nil {
						t.Fatal(err)
					}
					if !vs[0].Supported {
						t.Fatalf("declined: %s", vs[0].Reason)
					}
					got, want := runOn(t, nb, sg, ins), runOn(t, cpu.New(), sg, ins)
					if !graph.SameShape(got.Shape, want.Shape) {
						t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
					}
					gv, wv := graph.Data[int8](got), graph.Data[int8](want)
					diff := 0
					for i := range wv {
						if gv[i] != wv[i] {
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

// Non-constant weights are declined, saying which input.
func TestQLSTMDeclinesRuntimeWeights(t *testing.T) {
	sg, _ := qlstmCase(t, rand.New(rand.NewPCG(1, 2)), 1, 1, 8, 4, false, 0)
	w := sg.Graph.Initializers["W"]
	delete(sg.Graph.Initializers, "W")
	sg.Graph.Inputs = append(sg.Graph.Inputs, graph.ValueInfo{Name: "W", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(w.Shape...)}})
	nb := native.New(native.Options{})
	defer nb.Close()
	vs, err := nb.Supports(context.Background(), sg)
	if err != nil {
		t.Fatal(err)
	}
	if vs[0].Supported || vs[0].Reason != `native: LSTM input 3 (W) is not a constant` {
		t.Fatalf("verdict %+v", vs[0])
	}
}

// BenchmarkQLSTM: one step of a DTLN-sized integer LSTM (257 inputs, 128
// units) on native and on the reference kernel.
func BenchmarkQLSTM(b *testing.B) {
	sg, ins := qlstmCase(b, rand.New(rand.NewPCG(5, 6)), 1, 1, 257, 128, false, 0)
	for _, be := range []struct {
		name string
		b    hal.Backend
	}{{"native", native.New(native.Options{Threads: 1})}, {"cpu", cpu.New()}} {
		b.Run(be.name, func(b *testing.B) {
			e, err := be.b.Compile(context.Background(), sg, hal.CompileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Release()
			for i := 0; i < b.N; i++ {
				out := []*graph.Tensor{{}}
				if err := e.Execute(context.Background(), ins, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The integer LSTM is priced by its products on both backends: a
// DTLN-sized step at about its measured CPU time (≈290 µs on the
// reference kernel, ≈14 µs here with AVX2, at one thread), so placement
// sends it here, and not at a few hundred ns per output element as
// before.
func TestQLSTMPriced(t *testing.T) {
	sg, _ := qlstmCase(t, rand.New(rand.NewPCG(5, 6)), 1, 1, 257, 128, false, 0)
	ctx := context.Background()
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	nc, err := nb.EstimateCost(ctx, sg)
	if err != nil {
		t.Fatal(err)
	}
	cc := cpu.Estimate(sg, 1)
	t.Logf("native %v, cpu %v", nc.Latency, cc.Latency)
	if cc.Latency < 150*time.Microsecond || cc.Latency > 600*time.Microsecond {
		t.Errorf("cpu estimate %v, measured ≈290 µs", cc.Latency)
	}
	ratio := time.Duration(5) // the AVX2 products
	if strings.HasPrefix(native.QuantKernelName(), "generic") {
		ratio = 1 // the portable ones: about 1.7× faster than the reference kernel
	}
	if nc.Latency > 250*time.Microsecond || nc.Latency*ratio > cc.Latency {
		t.Errorf("native estimate %v against cpu's %v", nc.Latency, cc.Latency)
	}
}

// The DTLN noise suppressor (two integer LSTMs, a FullyConnected, a
// Logistic): the cost model places its LSTMs on native (on amd64 the
// whole model), and it gives the reference kernels' outputs bit for bit
// on eight random frames, on every int8 kernel family.
func TestDTLNOnNative(t *testing.T) {
	path := shared.Path(t, "testdata/tflite/dtln_noise_suppression.tflite")
	ctx := context.Background()
	for _, kern := range native.QuantKernelFamilies() {
		t.Run(kern, func(t *testing.T) {
			t.Setenv("SWITCHYARD_NATIVE_QKERNEL", kern)
			dev := device(t, native.Options{Threads: 1})
			mn, err := runtime.Load(ctx, path, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer mn.Close()
			for _, np := range mn.Plan().Nodes {
				if np.OpType == "LSTM" && np.Backend != native.Name {
					t.Fatalf("%s placed on %s", np.Name, np.Backend)
				}
			}
			mc, err := runtime.Load(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer mc.Close()
			rng := rand.New(rand.NewPCG(9, 10))
			for frame := 0; frame < 8; frame++ {
				x := make([]int8, 257)
				for i := range x {
					x[i] = int8(rng.IntN(256) - 128)
				}
				feeds := map[string]*graph.Tensor{mn.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1, 257}, x)}
				got, err := mn.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				want, err := mc.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameInt8(got, want); err != nil {
					t.Fatalf("frame %d: %v", frame, err)
				}
			}
		})
	}
}

func sameInt8(a, b map[string]*graph.Tensor) error {
	for k, x := range b {
		y := a[k]
		if y == nil || !graph.SameShape(x.Shape, y.Shape) {
			return fmt.Errorf("output %s: %v vs %v", k, y, x)
		}
		xv, yv := graph.Data[int8](x), graph.Data[int8](y)
		for i := range xv {
			if xv[i] != yv[i] {
				return fmt.Errorf("output %s element %d: %d, want %d", k, i, yv[i], xv[i])
			}
		}
	}
	return nil
}
