package llm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// greedy runs model greedily on the golden prompt and returns the tokens.
func greedy(t *testing.T, path string, tok llm.Tokenizer, steps int) (*llm.Result, string) {
	t.Helper()
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	res, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: steps}, func(tk llm.Token) error {
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.SharedCache() == strings.HasSuffix(path, ".onnx") {
		t.Errorf("%s: shared (in-place) cache %v; want it for the graphs formats/llama builds, not for the ONNX export", path, d.SharedCache())
	}
	if c := d.ContextLength(); strings.HasSuffix(path, ".onnx") != (c == 0) || c != 0 && c != 512 {
		t.Errorf("%s: context length %d from the metadata", path, c)
	}
	if d.ContextLength() > 0 {
		_, err := d.Generate(ctx, tok, "x", llm.Options{Steps: 513}, func(llm.Token) error { return nil })
		if !errors.Is(err, llm.ErrContext) {
			t.Errorf("%s: 513 positions in a 512 context: %v", path, err)
		}
	}
	return res, text.String()
}

// agree is the length of the common prefix of a and b.
func agree(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// TestFormatsReproduceLlama2c: the Llama graph Switchyard builds from the
// llama2.c float32 checkpoint and from the GGUF file gives the reference
// program's 64 greedy tokens exactly; the int8 export (and GGUF Q8_0 and
// Q4_0 copies quantized here, weights kept quantized in the graph) agree
// with them for at least the stated number of positions.
func TestFormatsReproduceLlama2c(t *testing.T) {
	g, dir := readGolden(t)
	tok512, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	ggufPath := filepath.Join(dir, "stories260K_f32.gguf")
	ggTok, err := llm.LoadGGUFTokenizer(ggufPath)
	if err != nil {
		t.Fatal(err)
	}
	q8 := quantizeGGUF(t, ggufPath, gguf.TypeQ8_0)
	q4 := quantizeGGUF(t, ggufPath, gguf.TypeQ4_0)
	for _, c := range []struct {
		name     string
		path     string
		tok      llm.Tokenizer
		minAgree int
	}{
		{"bin", filepath.Join(dir, "stories260K.bin"), tok512, 64},
		{"gguf", ggufPath, ggTok, 64},
		{"q80.bin", filepath.Join(dir, "stories260K_q80.bin"), tok512, 60},
		{"gguf-Q8_0", q8, ggTok, 60},
		{"gguf-Q4_0", q4, ggTok, 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, text := greedy(t, c.path, c.tok, g.Steps)
			n := agree(res.Tokens, g.Tokens)
			t.Logf("%s: the first %d of %d tokens agree with llama2.c; decode %.0f tokens/s", c.name, n, len(g.Tokens), res.TokensPerSecond())
			if c.minAgree == len(g.Tokens) {
				if !slices.Equal(res.Tokens, g.Tokens) || text != g.Text {
					t.Fatalf("tokens\n got %v\nwant %v\ntext %q", res.Tokens, g.Tokens, text)
				}
			}
			if n < c.minAgree {
				t.Fatalf("the first %d tokens agree, want at least %d: %v", n, c.minAgree, res.Tokens)
			}
		})
	}
}

// quantizeGGUF writes a copy of a float32 GGUF with every matrix whose
// rows are whole 32-element blocks quantized to typ (llama.cpp keeps the
// others in float too).
func quantizeGGUF(t *testing.T, src string, typ uint32) string {
	t.Helper()
	f, err := gguf.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, k := range f.Keys {
		switch v := f.Meta[k].(type) {
		case uint64:
			meta[k] = uint32(v)
		case int64:
			meta[k] = int32(v)
		case float64:
			meta[k] = float32(v)
		case []any:
			arr := make([]any, len(v))
			for i, e := range v {
				switch x := e.(type) {
				case uint64:
					arr[i] = int32(x)
				case int64:
					arr[i] = int32(x)
				case float64:
					arr[i] = float32(x)
				default:
					arr[i] = x
				}
			}
			meta[k] = arr
		default:
			meta[k] = v
		}
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

// TestGGUFTokenizer: the tokenizer a GGUF file carries encodes the
// golden prompt to the golden ids and decodes the golden tokens to the
// golden text, like llama2.c's tok512.bin.
func TestGGUFTokenizer(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadGGUFTokenizer(filepath.Join(dir, "stories260K_f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(g.Prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, g.PromptTokens) {
		t.Fatalf("Encode = %v, want %v", ids, g.PromptTokens)
	}
	var sb strings.Builder
	prev := tok.BOS()
	for _, id := range g.Tokens {
		sb.WriteString(tok.Piece(prev, id))
		prev = id
	}
	if sb.String() != g.Text {
		t.Fatalf("decoded %q, want %q", sb.String(), g.Text)
	}
	if _, err := llm.NewLlama2cTokenizer([]string{"a"}, nil); err == nil {
		t.Fatal("a one-piece vocabulary without scores was accepted")
	}
}

// TestSharedCacheContext: LoadOptions.ContextLength caps a built
// decoder's cache; a generation that fits gives the golden tokens, one
// position more is refused before anything runs, and a step past the
// buffer is refused, not written out of bounds.
func TestSharedCacheContext(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{ContextLength: 16})
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	if !d.SharedCache() || d.ContextLength() != 16 {
		t.Fatalf("shared %v, context %d; want a shared cache of 16", d.SharedCache(), d.ContextLength())
	}
	for _, in := range m.Inputs() {
		if strings.HasPrefix(in.Name, "past_key") && in.Shape[2] != 16 {
			t.Fatalf("%s is %v: the cache buffer is not 16 positions", in.Name, in.Shape)
		}
	}
	res, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: 16}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if n := agree(res.Tokens, g.Tokens); n != 16 {
		t.Errorf("%d of 16 tokens agree with llama2.c", n)
	}
	if _, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: 17}, func(llm.Token) error { return nil }); !errors.Is(err, llm.ErrContext) {
		t.Errorf("17 positions in a 16-position cache: %v", err)
	}
	if err := llm.StepPast(ctx, d, 15, []int{1, 2}); !errors.Is(err, llm.ErrContext) {
		t.Errorf("two tokens after 15 cached in 16: %v", err)
	}
}
