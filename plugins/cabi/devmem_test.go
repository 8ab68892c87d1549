package cabi

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
)

func exampleLib10(t testing.TB) string {
	return buildC(t, "libswitchyard_example10.so", "example/example_delegate.c", "SY_EXAMPLE_HAL_1_0")
}

// open11 opens the example delegate as the registry would (Backend.HAL).
func open11(t testing.TB, lib string) (*Backend, *hal.Device) {
	t.Helper()
	b, err := Open(context.Background(), lib, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := hal.NewDevice(b.HAL(), hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return b, d
}

// mulRelu is Relu(x * w) with a symbolic batch, so enqueue infers its
// output shape through infer_outputs.
func mulRelu() *hal.Subgraph {
	sym := graph.Shape{{Param: "batch"}, {Value: 3}}
	g := &graph.Graph{
		Name:         "mulrelu",
		Inputs:       []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Outputs:      []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{3}, []float32{1, -2, 3})},
		Nodes: []*graph.Node{
			{OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"y"}},
			{OpType: "Relu", Inputs: []string{"y"}, Outputs: []string{"z"}},
		},
	}
	return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
}

func wantCode(t *testing.T, err error, code hal.Code, what string) {
	t.Helper()
	if hal.CodeOf(err) != code {
		t.Fatalf("%s: want %v, got %v", what, code, err)
	}
}

// Values stay in the delegate's buffers across two enqueued calls (the
// host sees handles only) and come back equal to two host executions.
func TestDeviceMemoryThroughCABI(t *testing.T) {
	ctx := context.Background()
	b, dev := open11(t, exampleLib(t))
	if dev.HALVersion() != hal.V1_1 || !dev.HasDeviceMemory() {
		t.Fatalf("negotiated %v, device memory %v", dev.HALVersion(), dev.HasDeviceMemory())
	}
	exe, err := dev.Compile(ctx, mulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	if !exe.CanEnqueue() {
		t.Fatal("executable of a 1.1 delegate cannot enqueue")
	}
	x := randTensor(rand.New(rand.NewPCG(1, 2)), []int{4, 3})
	// host reference: the subgraph applied twice
	mid, want := []*graph.Tensor{{}}, []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{x}, mid); err != nil {
		t.Fatal(err)
	}
	if err := exe.Execute(ctx, mid, want); err != nil {
		t.Fatal(err)
	}
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4, 3}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.(hal.Mappable); ok {
		t.Fatal("a device-local buffer offers a host view")
	}
	up, err := dev.Upload(ctx, in, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	out1 := []hal.Buffer{nil}
	f1, err := exe.Enqueue(ctx, []hal.Buffer{in}, out1, []hal.Fence{up}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out1[0] == nil || !graph.SameShape(out1[0].Shape(), []int{4, 3}) || out1[0].Memory() != hal.MemoryDeviceLocal {
		t.Fatalf("enqueue allocated %v", out1[0])
	}
	out2 := []hal.Buffer{nil}
	f2, err := exe.Enqueue(ctx, out1, out2, []hal.Fence{f1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := &graph.Tensor{}
	df, err := dev.Download(ctx, got, out2[0], []hal.Fence{f2})
	if err != nil {
		t.Fatal(err)
	}
	if err := df.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := onnxtest.Compare(got, want[0], 0, 0); err != nil {
		t.Fatal(err)
	}
	if done, err := f1.Poll(); !done || err != nil {
		t.Fatalf("poll of a signalled fence: %v %v", done, err)
	}
	for _, buf := range []hal.Buffer{in, out1[0], out2[0]} {
		if err := dev.Free(buf); err != nil {
			t.Fatal(err)
		}
	}

	// hostile and careless callers
	wantCode(t, dev.Free(in), hal.CodeInvalidArgument, "double free")
	_, err = dev.Upload(ctx, in, x, nil)
	wantCode(t, err, hal.CodeInvalidArgument, "upload into a freed buffer")
	forged := &buffer{b: b, h: 1 << 40, BufferInfo: devkit.NewBufferInfo(graph.Float32, []int{4, 3}, hal.MemoryDeviceLocal, 0)}
	_, err = dev.Upload(ctx, forged, x, nil)
	wantCode(t, err, hal.CodeInvalidArgument, "upload into a forged handle")
	_, err = exe.Enqueue(ctx, []hal.Buffer{forged}, []hal.Buffer{nil}, nil, nil)
	wantCode(t, err, hal.CodeInvalidArgument, "enqueue on a forged handle")
	_, err = dev.Upload(ctx, foreignBuffer{}, graph.MustFromSlice([]int{1}, []float32{1}), nil)
	wantCode(t, err, hal.CodeInvalidArgument, "upload into another backend's buffer")
	err = (&fence{b: b, h: 1 << 41}).Wait(ctx)
	wantCode(t, err, hal.CodeInvalidArgument, "wait on an unknown fence")
	_, err = dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1 << 40, 1 << 30}})
	wantCode(t, err, hal.CodeResourceExhausted, "a huge buffer")
	_, err = dev.Allocate(ctx, hal.BufferRequest{DType: graph.Int64, Shape: []int{2}})
	wantCode(t, err, hal.CodeUnsupported, "a dtype the delegate lacks")
	small, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dev.Upload(ctx, small, x, nil)
	wantCode(t, err, hal.CodeInvalidArgument, "upload of the wrong shape")
	if err := dev.Free(small); err != nil {
		t.Fatal(err)
	}
}

type foreignBuffer struct{}

func (foreignBuffer) DType() graph.DType     { return graph.Float32 }
func (foreignBuffer) Shape() []int           { return []int{1} }
func (foreignBuffer) Memory() hal.MemoryKind { return hal.MemoryDeviceLocal }
func (foreignBuffer) Device() int            { return 0 }

// A delegate built against the HAL 1.0 table still loads, negotiates 1.0
// and answers every 1.1 request with Unsupported (the library is never
// asked); a context that ends while a fence is pending is its error.
func TestHAL10DelegateStillLoads(t *testing.T) {
	ctx := context.Background()
	b, dev := open11(t, exampleLib10(t))
	if b.HasDeviceMemory() || dev.HasDeviceMemory() || dev.HALVersion() != hal.V1_0 {
		t.Fatalf("1.0 library: device memory %v, negotiated %v", dev.HasDeviceMemory(), dev.HALVersion())
	}
	if _, ok := b.HAL().(hal.DeviceMemory); ok {
		t.Fatal("a 1.0 library is presented with device memory")
	}
	_, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1}})
	wantCode(t, err, hal.CodeUnsupported, "allocate on a 1.0 delegate")
	exe, err := dev.Compile(ctx, mulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	if exe.CanEnqueue() {
		t.Fatal("a 1.0 executable claims it can enqueue")
	}
	_, err = exe.Enqueue(ctx, []hal.Buffer{foreignBuffer{}}, []hal.Buffer{nil}, nil, nil)
	wantCode(t, err, hal.CodeUnsupported, "enqueue on a 1.0 delegate")
	out := []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{1, 3}, []float32{1, 1, 1})}, out); err != nil {
		t.Fatal(err)
	}
}

// A fence that never signals and a 200 ms deadline: Wait gives
// DeadlineExceeded promptly (the host waits in slices, so the library is
// never asked to wait past the deadline); Poll says not done; the buffers
// it uses can still be freed and the delegate closed.
func TestFenceWaitHonoursDeadline(t *testing.T) {
	ctx := context.Background()
	lib := buildC(t, "libswitchyard_example_wedged.so", "example/example_delegate.c", "SY_EXAMPLE_FENCES_NEVER_SIGNAL")
	_, dev := open11(t, lib)
	exe, err := dev.Compile(ctx, mulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := dev.Upload(ctx, in, graph.MustFromSlice([]int{1, 3}, []float32{1, 2, 3}), nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	f, err := exe.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{up}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // twice: a timed-out wait leaves the fence usable
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		start := time.Now()
		err = f.Wait(dctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, hal.ErrDeadlineExceeded) && hal.CodeOf(err) != hal.CodeDeadlineExceeded {
			t.Fatalf("wait %d: want DeadlineExceeded, got %v", i, err)
		}
		if took > 250*time.Millisecond {
			t.Errorf("wait %d returned after %v (deadline 200 ms)", i, took)
		}
		t.Logf("wait %d: %v after %v", i, err, took)
	}
	if done, err := f.Poll(); done || err != nil {
		t.Fatalf("poll of a pending fence: %v %v", done, err)
	}
	for _, b := range []hal.Buffer{in, outs[0]} {
		if err := dev.Free(b); err != nil {
			t.Fatal(err)
		}
	}
}

// The runtime keeps values in the C delegate's buffers: on the real models
// the 1.1 delegate gives the cpu-only outputs, and its runs move values
// through upload/download (counted in the run's stats).
func TestModelsThroughDeviceMemory(t *testing.T) {
	root := shared.Path(t, "testdata/models")
	lib := exampleLib(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	ctx := context.Background()
	ran := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			_, dev := open11(t, lib)
			ref, err := runtime.LoadDir(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			feeds := readInputs(t, dir, m)
			want, err := ref.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			got, st, err := m.RunWithStats(ctx, feeds, runtime.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				if err := onnxtest.Compare(got[name], w, 1e-4, 1e-5); err != nil {
					t.Errorf("output %q: %v", name, err)
				}
			}
			t.Logf("uploads %d (%d B), downloads %d (%d B)", st.Uploads, st.UploadBytes, st.Downloads, st.DownloadBytes)
		})
	}
	if ran == 0 {
		t.Fatalf("no models under %s", root)
	}
}
