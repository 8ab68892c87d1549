package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

func TestExecuTorchCLI(t *testing.T) {
	et := shared.Path(t, "testdata/executorch")
	// run: inputs bound in order, .ptd found beside the program.
	in := filepath.Join(t.TempDir(), "x.npy")
	var buf bytes.Buffer
	must(t, tensorio.EncodeNPY(&buf, graph.MustFromSlice([]int{3}, []float32{1, 2, 3})))
	must(t, os.WriteFile(in, buf.Bytes(), 0o644))
	out, code := sy(t, "run", filepath.Join(et, "add_one.pte"), "--input", in, "--json")
	if code != 0 || !strings.Contains(out, `"mean": 3,`) || !strings.Contains(out, `"min": 2,`) || !strings.Contains(out, `"max": 4,`) {
		t.Fatalf("run add_one: %d %s", code, out)
	}
	out, code = sy(t, "run", filepath.Join(et, "more/xor.pte"), "--method", "__et_training_parameters_index_forward")
	if code != 0 || !strings.Contains(out, "int64[] [6]") {
		t.Fatalf("run --method: %d %s", code, out)
	}
	// run refuses a QNN-delegated method with the reason.
	out, code = sy(t, "run", filepath.Join(et, "more/stories260k_hybrid_llama_qnn.pte"), "--method", "kv_forward")
	if code == 0 || !strings.Contains(out, "delegate 0 for backend QnnBackend") {
		t.Fatalf("run qnn: %d %s", code, out)
	}
	// inspect lists methods, the delegate and its segment even so.
	out, code = sy(t, "inspect", filepath.Join(et, "more/stories260k_hybrid_llama_qnn.pte"))
	for _, w := range []string{"format: executorch", "method kv_forward", "method prefill_forward", "backend QnnBackend, blob in segment 1 (1331456 bytes)", "method kv_forward not runnable", "graph: not loadable"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("inspect qnn lacks %q (exit %d)", w, code)
		}
	}
	// verify runs a bundled program's cases.
	out, code = sy(t, "verify", filepath.Join(et, "bundled_program.bpte"))
	if code != 0 || !strings.Contains(out, "ok bundled_program.bpte") {
		t.Fatalf("verify bpte: %d %s", code, out)
	}
}
