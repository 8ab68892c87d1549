package native

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// sharedModels lists every model file under the shared test material's
// dirs (ONNX and TFLite), the ONNX node tests (onnx-node) only with all.
func sharedModels(t *testing.T, all bool) []string {
	root := shared.Path(t, "testdata")
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "onnx-node" && !all {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".onnx") || strings.HasSuffix(p, ".tflite")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// The fusion property, over every model of the shared test material: the
// graphs fuse produces pass checkRewrite (every compile in this package's
// tests checks; see verify_on_test.go), and a model compiled on native
// with its fusions computes what it computes without them, on the model's
// own test inputs where it has them and on seeded random inputs.
// Models or inputs native or the runtime refuse are skipped (the other
// suites cover those refusals); a run that fails with fusion but not
// without it fails. -short: the shared models/ and zoo/ only.
func TestFusionPreservesModels(t *testing.T) {
	all := os.Getenv("SWITCHYARD_FUSION_ALL") == "1"
	models := sharedModels(t, all)
	if testing.Short() {
		var keep []string
		for _, m := range models {
			if strings.Contains(m, "/zoo/") || strings.Contains(m, "/models/") {
				keep = append(keep, m)
			}
		}
		models = keep
	}
	fusedDev, err := hal.NewDevice(New(Options{Threads: 1}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer fusedDev.Close()
	plain := New(Options{Threads: 1})
	plain.noFuse = true
	plainDev, err := hal.NewDevice(plain, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer plainDev.Close()
	root := shared.Path(t, "testdata")
	compared := 0
	for _, path := range models {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			defer func() {
				for _, err := range takeRewriteFailures() {
					t.Errorf("fusion broke the graph: %v", err)
				}
			}()
			ctx := context.Background()
			load := func(dev *hal.Device) (*runtime.Model, error) {
				// by node counts: every node native takes goes to it,
				// however small the model
				return runtime.Load(ctx, path, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
			}
			mf, err := load(fusedDev)
			if err != nil {
				if len(takeRewriteFailures()) > 0 || strings.Contains(err.Error(), "rewrite of graph") {
					t.Fatalf("load with fusion: %v", err)
				}
				t.Skipf("not loaded: %v", err)
			}
			defer mf.Close()
			mp, err := load(plainDev)
			if err != nil {
				t.Fatalf("loads with fusion but not without: %v", err)
			}
			defer mp.Close()
			if mf.Plan().Summary()[Name] == 0 {
				t.Skip("nothing placed on native")
			}
			for _, feeds := range fusionFeeds(t, path, mf) {
				want, errP := mp.Run(ctx, feeds)
				got, errF := mf.Run(ctx, feeds)
				if errP != nil {
					if errF == nil {
						t.Logf("runs with fusion only (without: %v)", errP)
					}
					continue
				}
				if errF != nil {
					t.Fatalf("fails with fusion only: %v", errF)
				}
				for name, w := range want {
					if err := sameOutput(got[name], w); err != nil {
						t.Errorf("output %q with fusion differs from without: %v", name, err)
					}
				}
				compared++
			}
		})
	}
	t.Logf("%d models, %d runs compared", len(models), compared)
}

// fusionFeeds are the model's test_data_set_0 inputs (ONNX test layout)
// when present, and seeded random inputs of its declared types.
func fusionFeeds(t *testing.T, path string, m *runtime.Model) []map[string]*graph.Tensor {
	var out []map[string]*graph.Tensor
	ins := m.Inputs()
	set := filepath.Join(filepath.Dir(path), "test_data_set_0")
	if ts, err := onnxtest.ReadSet(set, "input"); err == nil && len(ts) == len(ins) {
		f := map[string]*graph.Tensor{}
		for i, in := range ins {
			f[in.Name] = ts[i]
		}
		out = append(out, f)
	}
	rng := rand.New(rand.NewPCG(29, 1))
	f := map[string]*graph.Tensor{}
	for _, in := range ins {
		dims, ok := in.Type.Shape.Ints()
		if !ok {
			return out // symbolic dims: the test inputs only
		}
		dt := in.Type.DType
		if dt == graph.Undefined {
			dt = graph.Float32
		}
		x, err := tensorio.Random(dt, dims, rng)
		if err != nil {
			return out
		}
		f[in.Name] = x
	}
	return append(out, f)
}

// sameOutput: equal dtype and shape, floats within rtol 1e-3 and an atol
// of 1e-4 of the output's largest magnitude (folding a BatchNormalization
// into the weights rounds differently), NaN where NaN, other types equal.
func sameOutput(got, want *graph.Tensor) error {
	if got == nil {
		return fmt.Errorf("missing")
	}
	if got.DType != want.DType || !graph.SameShape(got.Shape, want.Shape) {
		return fmt.Errorf("%v%v, want %v%v", got.DType, got.Shape, want.DType, want.Shape)
	}
	if want.DType != graph.Float32 {
		return onnxtest.Compare(got, want, 0, 0)
	}
	w := graph.Data[float32](want)
	big := 0.0
	for _, v := range w {
		if a := math.Abs(float64(v)); a > big && !math.IsInf(a, 0) {
			big = a
		}
	}
	return onnxtest.Compare(got, want, 1e-3, 1e-4*max(big, 1e-3))
}
