package xnnpack_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

// int8 cases: switchyard.quant graphs run on xnnpack (opted in) against the
// cpu backend's reference kernels (bit-exact with TFLite); XNNPACK
// requantises in fp32, so each output may differ by one step per op.

type qCase struct {
	name    string
	inputs  map[string][]int // dynamic int8 inputs
	consts  map[string]*graph.Tensor
	nodes   []*graph.Node
	outputs []string
	steps   int // allowed difference in quantisation steps (ops in a chain)
}

func qnode(op string, in, out []string, attrs ...*graph.Attribute) *graph.Node {
	n := node(op, in, out, attrs...)
	n.Domain = "switchyard.quant"
	return n
}

func randI8(rng *rand.Rand, lo, hi int, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]int8, n)
	for i := range d {
		d[i] = int8(lo + rng.IntN(hi-lo+1))
	}
	return graph.MustFromSlice(shape, d)
}

func f32s(v ...float32) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
func i8s(v ...int8) *graph.Tensor     { return graph.MustFromSlice([]int{len(v)}, v) }

func randBias(rng *rand.Rand, n, spread int) *graph.Tensor {
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(rng.IntN(2*spread+1) - spread)
	}
	return graph.MustFromSlice([]int{n}, d)
}

func qmodel(c qCase, feeds map[string]*graph.Tensor) *graph.Model {
	g := &graph.Graph{Name: c.name, Initializers: map[string]*graph.Tensor{}, Nodes: c.nodes}
	for name, shape := range c.inputs {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(shape...)}})
	}
	for name, v := range c.consts {
		g.Initializers[name] = v
	}
	for _, o := range c.outputs {
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: o})
	}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}, {Domain: "switchyard.quant", Version: 1}}, Graph: g}
}

func (c qCase) feeds(rng *rand.Rand) map[string]*graph.Tensor {
	f := map[string]*graph.Tensor{}
	for name, shape := range c.inputs {
		f[name] = randI8(rng, -128, 127, shape...)
	}
	return f
}

func (c qCase) run(t *testing.T, dev *hal.Device, rng *rand.Rand) {
	t.Helper()
	feeds := c.feeds(rng)
	ctx := context.Background()
	ref, err := runtime.Prepare(ctx, qmodel(c, feeds), nil)
	if err != nil {
		t.Fatalf("cpu prepare: %v", err)
	}
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatalf("cpu run: %v", err)
	}
	m, err := runtime.Prepare(ctx, qmodel(c, feeds), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatalf("xnnpack prepare: %v", err)
	}
	defer m.Close()
	if got := m.Plan().Summary()[xnnpack.Name]; got != len(c.nodes) {
		t.Fatalf("%d of %d nodes on xnnpack:\n%s", got, len(c.nodes), m.Plan().Text())
	}
	if text := m.Plan().Text(); !strings.Contains(text, string(xnnpack.PrecisionInt8)) {
		t.Fatalf("the placement report does not say the int8 results are approximate:\n%s", text)
	}
	steps := max(c.steps, 1)
	for rep := 0; rep < 2; rep++ {
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("xnnpack run: %v", err)
		}
		for _, o := range c.outputs {
			g, w := got[o], want[o]
			if g.DType != graph.Int8 || !graph.SameShape(g.Shape, w.Shape) {
				t.Fatalf("output %s: got %v%v, want %v%v", o, g.DType, g.Shape, w.DType, w.Shape)
			}
			gd, wd := graph.Data[int8](g), graph.Data[int8](w)
			differ, worst, distinct := 0, 0, map[int8]bool{}
			for i := range gd {
				distinct[wd[i]] = true
				d := int(math.Abs(float64(int(gd[i]) - int(wd[i]))))
				if d > 0 {
					differ++
				}
				worst = max(worst, d)
			}
			if worst > steps {
				t.Fatalf("output %s: %d of %d values differ, by up to %d steps (allowed %d)", o, differ, len(gd), worst, steps)
			}
			if len(distinct) < 8 {
				t.Fatalf("output %s: only %d distinct reference values; the case saturates and tests little", o, len(distinct))
			}
			if rep == 0 {
				t.Logf("%s: %d of %d int8 values differ from the reference (≤ %d step)", o, differ, len(gd), worst)
			}
		}
	}
}

// requantScale picks an output scale so an accumulator of k products of
// random int8 values lands mostly inside int8.
func requantScale(xs, ws float32, k int) float32 {
	return xs * ws * float32(math.Sqrt(float64(k))) * 73 * 73 / 40
}

func perChannel(rng *rand.Rand, n int, base float32) *graph.Tensor {
	d := make([]float32, n)
	for i := range d {
		d[i] = base * (0.5 + rng.Float32())
	}
	return graph.MustFromSlice([]int{n}, d)
}

func TestInt8OpsAgainstReference(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1, Int8: true})
	rng := rand.New(rand.NewPCG(3, 4))
	xs, xz := float32(0.05), int8(-3)
	convIn := []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}
	base := func(extra map[string]*graph.Tensor) map[string]*graph.Tensor {
		m := map[string]*graph.Tensor{"xs": f32s(xs), "xz": i8s(xz)}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	zeros := func(n int) *graph.Tensor { return graph.MustFromSlice([]int{n}, make([]int8, n)) }
	cases := []qCase{
		{name: "conv_per_channel_relu6", inputs: map[string][]int{"x": {2, 9, 11, 6}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 8, 3, 3, 6), "ws": perChannel(rng, 8, 0.01), "wz": zeros(8),
				"ys": f32s(requantScale(xs, 0.01, 54) / 4), "yz": i8s(-100), "b": randBias(rng, 8, 20000)}),
			nodes: []*graph.Node{qnode("Conv2D", convIn, []string{"y"}, ints("pads", 1, 0, 2, 1), ints("strides", 2, 1), sattr("activation", "RELU6"), sattr("rounding", "half_up"))}},
		{name: "conv_per_tensor_dilated_nobias", inputs: map[string][]int{"x": {1, 10, 12, 5}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 4, 3, 2, 5), "ws": f32s(0.02), "wz": i8s(0),
				"ys": f32s(requantScale(xs, 0.02, 30)), "yz": i8s(7)}),
			nodes: []*graph.Node{qnode("Conv2D", convIn[:8], []string{"y"}, ints("dilations", 2, 3))}},
		{name: "conv_groups_relu", inputs: map[string][]int{"x": {1, 7, 7, 6}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 4, 3, 3, 3), "ws": perChannel(rng, 4, 0.01), "wz": zeros(4),
				"ys": f32s(requantScale(xs, 0.01, 27)), "yz": i8s(-20), "b": randBias(rng, 4, 5000)}),
			nodes: []*graph.Node{qnode("Conv2D", convIn, []string{"y"}, ints("pads", 1, 1, 1, 1), sattr("activation", "RELU"))}},
		{name: "depthwise_multiplier2", inputs: map[string][]int{"x": {1, 9, 8, 3}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 1, 3, 3, 6), "ws": perChannel(rng, 6, 0.01), "wz": zeros(6),
				"ys": f32s(requantScale(xs, 0.01, 9)), "yz": i8s(3), "b": randBias(rng, 6, 3000)}),
			nodes: []*graph.Node{qnode("DepthwiseConv2D", convIn, []string{"y"}, ints("pads", 1, 1, 1, 1), ints("strides", 2, 2), sattr("activation", "RELU"))}},
		{name: "fully_connected", inputs: map[string][]int{"x": {3, 40}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 10, 40), "ws": f32s(0.015), "wz": i8s(0),
				"ys": f32s(requantScale(xs, 0.015, 40)), "yz": i8s(-1), "b": randBias(rng, 10, 10000)}),
			nodes: []*graph.Node{qnode("FullyConnected", convIn, []string{"y"})}},
		{name: "add_broadcast_relu", inputs: map[string][]int{"x": {2, 5, 6, 4}, "b": {6, 4}},
			consts: base(map[string]*graph.Tensor{"bs": f32s(0.08), "bz": i8s(10), "ys": f32s(0.11), "yz": i8s(-7)}),
			nodes:  []*graph.Node{qnode("Add", []string{"x", "xs", "xz", "b", "bs", "bz", "ys", "yz"}, []string{"y"}, sattr("activation", "RELU"))}},
		{name: "mean_hw", inputs: map[string][]int{"x": {2, 7, 5, 16}},
			consts: base(map[string]*graph.Tensor{"ys": f32s(0.01), "yz": i8s(2)}),
			nodes: []*graph.Node{
				qnode("Mean", []string{"x", "xs", "xz", "ys", "yz"}, []string{"a"}, ints("axes", 1, 2), iattr("keepdims", 1)),
				qnode("Mean", []string{"x", "xs", "xz", "ys", "yz"}, []string{"c"}, ints("axes", 1, 2))},
			outputs: []string{"a", "c"}},
		{name: "conv_reshape_fc", inputs: map[string][]int{"x": {1, 4, 4, 8}}, steps: 2,
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 8, 1, 1, 8), "ws": perChannel(rng, 8, 0.01), "wz": zeros(8),
				"ys": f32s(requantScale(xs, 0.01, 8)), "yz": i8s(0), "b": randBias(rng, 8, 2000),
				"fs": f32s(requantScale(xs, 0.01, 8)), "fz": i8s(0), "fw": randI8(rng, -127, 127, 12, 128), "fws": f32s(0.01),
				"fys": f32s(requantScale(requantScale(xs, 0.01, 8), 0.01, 128)), "fyz": i8s(4), "shape": i64(1, 128)}),
			nodes: []*graph.Node{
				qnode("Conv2D", convIn, []string{"c"}),
				node("Reshape", []string{"c", "shape"}, []string{"r"}),
				qnode("FullyConnected", []string{"r", "fs", "fz", "fw", "fws", "wz0", "fys", "fyz"}, []string{"y"})}},
		{name: "reshape_then_fc", inputs: map[string][]int{"x": {4, 2, 2, 8}},
			consts: base(map[string]*graph.Tensor{"w": randI8(rng, -127, 127, 5, 32), "ws": f32s(0.01), "wz": i8s(0),
				"ys": f32s(requantScale(xs, 0.01, 32)), "yz": i8s(1), "shape": i64(4, 32)}),
			nodes: []*graph.Node{
				node("Reshape", []string{"x", "shape"}, []string{"r"}),
				qnode("FullyConnected", []string{"r", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, []string{"y"})}},
		{name: "logistic", inputs: map[string][]int{"x": {3, 50}},
			consts: base(map[string]*graph.Tensor{"ys": f32s(1.0 / 256), "yz": i8s(-128)}),
			nodes:  []*graph.Node{qnode("Logistic", []string{"x", "xs", "xz", "ys", "yz"}, []string{"y"})}},
		{name: "reshape_alone", inputs: map[string][]int{"x": {2, 3, 4}}, steps: 0,
			consts: map[string]*graph.Tensor{"shape": i64(6, 4)},
			nodes:  []*graph.Node{node("Reshape", []string{"x", "shape"}, []string{"y"})}},
	}
	cases[7].consts["wz0"] = i8s(0)
	for _, c := range cases {
		if c.outputs == nil {
			c.outputs = []string{"y"}
		}
		t.Run(c.name, func(t *testing.T) { c.run(t, dev, rng) })
	}
}

// Declines: each case stays on cpu, with the reason in the report.
func TestInt8Declines(t *testing.T) {
	device(t, xnnpack.Options{Threads: 1}) // skip or fail early, with the reason
	rng := rand.New(rand.NewPCG(5, 6))
	w := randI8(rng, -127, 127, 4, 3, 3, 2)
	conv := func(wz *graph.Tensor, attrs ...*graph.Attribute) qCase {
		return qCase{name: "conv", inputs: map[string][]int{"x": {1, 6, 6, 2}},
			consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "w": w, "ws": f32s(0.01), "wz": wz, "ys": f32s(0.05), "yz": i8s(0)},
			nodes:  []*graph.Node{qnode("Conv2D", []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, []string{"y"}, attrs...)}, outputs: []string{"y"}}
	}
	fc := qCase{name: "fc", inputs: map[string][]int{"x": {2, 6}},
		consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "w": randI8(rng, -127, 127, 3, 6), "ws": f32s(0.01, 0.02, 0.03), "wz": i8s(0, 0, 0), "ys": f32s(0.05), "yz": i8s(0)},
		nodes:  []*graph.Node{qnode("FullyConnected", []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, []string{"y"})}, outputs: []string{"y"}}
	softmax := qCase{name: "softmax", inputs: map[string][]int{"x": {2, 6}},
		consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "ys": f32s(1.0 / 256), "yz": i8s(-128)},
		nodes:  []*graph.Node{qnode("Softmax", []string{"x", "xs", "xz", "ys", "yz"}, []string{"y"})}, outputs: []string{"y"}}
	logistic := qCase{name: "logistic_scale", inputs: map[string][]int{"x": {2, 6}},
		consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "ys": f32s(1.0 / 128), "yz": i8s(-128)},
		nodes:  []*graph.Node{qnode("Logistic", []string{"x", "xs", "xz", "ys", "yz"}, []string{"y"})}, outputs: []string{"y"}}
	mean := qCase{name: "mean_c", inputs: map[string][]int{"x": {1, 3, 3, 4}},
		consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "ys": f32s(0.05), "yz": i8s(0)},
		nodes:  []*graph.Node{qnode("Mean", []string{"x", "xs", "xz", "ys", "yz"}, []string{"y"}, ints("axes", 3))}, outputs: []string{"y"}}
	for _, tc := range []struct {
		c      qCase
		optIn  bool
		reason string
		noRun  bool // the reference refuses it too
	}{
		{conv(i8s(0)), false, "int8 is opt-in on xnnpack", false},
		{conv(i8s(3)), true, "weight zero point 3: XNNPACK takes symmetric weights only", false},
		{conv(i8s(0), sattr("rounding", "even")), true, `rounding "even" is not mapped`, true},
		{conv(i8s(0), sattr("activation", "TANH")), true, `activation "TANH" is not mapped`, true},
		{fc, true, "per-channel FullyConnected weights are not mapped", false},
		{softmax, true, "switchyard.quant Softmax is not mapped to XNNPACK", false},
		{logistic, true, "XNNPACK's int8 sigmoid takes scale 1/256, zero point -128 only", false},
		{mean, true, "only H and W of NHWC (global average pooling) is mapped", false},
	} {
		t.Run(tc.c.name, func(t *testing.T) {
			dev := device(t, xnnpack.Options{Threads: 1, Int8: tc.optIn})
			ctx := context.Background()
			feeds := tc.c.feeds(rng)
			m, err := runtime.Prepare(ctx, qmodel(tc.c, feeds), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			defer m.Close()
			text := m.Plan().Text()
			if m.Plan().Summary()[xnnpack.Name] != 0 || !strings.Contains(text, tc.reason) {
				t.Fatalf("want the node declined with %q:\n%s", tc.reason, text)
			}
			if _, err := m.Run(ctx, feeds); err != nil && !tc.noRun {
				t.Fatalf("run on cpu: %v", err)
			}
		})
	}
}

// Concurrent runs of one int8 executable give the same results, and
// closing the device under a live executable fails later runs cleanly.
func TestInt8ConcurrentAndClose(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1, Int8: true})
	rng := rand.New(rand.NewPCG(7, 8))
	c := qCase{name: "conv", inputs: map[string][]int{"x": {1, 8, 8, 4}},
		consts: map[string]*graph.Tensor{"xs": f32s(0.05), "xz": i8s(0), "w": randI8(rng, -127, 127, 6, 3, 3, 4), "ws": f32s(0.01), "wz": i8s(0), "ys": f32s(requantScale(0.05, 0.01, 36)), "yz": i8s(0)},
		nodes:  []*graph.Node{qnode("Conv2D", []string{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, []string{"y"})}, outputs: []string{"y"}}
	ctx := context.Background()
	feeds := c.feeds(rng)
	m, err := runtime.Prepare(ctx, qmodel(c, feeds), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	first, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	want := graph.Data[int8](first["y"])
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				got, err := m.Run(ctx, feeds)
				if err != nil {
					errs <- err
					return
				}
				for k, v := range graph.Data[int8](got["y"]) {
					if v != want[k] {
						errs <- fmt.Errorf("concurrent run: value %d is %d, want %d", k, v, want[k])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, feeds); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("run after Close: %v, want a device-closed error", err)
	}
}
