package cabi

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

func exampleLib2(t testing.TB) string {
	return buildC(t, "libswitchyard_example2.so", "example/example_delegate.c", "SY_EXAMPLE_DEVICES=2")
}

// namedMulRelu is mulRelu with named nodes, so profiles name them.
func namedMulRelu() *hal.Subgraph {
	sg := mulRelu()
	sg.Graph.Nodes[0].Name, sg.Graph.Nodes[1].Name = "scale", "clip"
	return sg
}

// Capabilities.Devices crosses from the library: every field of each
// device, in index order; a compile for device 1 runs there (its buffers
// and profile say so) and device 2 of 2 is refused before the library is
// asked.
func TestDevicesRoundTrip(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib2(t))
	ds, err := dev.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 {
		t.Fatalf("%d devices, want 2: %+v", len(ds), ds)
	}
	for i, d := range ds {
		name := "example-cpu" + string(rune('0'+i))
		want := hal.DeviceDesc{Index: i, Name: name, Kind: hal.DeviceCPU, MemoryBytes: 1 << 34, MaxBufferBytes: 1 << 32,
			MemoryKinds: []hal.MemoryKind{hal.MemoryHost, hal.MemoryDeviceLocal},
			Precisions:  []hal.Precision{hal.PrecisionFloat32, hal.PrecisionFloat16, hal.PrecisionBFloat16},
			CacheKey:    hal.CacheKey{Vendor: "Switchyard SDK example", Device: name, Driver: "1.1.0"}}
		if d.Index != want.Index || d.Name != want.Name || d.Kind != want.Kind || d.MemoryBytes != want.MemoryBytes || d.MaxBufferBytes != want.MaxBufferBytes ||
			d.CacheKey != want.CacheKey || len(d.MemoryKinds) != 2 || d.MemoryKinds[1] != hal.MemoryDeviceLocal || len(d.Precisions) != 3 || d.Precisions[2] != hal.PrecisionBFloat16 {
			t.Errorf("device %d: got %+v, want %+v", i, d, want)
		}
	}
	exe, err := dev.Compile(ctx, namedMulRelu(), &hal.CompileOptions{Device: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	x := graph.MustFromSlice([]int{1, 3}, []float32{1, 1, 1})
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1, 3}, Memory: hal.MemoryDeviceLocal, Device: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	if _, err := dev.Upload(ctx, in, x, nil); err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	f, err := exe.Enqueue(ctx, []hal.Buffer{in}, outs, nil, &hal.EnqueueOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(outs[0])
	if outs[0].Device() != 1 {
		t.Errorf("output allocated on device %d, want 1", outs[0].Device())
	}
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := f.(hal.ProfiledFence).Profile()
	if err != nil {
		t.Fatal(err)
	}
	if p.Device != 1 || p.Queue != "example-cpu1/host" {
		t.Errorf("profile of a device-1 call: device %d queue %q", p.Device, p.Queue)
	}
	// a device-0 buffer given to the device-1 executable: the library refuses
	in0, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1, 3}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in0)
	_, err = exe.Enqueue(ctx, []hal.Buffer{in0}, []hal.Buffer{nil}, nil, nil)
	if hal.CodeOf(err) != hal.CodeInvalidArgument || !strings.Contains(err.Error(), "is on device 0, the executable on device 1") {
		t.Errorf("device-0 buffer to a device-1 executable: %v", err)
	}
	_, err = dev.Compile(ctx, namedMulRelu(), &hal.CompileOptions{Device: 2})
	if hal.CodeOf(err) != hal.CodeInvalidArgument || !strings.Contains(err.Error(), "device 2, the library has 2") {
		t.Errorf("device 2 of 2: %v", err)
	}
	_, err = dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1}, Device: 2})
	wantCode(t, err, hal.CodeInvalidArgument, "a buffer on device 2 of 2")
}

// float16 and bfloat16 only when the caller opts in: the executable
// reports what it computes in and its results are rounded to it.
func TestPrecisionReportedAndUsed(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib(t))
	x := graph.MustFromSlice([]int{1, 3}, []float32{0.1, 0, 1.0 / 3})
	for _, tc := range []struct {
		prec hal.Precision
		want []float32 // Relu(x * [1 -2 3])
	}{
		{"", []float32{0.1, 0, 1}},
		{hal.PrecisionFloat32, []float32{0.1, 0, 1}},
		{hal.PrecisionFloat16, []float32{0.0999755859375, 0, 1}},
		{hal.PrecisionBFloat16, []float32{0.10009765625, 0, 1}},
	} {
		exe, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{Precision: tc.prec})
		if err != nil {
			t.Fatal(err)
		}
		want := tc.prec
		if want == "" {
			want = hal.PrecisionFloat32
		}
		if got := exe.Precision(); got != want {
			t.Errorf("asked %q: executable reports %q", tc.prec, got)
		}
		out := []*graph.Tensor{{}}
		if err := exe.Execute(ctx, []*graph.Tensor{x}, out); err != nil {
			t.Fatal(err)
		}
		for i, v := range graph.Data[float32](out[0]) {
			if v != tc.want[i] {
				t.Errorf("precision %q: y[%d] = %v (bits %#x), want %v", tc.prec, i, v, math.Float32bits(v), tc.want[i])
			}
		}
		exe.Release()
	}
	_, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{Precision: "int4"})
	if hal.CodeOf(err) != hal.CodeInvalidArgument || !strings.Contains(err.Error(), `unknown precision "int4"`) {
		t.Errorf("unknown precision: %v", err)
	}
}

// Shape bounds reach the library, which declines inputs outside them at
// run time; the host turns that into hal.ErrDeclined. Malformed bounds
// are the caller's error; bounds of names the subgraph does not take are
// left out.
func TestShapeBoundsDeclineAtRunTime(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib(t))
	bounds := map[string][]hal.DimRange{"x": {{Min: 1, Max: 4}, {Min: 3, Max: 3}}, "elsewhere": {{Min: 1, Max: 1}}}
	exe, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{ShapeBounds: bounds})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	run := func(batch int) error {
		x, _ := graph.New(graph.Float32, []int{batch, 3})
		return exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
	}
	if err := run(4); err != nil {
		t.Fatalf("batch 4 within [1, 4]: %v", err)
	}
	err = run(5)
	if !errors.Is(err, hal.ErrDeclined) || !strings.Contains(err.Error(), "input 0 dim 0 is 5, outside the bounds [1, 4]") {
		t.Fatalf("batch 5 outside [1, 4]: want ErrDeclined naming the bound, got %v", err)
	}
	// through the runtime: the declined call runs on cpu, visibly
	m, err := runtime.LoadBytes(ctx, mulReluModel(t), &runtime.Options{Backends: []*hal.Device{dev}, Compile: hal.CompileOptions{ShapeBounds: bounds}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x, _ := graph.New(graph.Float32, []int{6, 3})
	graph.Data[float32](x)[0] = 2
	got, err := m.Run(ctx, map[string]*graph.Tensor{"x": x})
	if err != nil {
		t.Fatalf("a declined partition is not re-run on cpu: %v", err)
	}
	if z := graph.Data[float32](got["z"]); z[0] != 2 {
		t.Fatalf("z[0] = %v, want 2", z[0])
	}
	for _, bad := range []map[string][]hal.DimRange{
		{"x": {{Min: 4, Max: 1}, {Min: 3, Max: 3}}},
		{"x": {{Min: -1, Max: 1}, {Min: 3, Max: 3}}},
		{"x": {{Min: 1, Max: 4}}},
		{"x": {{Min: 1, Max: 4}, {Min: 4, Max: 8}}}, // the static dim 3 is outside
	} {
		_, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{ShapeBounds: bad})
		if hal.CodeOf(err) != hal.CodeInvalidArgument || !strings.Contains(err.Error(), `shape bounds of input "x"`) {
			t.Errorf("bounds %v: want InvalidArgument naming x, got %v", bad, err)
		}
	}
}

// ExecuteProfiled returns that call's profile, one kernel per node mapped
// back to the nodes' names, within the call's interval; concurrent calls
// each get their own.
func TestExecuteProfiled(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib(t))
	exe, err := dev.Compile(ctx, namedMulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			x, _ := graph.New(graph.Float32, []int{g + 1, 3})
			out := []*graph.Tensor{{}}
			p, err := exe.ExecuteProfiled(ctx, []*graph.Tensor{x}, out)
			if err != nil {
				errs <- err
				return
			}
			if !graph.SameShape(out[0].Shape, []int{g + 1, 3}) {
				errs <- errors.New("wrong output shape")
				return
			}
			if err := checkExampleProfile(p, 0); err != nil {
				errs <- err
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func checkExampleProfile(p *hal.CallProfile, device int) error {
	if p == nil || len(p.Kernels) != 2 {
		return errors.New("want 2 kernels")
	}
	if p.Device != device {
		return errors.New("wrong device")
	}
	for i, want := range []struct{ name, node string }{{"mul_f32", "scale"}, {"relu_f32", "clip"}} {
		k := p.Kernels[i]
		if k.Name != want.name || len(k.Nodes) != 1 || k.Nodes[0] != want.node {
			return errors.New("kernel " + k.Name + " names " + strings.Join(k.Nodes, ",") + ", want " + want.name + " for " + want.node)
		}
		if k.StartNS < p.StartNS || k.EndNS > p.EndNS || k.EndNS < k.StartNS {
			return errors.New("kernel " + k.Name + " outside its call")
		}
	}
	return nil
}

// An enqueued call asked for a profile carries one on its fence; one not
// asked for says so (Unsupported).
func TestEnqueueProfiled(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib(t))
	exe, err := dev.Compile(ctx, namedMulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{2, 3}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	up, err := dev.Upload(ctx, in, graph.MustFromSlice([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, profiled := range []bool{true, false} {
		outs := []hal.Buffer{nil}
		f, err := exe.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{up}, &hal.EnqueueOptions{Profile: profiled})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		p, err := f.(hal.ProfiledFence).Profile()
		if profiled {
			if err != nil {
				t.Fatal(err)
			}
			if err := checkExampleProfile(p, 0); err != nil {
				t.Error(err)
			}
		} else if hal.CodeOf(err) != hal.CodeUnsupported {
			t.Errorf("profile of a call enqueued without Profile: %v", err)
		}
		if err := dev.Free(outs[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// A HAL 1.0 library is given 1.0-sized structs (the example's 1.0 build
// refuses any other size, so every call below proves it) and the host
// answers the 1.1 requests: one device from its Info, no profiles, no
// device other than 0; precision and bounds are hints it cannot take.
func TestHAL10LibraryGetsHAL10Structs(t *testing.T) {
	ctx := context.Background()
	_, dev := open11(t, exampleLib10(t))
	ds, err := dev.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].Name != "c-example" {
		t.Fatalf("devices of a 1.0 library: %+v", ds)
	}
	exe, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{Precision: hal.PrecisionFloat16, ShapeBounds: map[string][]hal.DimRange{"x": {{Min: 1, Max: 1}, {Min: 3, Max: 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	if p := exe.Precision(); p != hal.PrecisionFloat32 {
		t.Errorf("1.0 library reports %q", p)
	}
	x := graph.MustFromSlice([]int{2, 3}, []float32{0.1, 0, 0, 0, 0, 0})
	out := []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{x}, out); err != nil {
		t.Fatal(err)
	}
	if y := graph.Data[float32](out[0]); y[0] != 0.1 {
		t.Errorf("1.0 library computed %v, want float32 0.1", y[0])
	}
	_, err = exe.ExecuteProfiled(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
	wantCode(t, err, hal.CodeUnsupported, "ExecuteProfiled of a 1.0 library")
	_, err = dev.Compile(ctx, mulRelu(), &hal.CompileOptions{Device: 1})
	wantCode(t, err, hal.CodeUnsupported, "device 1 of a 1.0 library")
}

// Every malformed HAL 1.1 value a library returns is refused with an
// error naming it; nothing crashes.
func TestHostile11ValuesRefused(t *testing.T) {
	ctx := context.Background()
	lib := buildC(t, "libhostile11.so", "testdata/hostile11_delegate.c")
	relu := func() *hal.Subgraph {
		vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2)}
		g := &graph.Graph{Inputs: []graph.ValueInfo{{Name: "x", Type: vt}}, Outputs: []graph.ValueInfo{{Name: "y", Type: vt}},
			Nodes: []*graph.Node{{Name: "r", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}}}
		return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	}
	x := graph.MustFromSlice([]int{2}, []float32{-1, 2})
	t.Run("good", func(t *testing.T) {
		t.Setenv("SWITCHYARD_TEST_HOSTILE", "")
		_, dev := open11(t, lib)
		ds, err := dev.Devices(ctx)
		if err != nil || len(ds) != 1 || ds[0].Name != "npu0" || ds[0].Kind != hal.DeviceNPU || ds[0].CacheKey.Vendor != "Switchyard tests" {
			t.Fatalf("devices %+v, %v", ds, err)
		}
		exe, err := dev.Compile(ctx, relu(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer exe.Release()
		p, err := exe.ExecuteProfiled(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
		if err != nil || len(p.Kernels) != 1 || p.Kernels[0].Nodes[0] != "r" || p.Queue != "q0" {
			t.Fatalf("profile %+v, %v", p, err)
		}
	})
	for _, tc := range []struct {
		mode string
		call string // where it fails: open, caps, compile, profile, execute
		code hal.Code
		want string
	}{
		{"devices_count", "caps", hal.CodeInternal, "1000 devices, more than 64"},
		{"devices_null", "caps", hal.CodeInternal, "2 devices at 0x0"},
		{"devices_stride", "caps", hal.CodeInternal, "device_desc_size 8"},
		{"devices_kind", "caps", hal.CodeInternal, "device 0: unknown device kind 77"},
		{"devices_bits", "caps", hal.CodeInternal, "memory kinds 0x84 has unknown bits"},
		{"devices_size", "caps", hal.CodeInternal, "negative sizes: memory -1 bytes"},
		{"devices_buffer", "caps", hal.CodeInternal, "largest buffer of 2097152 bytes on a device of 1048576 bytes"},
		{"devices_name", "caps", hal.CodeInternal, "name: a string without a NUL in its first 128 bytes"},
		{"precision_unknown", "compile", hal.CodeInternal, "compile reported precision 7"},
		{"precision_unasked", "compile", hal.CodeInternal, "computing in float16, but the caller accepts only float32"},
		{"profile_kernels", "profile", hal.CodeInternal, "profile has 21 kernels, the host made room for 20"},
		{"profile_refs", "profile", hal.CodeInternal, "profile has 21 node references, the host made room for 20"},
		{"profile_node", "profile", hal.CodeInternal, `kernel 0 ("relu") names node 99 of 1`},
		{"profile_range", "profile", hal.CodeInternal, "names node references 4294967295..4294967297 of 1"},
		{"profile_time", "profile", hal.CodeInternal, `kernel 0 ("relu") runs from 110 to 50 ns`},
		{"profile_device", "profile", hal.CodeInternal, "profile names device 5 of 1"},
		{"decline", "execute", hal.CodeDeclined, "not this shape"},
		{"half_profiling", "open", hal.CodeFailedPrecondition, "only one of enqueue_with_options (true) and fence_profile (false)"},
		{"profiling_alone", "open", hal.CodeFailedPrecondition, "enqueue_with_options and fence_profile but not the seven device-memory functions"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("SWITCHYARD_TEST_HOSTILE", tc.mode)
			b, err := Open(ctx, lib, Options{})
			if tc.call == "open" {
				if hal.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("open: want %v with %q, got %v", tc.code, tc.want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dev, err := hal.NewDevice(b.HAL(), hal.LoadLibrary)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			if tc.call == "caps" {
				_, err = dev.Capabilities(ctx)
			} else {
				var exe *hal.Compiled
				exe, err = dev.Compile(ctx, relu(), nil)
				if err == nil {
					defer exe.Release()
					if tc.call == "profile" {
						_, err = exe.ExecuteProfiled(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
					} else {
						err = exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
					}
				}
			}
			if hal.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s: want %v with %q, got %v", tc.call, tc.code, tc.want, err)
			}
		})
	}
}

// mulReluModel is mulRelu as an ONNX model.
func mulReluModel(t *testing.T) []byte {
	t.Helper()
	sg := mulRelu()
	g := *sg.Graph
	g.ValueInfo = nil
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: &g})
}

// A library built against the first HAL 1.1 header (its table ends at
// release_fence) keeps device memory; its enqueued calls carry no
// profile, said as Unsupported, and execute profiles still work.
func TestHAL11TableWithoutProfiledEnqueue(t *testing.T) {
	ctx := context.Background()
	b, dev := open11(t, buildC(t, "libswitchyard_example11dm.so", "example/example_delegate.c", "SY_EXAMPLE_TABLE_1_1_DEVMEM"))
	if !dev.HasDeviceMemory() || b.profEnqueue {
		t.Fatalf("device memory %v, profiled enqueue %v", dev.HasDeviceMemory(), b.profEnqueue)
	}
	exe, err := dev.Compile(ctx, namedMulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	outs := []hal.Buffer{nil}
	f, err := exe.Enqueue(ctx, []hal.Buffer{in}, outs, nil, &hal.EnqueueOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(outs[0])
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = f.(hal.ProfiledFence).Profile()
	wantCode(t, err, hal.CodeUnsupported, "profile of an enqueue without fence_profile")
	x, _ := graph.New(graph.Float32, []int{1, 3})
	p, err := exe.ExecuteProfiled(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExampleProfile(p, 0); err != nil {
		t.Error(err)
	}
}
