package native_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

func device(t testing.TB, opts native.Options) *hal.Device {
	t.Helper()
	d, err := hal.NewDevice(native.New(opts), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// The real models against their reference outputs (verify's tolerance,
// atol 1e-4), with every node the backend claims placed on it, and the
// partition count they keep.
func TestModels(t *testing.T) {
	dev := device(t, native.Options{Threads: 2})
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
			s := model.Plan().Summary()
			t.Logf("%s: placement %v, %d partitions", m, s, len(model.PartitionStats()))
			if s[native.Name] == 0 {
				t.Fatalf("%s: nothing placed on native: %v", m, s)
			}
		})
	}
}

// The ONNX node tests with native first and cpu behind it: the same
// failures as cpu alone, nothing more (an op native claims but computes
// differently shows up here).
func TestONNXNodeSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	backendtest.NodeSuite(t, device(t, native.Options{Threads: 1}), false)
}

// BenchmarkModels runs each real model on native (cpu behind it) at one
// and two threads, its outputs written into caller tensors, for profiling (go test
// -bench Models -cpuprofile) and allocations per run (-benchmem).
func BenchmarkModels(b *testing.B) {
	root := shared.Path(b, "testdata/models")
	for _, m := range []string{"blazeface_front_128", "ppocr_mobile_v2_cls", "ppocrv4_rec", "silero_vad_v5"} {
		for _, threads := range []int{1, 2} {
			benchModel(b, root, m, threads)
		}
	}
}

func benchModel(b *testing.B, root, m string, threads int) {
	{
		b.Run(fmt.Sprintf("%s/threads=%d", m, threads), func(b *testing.B) {
			dev := device(b, native.Options{Threads: threads})
			dir := filepath.Join(root, m)
			model, err := runtime.LoadDir(context.Background(), dir, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				b.Fatal(err)
			}
			defer model.Close()
			ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil {
				b.Fatal(err)
			}
			in := map[string]*graph.Tensor{}
			for i, vi := range model.Inputs() {
				if i < len(ins) {
					in[vi.Name] = ins[i]
				}
			}
			// outputs written into caller tensors (RunOptions.Into), as a
			// steady-state caller does: allocs/op is the run's own
			first, err := model.Run(context.Background(), in)
			if err != nil {
				b.Fatal(err)
			}
			into := map[string]*graph.Tensor{}
			for name, t := range first {
				into[name] = t.Clone()
			}
			opts := runtime.RunOptions{Into: into}
			b.ReportAllocs()
			// best-ms: the fastest run (on a shared machine the least
			// disturbed one; ns/op is the mean)
			best := time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				if _, _, err := model.RunWithStats(context.Background(), in, opts); err != nil {
					b.Fatal(err)
				}
				best = min(best, time.Since(t0))
			}
			b.ReportMetric(float64(best.Nanoseconds())/1e6, "best-ms")
		})
	}
}
