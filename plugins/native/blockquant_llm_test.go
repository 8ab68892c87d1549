//go:build amd64

// Built on amd64 only: it loads models through the switchyard package, whose
// vendor backends link purego, which makes a cgo-free linux/arm64 test binary
// dynamically linked, and qemu-user (CI's arm64 run) has no arm64 loader.

package native_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// quantizedStories writes a copy of stories260K_f32.gguf with every matrix
// whose rows are whole 32-element blocks quantized to typ (as llm's
// format test and llama.cpp do; the others stay float32).
func quantizedStories(t *testing.T, dir string, typ uint32) string {
	t.Helper()
	f, err := gguf.ReadFile(filepath.Join(dir, "stories260K_f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, k := range f.Keys {
		meta[k] = f.Meta[k]
	}
	var ts []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		v, err := f.Float32s(ti)
		if err != nil {
			t.Fatal(err)
		}
		wt := gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: gguf.EncodeF32(v)}
		if len(ti.Dims) == 2 && ti.Dims[0]%32 == 0 {
			q := gguf.QuantizeQ8_0
			if typ == gguf.TypeQ4_0 {
				q = gguf.QuantizeQ4_0
			}
			if wt.Data, err = q(v); err != nil {
				t.Fatal(err)
			}
			wt.Type = typ
		}
		ts = append(ts, wt)
	}
	out := filepath.Join(t.TempDir(), "stories260K_"+gguf.TypeName(typ)+".gguf")
	fh, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := gguf.Write(fh, meta, ts); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQuantizedStoriesOnNative: GGUF Q8_0 and Q4_0 copies of stories260K
// with native in front of cpu: every BlockQuantMatMul and every
// RotaryEmbedding runs on native, and greedy decoding agrees with
// llama2.c's golden tokens — the Q8_0 copy on all 64 (as on the reference
// kernels), the Q4_0 copy on at least the first 20 (its measured count is
// logged: 27). With Options.Precision int8 (BlockQuantMatMul's
// activations quantized, the partitions report it) the Q8_0 copy still
// agrees on all 64 and the Q4_0 copy on at least 24 (measured: 27).
func TestQuantizedStoriesOnNative(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Steps  int   `json:"steps"`
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil || len(golden.Tokens) != golden.Steps {
		t.Fatalf("golden file: %v", err)
	}
	for _, c := range []struct {
		typ       uint32
		precision switchyard.Precision
		minAgree  int
	}{
		{gguf.TypeQ8_0, switchyard.PrecisionFloat32, 64}, {gguf.TypeQ4_0, switchyard.PrecisionFloat32, 20},
		{gguf.TypeQ8_0, switchyard.PrecisionInt8, 64}, {gguf.TypeQ4_0, switchyard.PrecisionInt8, 24},
		// no precision chosen: a quantized GGUF's default, int8
		{gguf.TypeQ8_0, "", 64}, {gguf.TypeQ4_0, "", 24},
	} {
		name := gguf.TypeName(c.typ) + "_" + string(c.precision)
		if c.precision == "" {
			name = gguf.TypeName(c.typ) + "_default"
		}
		t.Run(name, func(t *testing.T) {
			path := quantizedStories(t, dir, c.typ)
			tok, err := llm.LoadGGUFTokenizer(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Precision: c.precision})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			int8Parts := 0
			for _, p := range m.Plan().Partitions {
				if p.Precision == string(switchyard.PrecisionInt8) {
					int8Parts++
				} else if p.Precision != "" {
					t.Errorf("partition %d reports precision %q", p.ID, p.Precision)
				}
			}
			if (int8Parts > 0) != (c.precision != switchyard.PrecisionFloat32) {
				t.Errorf("%d partitions report int8 under precision %q", int8Parts, c.precision)
			}
			for _, n := range m.Plan().Nodes {
				if (n.OpType == "BlockQuantMatMul" || n.OpType == "RotaryEmbedding") && n.Backend != "native" {
					t.Errorf("%s %s on %s: %+v", n.OpType, n.Name, n.Backend, n.Declined)
				}
			}
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: golden.Steps}, func(llm.Token) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for n < min(len(res.Tokens), len(golden.Tokens)) && res.Tokens[n] == golden.Tokens[n] {
				n++
			}
			t.Logf("%s on native (precision %q): the first %d of %d tokens agree with llama2.c", gguf.TypeName(c.typ), c.precision, n, len(golden.Tokens))
			if n < c.minAgree {
				t.Fatalf("the first %d tokens agree, want at least %d: %v", n, c.minAgree, res.Tokens)
			}
		})
	}
}
