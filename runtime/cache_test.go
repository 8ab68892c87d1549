package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

// A second load with the same compile cache imports every delegated
// partition instead of compiling it; outputs are unchanged; a corrupt blob
// is a miss (compiled afresh), never a crash.
func TestCompileCacheReusesBlobs(t *testing.T) {
	dir := filepath.Join(shared.Path(t, "testdata/models"), "blazeface_front_128")
	ctx := context.Background()
	cache := &hal.DirCache{Dir: t.TempDir()}
	ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
	if err != nil {
		t.Fatal(err)
	}
	load := func() (*runtime.Model, *sim.Backend) {
		b := sim.New(sim.Options{Ops: []string{"Conv", "Relu", "Add"}})
		dev, err := hal.NewDevice(b, hal.LoadLinked)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dev.Close() })
		m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}, CompileCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, b
	}
	first, b1 := load()
	feeds := map[string]*graph.Tensor{}
	for i, in := range first.Inputs() {
		if i < len(ins) {
			feeds[in.Name] = ins[i]
		}
	}
	parts := 0
	for _, p := range first.Plan().Partitions {
		if !p.Fallback {
			parts++
		}
	}
	if parts == 0 || first.CompileCacheHits() != 0 || b1.Imports() != 0 {
		t.Fatalf("first load: %d partitions, %d hits, %d imports", parts, first.CompileCacheHits(), b1.Imports())
	}
	blobs, _ := filepath.Glob(filepath.Join(cache.Dir, "*.blob"))
	if len(blobs) == 0 {
		t.Fatal("no blobs stored")
	}
	second, b2 := load()
	if second.CompileCacheHits() != parts || b2.Imports() != int64(parts) {
		t.Fatalf("second load: %d hits, %d imports, want %d", second.CompileCacheHits(), b2.Imports(), parts)
	}
	want, err := first.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	got, err := second.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	if err := equalOutputs(want, got); err != nil {
		t.Fatal(err)
	}
	// corrupt every blob: the next load compiles again
	for _, p := range blobs {
		if err := os.WriteFile(p, []byte("not a blob"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	third, b3 := load()
	if third.CompileCacheHits() != 0 || b3.Imports() != 0 {
		t.Fatalf("corrupt cache: %d hits, %d imports", third.CompileCacheHits(), b3.Imports())
	}
	if got, err := third.Run(ctx, feeds); err != nil || equalOutputs(want, got) != nil {
		t.Fatalf("after corrupt cache: %v", err)
	}
}
