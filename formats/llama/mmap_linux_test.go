package llama

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// q41 is rows rows of 32 elements in Q4_1 blocks.
func q41(rows, seed int) []byte {
	raw := make([]byte, 20*rows)
	for r := 0; r < rows; r++ {
		blk := raw[20*r:]
		blk[1] = 0x2c // d = 2^-4 as float16 (0x2c00), m = 0
		for j := 4; j < 20; j++ {
			blk[j] = byte(r*31 + j*7 + seed)
		}
	}
	return raw
}

// q41GGUF is a one-layer GGUF of dimension 32 whose matrices and token
// embedding (and so its tied classifier) are Q4_1, which the importer
// keeps in ggml's block layout.
func q41GGUF(t *testing.T, vocab int) []byte {
	t.Helper()
	f32 := gguf.EncodeF32(make([]float32, 32))
	ts := []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{32, uint64(vocab)}, Type: gguf.TypeQ4_1, Data: q41(vocab, 0)},
		{Name: "output_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
		{Name: "blk.0.attn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32},
		{Name: "blk.0.ffn_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: f32}}
	for i, name := range []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"} {
		ts = append(ts, gguf.WriteTensor{Name: "blk.0." + name + ".weight", Dims: []uint64{32, 32}, Type: gguf.TypeQ4_1, Data: q41(32, i+1)})
	}
	var buf bytes.Buffer
	err := gguf.Write(&buf, map[string]any{"general.architecture": "llama", "llama.embedding_length": uint32(32), "llama.block_count": uint32(1),
		"llama.feed_forward_length": uint32(32), "llama.attention.head_count": uint32(2), "llama.context_length": uint32(8)}, ts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGGUFWeightsAliasTheMapping: a GGUF loaded from a file keeps its
// block-quantized weights as slices of a read-only mapping of that file
// (the page cache's pages), not as a copy on the heap.
func TestGGUFWeightsAliasTheMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	data := q41GGUF(t, 6)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := formats.LoadFile(path, formats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := f.Tensor("token_embd.weight")
	want := f.Raw(ti)
	checked := 0
	for _, name := range []string{"tok_embeddings.q", "output.q"} { // both the embedding table
		init, ok := m.Graph.Initializers[name]
		if !ok {
			t.Fatalf("no initializer %s (the Q4_1 table should stay in its block layout)", name)
		}
		b := graph.Data[uint8](init)
		if !bytes.Equal(b, want) {
			t.Fatalf("%s: the initializer's bytes are not the tensor's", name)
		}
		addr := uintptr(unsafe.Pointer(&b[0]))
		perms, off, ok := mappingOf(t, addr, path)
		if !ok {
			t.Fatalf("%s at %#x is not in a mapping of %s: the weights were copied", name, addr, path)
		}
		if perms[1] != '-' {
			t.Errorf("%s: the mapping is %s, want it read-only", name, perms)
		}
		if got := off + uint64(len(want)); got > uint64(len(data)) || !bytes.Equal(data[off:got], want) {
			t.Errorf("%s maps file offset %d, which does not hold the tensor", name, off)
		}
		checked++
	}
	// and the layers' matrices
	for name, init := range m.Graph.Initializers {
		if strings.HasPrefix(name, "layers.0.") && strings.HasSuffix(name, ".q") {
			b := graph.Data[uint8](init)
			if _, _, ok := mappingOf(t, uintptr(unsafe.Pointer(&b[0])), path); !ok {
				t.Errorf("%s is not in the mapping of %s", name, path)
			}
			checked++
		}
	}
	if checked != 2+7 {
		t.Fatalf("checked %d initializers, want 9", checked)
	}
}

// mappingOf finds addr in /proc/self/maps: the permissions of the
// mapping of file that holds it and the file offset addr maps.
func mappingOf(t *testing.T, addr uintptr, file string) (perms string, off uint64, ok bool) {
	t.Helper()
	mf, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer mf.Close()
	want, err := filepath.EvalSymlinks(file)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(mf)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[5] != want {
			continue
		}
		lo, hi, _ := strings.Cut(fs[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		base, err3 := strconv.ParseUint(fs[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("bad maps line %q", sc.Text())
		}
		if uint64(addr) >= start && uint64(addr) < end {
			return fs[1], base + uint64(addr) - start, true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return "", 0, false
}
