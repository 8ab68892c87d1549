package vulkan_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/core/onnxtest"
	"github.com/switchyard-hal/switchyard/core/runtime"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
)

// cpuExpected lists the onnx-node tests that fail on cpu alone
// (core/onnxtest/testdata/expected.txt).
func cpuExpected(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "core", "onnxtest", "testdata", "expected.txt"))
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

// The ONNX node tests with vulkan in front of cpu, two at a time (so
// executables run concurrently on the queue): no failure beyond cpu's.
func TestONNXNodeSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dev, _ := device(t, vulkan.Options{})
	root := shared.Path(t, "testdata/onnx-node")
	exp := cpuExpected(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "test_*"))
	opt := onnxtest.DefaultOptions()
	opt.Runtime = &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}}
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
		t.Errorf("fails with vulkan but not on cpu: %s", b)
	}
	t.Logf("onnx-node with vulkan+cpu: %d passed of %d", pass, len(results))
}
