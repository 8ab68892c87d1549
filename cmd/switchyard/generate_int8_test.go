package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// q80Stories writes a copy of stories260K_f32.gguf with the matrices whose
// rows are whole blocks of 32 quantized to Q8_0 (as llama.cpp does).
func q80Stories(t *testing.T, dir string) string {
	t.Helper()
	f, err := gguf.ReadFile(filepath.Join(dir, "stories260K_f32.gguf"))
	must(t, err)
	meta := map[string]any{}
	for _, k := range f.Keys {
		meta[k] = f.Meta[k]
	}
	var ts []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		v, err := f.Float32s(ti)
		must(t, err)
		wt := gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: gguf.EncodeF32(v)}
		if len(ti.Dims) == 2 && ti.Dims[0]%32 == 0 {
			wt.Data, err = gguf.QuantizeQ8_0(v)
			must(t, err)
			wt.Type = gguf.TypeQ8_0
		}
		ts = append(ts, wt)
	}
	out := filepath.Join(t.TempDir(), "stories260K_Q8_0.gguf")
	fh, err := os.Create(out)
	must(t, err)
	defer fh.Close()
	must(t, gguf.Write(fh, meta, ts))
	return out
}

// TestGenerateInt8Precision: `generate --precision int8` on a Q8_0 copy
// of stories260K, native in front of cpu, says on stderr that native's
// partitions compute in int8 and still writes llama2.c's golden text
// (all 64 tokens agree); without the flag a GGUF takes int8 too (llama.cpp's
// default, said the same way); --precision float32 keeps float32 and says
// nothing; an unknown precision is refused.
func TestGenerateInt8Precision(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	must(t, err)
	var g struct {
		Prompt string
		Text   string
	}
	must(t, json.Unmarshal(raw, &g))
	model := q80Stories(t, dir)
	out, code := sy(t, "generate", model, "--backends", "native,cpu", "--precision", "int8", "--prompt", g.Prompt, "--steps", "64")
	if code != 0 || !strings.Contains(out, g.Text+"\n") || !strings.Contains(out, "compute on native in int8") {
		t.Fatalf("--precision int8: exit %d:\n%s\nwant the text\n%s", code, out, g.Text)
	}
	out, code = sy(t, "generate", model, "--backends", "native,cpu", "--prompt", g.Prompt, "--steps", "64")
	if code != 0 || !strings.Contains(out, g.Text+"\n") || !strings.Contains(out, "compute on native in int8") {
		t.Fatalf("default: exit %d:\n%s", code, out)
	}
	out, code = sy(t, "generate", model, "--backends", "native,cpu", "--precision", "float32", "--prompt", g.Prompt, "--steps", "64")
	if code != 0 || !strings.Contains(out, g.Text+"\n") || strings.Contains(out, "reduced precision") {
		t.Fatalf("float32: exit %d:\n%s", code, out)
	}
	if out, code := sy(t, "generate", model, "--precision", "int4", "--prompt", "x"); code == 0 || !strings.Contains(out, "unknown precision") {
		t.Fatalf("--precision int4: exit %d:\n%s", code, out)
	}
}
