package backendtest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// NodeSuite runs the ONNX node tests (../shared/testdata/onnx-node) with
// dev in front of cpu, two at a time (so executables also run
// concurrently), and fails every test that fails there but not on cpu
// alone (the onnx-node entries of internal/onnxtest/testdata/expected.txt).
// With ignoreCosts every node dev claims runs on it, whatever the cost
// estimates say. Skipped with -short.
func NodeSuite(t *testing.T, dev *hal.Device, ignoreCosts bool) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short")
	}
	root := shared.Path(t, "testdata/onnx-node")
	exp := cpuExpected(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "test_*"))
	opt := onnxtest.DefaultOptions()
	opt.Runtime = &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: ignoreCosts}}
	results := make([]onnxtest.Result, len(dirs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, d := range dirs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = onnxtest.RunDir(context.Background(), d, opt)
		}()
	}
	wg.Wait()
	pass := 0
	var bad []string
	for _, r := range results {
		switch {
		case r.Status == onnxtest.Pass:
			pass++
		case r.Status == onnxtest.Fail && !exp[r.Name]:
			bad = append(bad, r.Name+": "+r.Reason)
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("fails with %s but not on cpu: %s", dev.Name(), b)
	}
	t.Logf("onnx-node with %s+cpu: %d passed of %d", dev.Name(), pass, len(results))
}

// cpuExpected reads the onnx-node entries of the repository's
// expected-failures file, found from the working directory up.
func cpuExpected(t *testing.T) map[string]bool {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod)")
		}
		dir = parent
	}
	f, err := os.Open(filepath.Join(dir, "internal", "onnxtest", "testdata", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "fail onnx-node/"); ok {
			out[strings.Fields(name)[0]] = true
		}
	}
	return out
}
