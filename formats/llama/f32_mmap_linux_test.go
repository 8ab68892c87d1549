package llama

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// TestF32WeightsAliasTheMapping: F32 matrices and token embeddings loaded
// from a file are slices of its read-only mapping in the file's own
// [rows, cols] layout (BlockQuantMatMul/BlockQuantGather of type F32),
// not float32 copies, transposes or packed panels on the heap: the only
// float32 initializers are the 1-D norms and the rotary tables.
func TestF32WeightsAliasTheMapping(t *testing.T) {
	vals := func(rows, seed int) []byte {
		v := make([]float32, 32*rows)
		for i := range v {
			v[i] = float32(math.Sin(float64(i*37+seed*11))) / 8
		}
		return gguf.EncodeF32(v)
	}
	f32 := gguf.EncodeF32(make([]float32, 32))
	ts := []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{32, 6}, Type: gguf.TypeF32, Data: vals(6, 0)},
		{Name: "output_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
		{Name: "blk.0.attn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
		{Name: "blk.0.ffn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32}}
	for i, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
		ts = append(ts, gguf.WriteTensor{Name: "blk.0." + name + ".weight", Dims: []uint64{32, 32}, Type: gguf.TypeF32, Data: vals(32, i+1)})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, map[string]any{"general.architecture": "llama", "llama.embedding_length": uint32(32), "llama.block_count": uint32(1),
		"llama.feed_forward_length": uint32(32), "llama.attention.head_count": uint32(2), "llama.context_length": uint32(8)}, ts); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := formats.LoadFile(path, formats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for name, init := range m.Graph.Initializers {
		if init.DType == graph.Float32 && init.Len() >= 32*6 {
			t.Errorf("%s: a float32 initializer of %d values: a copy of a matrix", name, init.Len())
		}
		if !strings.HasSuffix(name, ".q") {
			continue
		}
		b := graph.Data[uint8](init)
		perms, _, ok := mappingOf(t, uintptr(unsafe.Pointer(&b[0])), path)
		if !ok {
			t.Errorf("%s is not in the mapping of %s: the weights were copied", name, path)
		} else if perms[1] != '-' {
			t.Errorf("%s: the mapping is %s, want it read-only", name, perms)
		}
		checked++
	}
	if checked != 2+7 { // the embedding table, its tied classifier, 7 matrices
		t.Fatalf("checked %d initializers, want 9", checked)
	}
	for _, n := range m.Graph.Nodes {
		w := map[string]int{"MatMul": 1, "Gemm": 1, "Transpose": 0}
		if i, ok := w[n.OpType]; ok && i < len(n.Inputs) {
			if _, ok := m.Graph.Initializers[n.Inputs[i]]; ok {
				t.Errorf("%s %s of a weight: the F32 matrices must be read in place", n.OpType, n.Name)
			}
		}
	}
}
