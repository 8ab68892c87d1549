package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

// kvModel: y = Concat(past, cur) along axis 1, with past's length symbolic,
// as a KV cache is.
func kvModel(t *testing.T) string {
	t.Helper()
	vi := func(name string, dims ...graph.Dim) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: dims}}
	}
	g := &graph.Graph{
		Name:    "kv",
		Inputs:  []graph.ValueInfo{vi("past", graph.Dim{Value: 2}, graph.Dim{Param: "past_len"}), vi("cur", graph.Dim{Value: 2}, graph.Dim{Value: 3})},
		Outputs: []graph.ValueInfo{vi("y")},
		Nodes: []*graph.Node{{OpType: "Concat", Inputs: []string{"past", "cur"}, Outputs: []string{"y"},
			Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 1}}}},
	}
	path := filepath.Join(t.TempDir(), "kv.onnx")
	must(t, os.WriteFile(path, onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}), 0o644))
	return path
}

// TestRunDimZero: --dim NAME=0 gives a zero-length dim (an empty KV past);
// it was silently taken as 1.
func TestRunDimZero(t *testing.T) {
	path := kvModel(t)
	out, code := sy(t, "run", path, "--backends", "cpu", "--dim", "past_len=0")
	if code != 0 || !strings.Contains(out, "y: float32[2 3]") {
		t.Fatalf("past_len=0: exit %d:\n%s", code, out)
	}
	out, code = sy(t, "run", path, "--backends", "cpu")
	if code != 0 || !strings.Contains(out, "y: float32[2 4]") {
		t.Fatalf("default past_len 1: exit %d:\n%s", code, out)
	}
	if out, code := sy(t, "run", path, "--dim", "past_len=-1"); code == 0 || !strings.Contains(out, "past_len=-1") {
		t.Fatalf("negative --dim accepted: exit %d:\n%s", code, out)
	}
}

// TestMemoryBudgetFlag: --memory-budget bounds a model (the demo does not
// fit in 1 KiB: a clear error naming the initializer or node and the
// limit), and is refused when malformed.
func TestMemoryBudgetFlag(t *testing.T) {
	for _, cmd := range [][]string{{"run"}, {"bench", "--runs", "1", "--warmup", "0", testDir(t, t.TempDir(), "demo", graph.MustFromSlice([]int{1}, []float32{0}))}} {
		args := append(append([]string{}, cmd...), "--backends", "cpu", "--memory-budget", "1KiB")
		out, code := sy(t, args...)
		// refused at load (a weight larger than the budget: the engine
		// passes it as the tensor limit, naming the initializer) or at run
		// time (naming the node and the budget)
		atLoad := strings.Contains(out, "initializer") && strings.Contains(out, "limit 1024")
		atRun := strings.Contains(out, "memory budget exhausted") && strings.Contains(out, "1.0 KiB budget") && strings.Contains(out, "node")
		if code == 0 || !atLoad && !atRun {
			t.Errorf("%s with a 1 KiB budget: exit %d:\n%s", cmd[0], code, out)
		}
	}
	if out, code := sy(t, "run", "--backends", "cpu", "--memory-budget", "64MiB"); code != 0 {
		t.Errorf("64 MiB: exit %d:\n%s", code, out)
	}
	if out, code := sy(t, "run", "--memory-budget", "lots"); code == 0 || !strings.Contains(out, "--memory-budget") {
		t.Errorf("bad size accepted: exit %d:\n%s", code, out)
	}
}

func TestParseMemoryBudget(t *testing.T) {
	for in, want := range map[string]int64{"auto": 0, "": 0, "unlimited": -1, "1024": 1024, "4GiB": 4 << 30, "2GB": 2e9, "512MiB": 512 << 20, "3k": 3 << 10, "1 TiB": 1 << 40} {
		if got, err := parseMemoryBudget(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-5", "GiB", "12XB", "99999999999TiB", "1.5GiB"} {
		if _, err := parseMemoryBudget(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}
