package xnnpack_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

// device opens the backend as a portable device, or skips the test with
// the reason (fails when SWITCHYARD_REQUIRE_BACKENDS names xnnpack).
func device(t testing.TB, opts xnnpack.Options) *hal.Device {
	t.Helper()
	d, err := hal.NewDevice(xnnpack.OpenForTest(t, opts), hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// The real models, against their reference outputs, with every node the
// backend claims placed on it.
func TestModels(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1})
	root := shared.Path(t, "testdata/models")
	for _, m := range []string{"blazeface_front_128", "ppocr_mobile_v2_cls"} {
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
			if _, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input"); err != nil {
				t.Fatal(err)
			}
			s := model.Plan().Summary()
			t.Logf("%s: placement %v, %d partitions", m, s, len(model.PartitionStats()))
			if s[xnnpack.Name] == 0 {
				t.Fatalf("%s: nothing placed on xnnpack: %v", m, s)
			}
		})
	}
}
