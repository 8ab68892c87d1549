package llama

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestBuildBatchInterface: the batched form of stories260K has the batch
// dim in front of every input and output, past_sequence_length per
// sequence, the attention's total length the batch's largest, and no
// Reshape left pinning the batch to 1; batchify refuses a graph without
// the SharedCache attention. (llm's TestBatchedDecoderGolden runs it.)
func TestBuildBatchInterface(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadLlama2c(raw)
	if err != nil {
		t.Fatal(err)
	}
	m, err := BuildBatch(w)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Graph
	for _, v := range append(append([]graph.ValueInfo{}, g.Inputs...), g.Outputs...) {
		if v.Name == LogitsRowsInput {
			continue // one count for the whole batch
		}
		if len(v.Type.Shape) == 0 || v.Type.Shape[0].Param != BatchDim {
			t.Errorf("%s: shape %v, want the leading dim %q", v.Name, v.Type.Shape, BatchDim)
		}
	}
	for _, in := range g.Inputs {
		if in.Name == PastLengthInput && len(in.Type.Shape) != 1 {
			t.Errorf("%s has shape %v, want [batch]", in.Name, in.Type.Shape)
		}
	}
	reduce := 0
	for _, n := range g.Nodes {
		switch n.OpType {
		case "ReduceMax":
			reduce++
		case "Reshape":
			if s := g.Initializers[n.Inputs[1]]; s != nil && s.Len() > 0 && s.Int64At(0) == 1 {
				t.Errorf("Reshape %s still makes the batch 1", n.Name)
			}
		}
	}
	if reduce != 1 || m.Metadata["llama.batch"] != "1" {
		t.Errorf("%d ReduceMax nodes, metadata %v", reduce, m.Metadata)
	}
	c, err := BuildWith(w, ConcatCache)
	if err != nil {
		t.Fatal(err)
	}
	if err := batchify(c); err == nil || !strings.Contains(err.Error(), "SharedCache") {
		t.Fatalf("batchify of a ConcatCache graph: %v", err)
	}
}
