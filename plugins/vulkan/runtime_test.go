package vulkan_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
	"github.com/switchyard-hal/switchyard/runtime"
)

// The backend against the conformance suite; its declared gaps, with
// reasons, are in conformance/gaps/vulkan.json.
func TestConformance(t *testing.T) {
	open(t, vulkan.Options{}) // skip or fail early, with the reason
	gaps, err := conformance.BuiltinGaps(vulkan.Name)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Harness{
		Gaps: gaps,
		Open: func(ctx context.Context) (*hal.Device, error) {
			b, err := vulkan.New(ctx, vulkan.Options{})
			if err != nil {
				return nil, err
			}
			return hal.NewDevice(b, hal.LoadLibrary)
		},
	})
}

// The real models against their reference outputs, vulkan in front of cpu.
func TestModels(t *testing.T) {
	dev, _ := device(t, vulkan.Options{})
	root := shared.Path(t, "testdata/models")
	for _, m := range []string{"blazeface_front_128", "ppocr_mobile_v2_cls", "ppocrv4_rec", "silero_vad_v5"} {
		t.Run(m, func(t *testing.T) {
			dir := filepath.Join(root, m)
			opts := &runtime.Options{Backends: []*hal.Device{dev}}
			res := onnxtest.RunDir(context.Background(), dir, onnxtest.Options{Rtol: 1e-3, Atol: 1e-4, Runtime: opts})
			if res.Status != onnxtest.Pass {
				t.Fatalf("%s: %s: %s", m, res.Status, res.Reason)
			}
			model, err := runtime.LoadDir(context.Background(), dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			n := model.Plan().Summary()[vulkan.Name]
			if n == 0 {
				t.Fatalf("no node on vulkan:\n%s", model.Plan().Text())
			}
			t.Logf("%s: %d nodes on vulkan of %d", m, n, len(model.Plan().Nodes))
		})
	}
}

// residencyModel: a = Relu(x) on vulkan; c = Cast(Cast(a)) on cpu (no
// shader for Cast); y = Add(a, c) on vulkan. a stays on the device
// between the two vulkan partitions (downloaded once for cpu, never
// uploaded again).
func residencyModel() *graph.Model {
	f32 := func(name string) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4, 8)}}
	}
	g := &graph.Graph{Name: "residency", Initializers: map[string]*graph.Tensor{},
		Inputs: []graph.ValueInfo{f32("x")}, Outputs: []graph.ValueInfo{f32("y")},
		Nodes: []*graph.Node{
			node("Relu", []string{"x"}, []string{"a"}),
			node("Cast", []string{"a"}, []string{"d"}, iattr("to", int64(graph.Float64))),
			node("Cast", []string{"d"}, []string{"c"}, iattr("to", int64(graph.Float32))),
			node("Add", []string{"a", "c"}, []string{"y"}),
		}}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

func TestNoRoundTripBetweenVulkanPartitions(t *testing.T) {
	dev, b := device(t, vulkan.Options{})
	ctx := context.Background()
	m, err := runtime.Prepare(ctx, residencyModel(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Plan().Summary()[vulkan.Name]; got != 2 {
		t.Fatalf("%d nodes on vulkan, want 2:\n%s", got, m.Plan().Text())
	}
	x := graph.MustFromSlice([]int{4, 8}, make([]float32, 32))
	for i := range graph.Data[float32](x) {
		graph.Data[float32](x)[i] = float32(i%7) - 3
	}
	before := b.Traffic(0)
	out, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": x}, runtime.RunOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range graph.Data[float32](x) {
		want := 2 * max(v, 0)
		if got := graph.Data[float32](out["y"])[i]; got != want {
			t.Fatalf("y[%d] = %v, want %v", i, got, want)
		}
	}
	uploaded := map[string]int{}
	for _, op := range st.DeviceOps {
		if op.Kind == "upload" {
			uploaded[op.Name]++
		}
	}
	if uploaded["a"] != 0 {
		t.Errorf("a went device → host → device (%d uploads): %+v", uploaded["a"], st.DeviceOps)
	}
	// x and c up; a (for cpu) and y down
	if st.Uploads != 2 || st.Downloads != 2 {
		t.Errorf("%d uploads and %d downloads, want 2 and 2: %+v", st.Uploads, st.Downloads, st.DeviceOps)
	}
	tr := b.Traffic(0)
	if tr.Uploads-before.Uploads != 2 || tr.Enqueues-before.Enqueues != 2 {
		t.Errorf("device counted %+v since the run began (from %+v)", tr, before)
	}
	t.Logf("run: %d uploads, %d downloads, %d enqueues on the device, a stayed resident", st.Uploads, st.Downloads, tr.Enqueues-before.Enqueues)
}

// Device loss mid-run (injected: the 4th submission reports
// VK_ERROR_DEVICE_LOST) → Unavailable → with ReplaceOnCPU the run is
// redone on cpu, and the next runs too.
func TestDeviceLostReplacedOnCPU(t *testing.T) {
	ctx := context.Background()
	rel := func() *graph.Model {
		m := residencyModel()
		m.Graph.Nodes = []*graph.Node{node("Relu", []string{"x"}, []string{"y"})}
		return m
	}
	x := graph.MustFromSlice([]int{4, 8}, make([]float32, 32))
	graph.Data[float32](x)[3] = -1
	graph.Data[float32](x)[5] = 2
	check := func(out map[string]*graph.Tensor) {
		t.Helper()
		if y := graph.Data[float32](out["y"]); y[3] != 0 || y[5] != 2 {
			t.Fatalf("wrong output %v", y[:8])
		}
	}
	t.Run("replace", func(t *testing.T) {
		dev, _ := device(t, vulkan.Options{LoseDeviceAfter: 4}) // run 1: upload, enqueue, download
		m, err := runtime.Prepare(ctx, rel(), &runtime.Options{Backends: []*hal.Device{dev}, OnUnavailable: runtime.ReplaceOnCPU, Policy: partitioner.Policy{IgnoreCosts: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		out, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": x}, runtime.RunOptions{})
		if err != nil || st.Reruns != 0 {
			t.Fatalf("first run: %v (reruns %d)", err, st.Reruns)
		}
		check(out)
		out, st, err = m.RunWithStats(ctx, map[string]*graph.Tensor{"x": x}, runtime.RunOptions{})
		if err != nil {
			t.Fatalf("run after the device was lost: %v", err)
		}
		if st.Reruns != 1 {
			t.Errorf("reruns %d, want 1", st.Reruns)
		}
		check(out)
		if out, err = m.Run(ctx, map[string]*graph.Tensor{"x": x}); err != nil {
			t.Fatalf("third run: %v", err)
		}
		check(out)
	})
	t.Run("fail", func(t *testing.T) {
		dev, _ := device(t, vulkan.Options{LoseDeviceAfter: 4})
		m, err := runtime.Prepare(ctx, rel(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if _, err := m.Run(ctx, map[string]*graph.Tensor{"x": x}); err != nil {
			t.Fatal(err)
		}
		_, err = m.Run(ctx, map[string]*graph.Tensor{"x": x})
		if !errors.Is(err, hal.ErrUnavailable) {
			t.Fatalf("run after the device was lost: %v, want Unavailable", err)
		}
	})
}
