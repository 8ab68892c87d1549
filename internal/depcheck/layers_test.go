package depcheck_test

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/depcheck"
)

// in says whether an import path of this module lies under one of the
// folders given (relative to the module root).
func in(dep string, dirs ...string) bool {
	rel, ok := strings.CutPrefix(dep, depcheck.Module+"/")
	if !ok {
		return false
	}
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// TestLayers is the layering of DESIGN.md: packages depend downward only.
// From the bottom: core (graph, ops, kernels, exec, opcost), hal, the
// backends (plugins), partitioner, formats, runtime, the app API, llm and
// the command.
func TestLayers(t *testing.T) {
	rules := []struct {
		pkg    string
		forbid func(dep string) bool
		what   string
	}{
		{"../../hal", func(d string) bool { return in(d, "core") && !in(d, "core/graph") }, "the HAL contract links only core/graph of core"},
		{"../../hal", func(d string) bool { return in(d, "runtime", "formats", "partitioner", "plugins", "backends", "llm") }, "the HAL links nothing above it"},
		{"../../core/...", func(d string) bool {
			return in(d, "hal", "runtime", "formats", "partitioner", "plugins", "backends", "llm", "conformance", "sdk")
		}, "core sits below the HAL"},
		{"../../plugins/...", func(d string) bool {
			return in(d, "runtime", "partitioner", "llm", "conformance") || d == depcheck.Module
		}, "a backend never links the runtime, the partitioner or the app API"},
		{"../../formats/...", func(d string) bool {
			return in(d, "runtime", "partitioner", "plugins", "backends", "llm", "hal") || d == depcheck.Module
		}, "importers link only the IR and the schemas"},
		{"../../runtime", func(d string) bool { return in(d, "plugins", "backends", "llm", "cmd") || d == depcheck.Module }, "the runtime knows no backend"},
		{"../../partitioner/...", func(d string) bool { return in(d, "runtime", "plugins", "formats", "llm") || d == depcheck.Module }, "the partitioner sees backends through the HAL only"},
		{"../..", func(d string) bool { return in(d, "plugins") && !in(d, "plugins/cpu") }, "the app API links only the cpu fallback (backends/all links the rest)"},
	}
	for _, r := range rules {
		if bad := depcheck.Forbidden(t, r.pkg, r.forbid); len(bad) > 0 {
			t.Errorf("%s: %s, but it links %v", r.pkg, r.what, bad)
		}
	}
	for _, gone := range []string{"core/runtime", "core/formats", "core/onnx", "core/ops/halkit"} {
		if _, err := os.Stat("../../" + gone); err == nil {
			t.Errorf("%s exists: it moved (runtime/, formats/, hal/halkit)", gone)
		}
	}
}

// TestLayersCanFail: the rule sees a forbidden link where there is one.
func TestLayersCanFail(t *testing.T) {
	if bad := depcheck.Forbidden(t, "../../backends/all", func(d string) bool { return in(d, "plugins") }); len(bad) < 5 {
		t.Fatalf("backends/all links %v, expected every in-tree backend", bad)
	}
}
