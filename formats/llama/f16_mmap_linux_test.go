package llama

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// TestHalfWeightsAliasTheMapping: F16 and BF16 matrices and token
// embeddings loaded from a file are slices of its read-only mapping (the
// page cache's pages), not float32 copies on the heap: no initializer of
// the graph is a float32 matrix.
func TestHalfWeightsAliasTheMapping(t *testing.T) {
	for _, typ := range []uint32{gguf.TypeF16, gguf.TypeBF16} {
		half := func(rows, seed int) []byte {
			b := make([]byte, 2*32*rows)
			for i := 0; i < 32*rows; i++ {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(0x3000+(i*37+seed*11)%0x800))
			}
			return b
		}
		f32 := gguf.EncodeF32(make([]float32, 32))
		ts := []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{32, 6}, Type: typ, Data: half(6, 0)},
			{Name: "output_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
			{Name: "blk.0.attn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
			{Name: "blk.0.ffn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32}}
		for i, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
			ts = append(ts, gguf.WriteTensor{Name: "blk.0." + name + ".weight", Dims: []uint64{32, 32}, Type: typ, Data: half(32, i+1)})
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
				t.Errorf("%s %s: a float32 initializer of %d values: a widened copy", gguf.TypeName(typ), name, init.Len())
			}
			if !strings.HasSuffix(name, ".q") {
				continue
			}
			b := graph.Data[uint8](init)
			perms, _, ok := mappingOf(t, uintptr(unsafe.Pointer(&b[0])), path)
			if !ok {
				t.Errorf("%s %s is not in the mapping of %s: the weights were copied", gguf.TypeName(typ), name, path)
			} else if perms[1] != '-' {
				t.Errorf("%s: the mapping is %s, want it read-only", name, perms)
			}
			checked++
		}
		if checked != 2+7 { // the embedding table, its tied classifier, 7 matrices
			t.Fatalf("%s: checked %d initializers, want 9", gguf.TypeName(typ), checked)
		}
	}
}
