package vulkan_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
)

// The three unavailable reasons are distinct.
func TestUnavailableReasons(t *testing.T) {
	ctx := context.Background()
	_, err := vulkan.New(ctx, vulkan.Options{Library: "libvulkan-not-installed.so.1"})
	if !errors.Is(err, vulkan.ErrNoLoader) || !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("missing loader: %v, want ErrNoLoader and Unavailable", err)
	}
	t.Logf("no loader: %v", err)
	open(t, vulkan.Options{}) // the rest needs a loader and a driver
	t.Setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json")
	t.Setenv("VK_DRIVER_FILES", "/nonexistent/icd.json")
	_, err = vulkan.New(ctx, vulkan.Options{})
	if !errors.Is(err, vulkan.ErrNoDriver) || !errors.Is(err, hal.ErrUnavailable) || errors.Is(err, vulkan.ErrNoLoader) {
		t.Fatalf("no driver: %v, want ErrNoDriver and Unavailable", err)
	}
	t.Logf("no driver: %v", err)
	os.Unsetenv("VK_ICD_FILENAMES") // t.Setenv restores them at the end
	os.Unsetenv("VK_DRIVER_FILES")
	restore := vulkan.SetUnusableForTest("simulated: no compute queue")
	_, err = vulkan.New(ctx, vulkan.Options{})
	restore()
	if !errors.Is(err, vulkan.ErrNoDevice) || !errors.Is(err, hal.ErrUnavailable) || errors.Is(err, vulkan.ErrNoDriver) {
		t.Fatalf("no usable device: %v, want ErrNoDevice and Unavailable", err)
	}
	t.Logf("no usable device: %v", err)
}

// Each physical device is a device of the backend, with its kind: lavapipe
// says CPU.
func TestDevices(t *testing.T) {
	dev, _ := device(t, vulkan.Options{})
	ds, err := dev.Devices(context.Background())
	if err != nil || len(ds) == 0 {
		t.Fatalf("devices: %v %v", ds, err)
	}
	for _, d := range ds {
		t.Logf("device %d: %s, kind %s, %d MiB, max buffer %d MiB, cache key %s", d.Index, d.Name, d.Kind, d.MemoryBytes>>20, d.MaxBufferBytes>>20, d.CacheKey)
		if d.Kind != hal.DeviceCPU && d.Kind != hal.DeviceGPU {
			t.Errorf("device %d kind %s", d.Index, d.Kind)
		}
	}
}

// The opt-in flag keeps vulkan out of the default selection.
func TestOptIn(t *testing.T) {
	for _, e := range hal.Default.List() {
		if e.Info.Name == vulkan.Name && !e.OptIn {
			t.Fatal("vulkan is registered without OptIn: lavapipe would be chosen by default")
		}
	}
}

// DeviceMemory and Enqueue: upload, two enqueues chained on the device,
// download; freeing a buffer while work uses it is safe; per-call profile.
func TestDeviceMemoryAndEnqueue(t *testing.T) {
	dev, _ := device(t, vulkan.Options{})
	ctx := context.Background()
	f32 := graph.ValueInfo{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(3, 5)}}
	yv, rv := f32, f32
	yv.Name, rv.Name = "y", "r"
	sg := &hal.Subgraph{Graph: &graph.Graph{Name: "g", Inputs: []graph.ValueInfo{f32}, Outputs: []graph.ValueInfo{yv}, ValueInfo: []graph.ValueInfo{rv},
		Nodes: []*graph.Node{node("Relu", []string{"x"}, []string{"r"}), node("Add", []string{"r", "x"}, []string{"y"})}}, Opsets: []graph.Opset{{Version: 17}}}
	c, err := dev.Compile(ctx, sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if !c.CanEnqueue() {
		t.Fatal("no Enqueue")
	}
	x := graph.MustFromSlice([]int{3, 5}, []float32{-1, 2, -3, 4, -5, 6, -7, 8, -9, 10, -11, 12, -13, 14, -15})
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{3, 5}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	up, err := dev.Upload(ctx, in, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	f1, err := c.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{up}, &hal.EnqueueOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	outs2 := []hal.Buffer{nil}
	f2, err := c.Enqueue(ctx, []hal.Buffer{outs[0]}, outs2, []hal.Fence{f1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Free(in); err != nil { // still used by pending work
		t.Fatal(err)
	}
	var got graph.Tensor
	dn, err := dev.Download(ctx, &got, outs2[0], []hal.Fence{f2})
	if err != nil {
		t.Fatal(err)
	}
	if err := dn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	for i, v := range graph.Data[float32](x) {
		once := max(v, 0) + v
		want := max(once, 0) + once
		if g := graph.Data[float32](&got)[i]; g != want {
			t.Fatalf("y[%d] = %v, want %v", i, g, want)
		}
	}
	pf, ok := f1.(hal.ProfiledFence)
	if !ok {
		t.Fatal("fence without a profile")
	}
	prof, err := pf.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Kernels) != 2 || prof.EndNS < prof.StartNS {
		t.Fatalf("profile %+v", prof)
	}
	t.Logf("profile: %d ns on the device, kernels %+v", prof.EndNS-prof.StartNS, prof.Kernels)
	_ = dev.Free(outs[0])
	_ = dev.Free(outs2[0])
	// synchronous, profiled
	var y graph.Tensor
	p, err := c.ExecuteProfiled(ctx, []*graph.Tensor{x}, []*graph.Tensor{&y})
	if err != nil || len(p.Kernels) != 2 {
		t.Fatalf("ExecuteProfiled: %v %+v", err, p)
	}
}

// TestCloseWithLiveWork: closing the backend while an executable that ran
// (its recordings) and a buffer are alive frees them on the device before
// destroying it; releasing and freeing them afterwards is harmless.
func TestCloseWithLiveWork(t *testing.T) {
	b, err := vulkan.New(context.Background(), vulkan.Options{})
	if err != nil {
		open(t, vulkan.Options{}) // skips or fails with the reason
		return
	}
	ctx := context.Background()
	f32 := graph.ValueInfo{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}
	yv := f32
	yv.Name = "y"
	sg := &hal.Subgraph{Graph: &graph.Graph{Name: "g", Inputs: []graph.ValueInfo{f32}, Outputs: []graph.ValueInfo{yv},
		Nodes: []*graph.Node{node("Relu", []string{"x"}, []string{"y"})}}, Opsets: []graph.Opset{{Version: 17}}}
	exe, err := b.Compile(ctx, sg, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var y graph.Tensor
	if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}, []*graph.Tensor{&y}); err != nil {
		t.Fatal(err)
	}
	buf, err := b.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_ = exe.Release()
	_ = b.Free(buf)
	if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})}, []*graph.Tensor{&y}); err == nil {
		t.Fatal("Execute after Close succeeded")
	}
}
