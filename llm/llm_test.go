package llm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

type golden struct {
	Prompt       string `json:"prompt"`
	Steps        int    `json:"steps"`
	PromptTokens []int  `json:"prompt_tokens"`
	Tokens       []int  `json:"tokens"`
	Text         string `json:"text"`
}

func readGolden(t *testing.T) (golden, string) {
	t.Helper()
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Tokens) != g.Steps || len(g.PromptTokens) < 2 {
		t.Fatalf("golden file: %d tokens for %d steps", len(g.Tokens), g.Steps)
	}
	return g, dir
}

func TestLlama2cTokenizerEncodesThePrompt(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode(g.Prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, g.PromptTokens) {
		t.Fatalf("Encode(%q) = %v, want %v", g.Prompt, ids, g.PromptTokens)
	}
	// Decoding the golden tokens gives the golden text.
	var sb strings.Builder
	prev := tok.BOS()
	for _, id := range g.Tokens {
		sb.WriteString(tok.Piece(prev, id))
		prev = id
	}
	if sb.String() != g.Text {
		t.Fatalf("decoded %q, want %q", sb.String(), g.Text)
	}
	// Characters outside the vocabulary fall back to their bytes.
	ids, err = tok.Encode("é€", false)
	if err != nil {
		t.Fatal(err)
	}
	var back strings.Builder
	for i, id := range ids {
		p := -1
		if i > 0 {
			p = ids[i-1]
		}
		back.WriteString(tok.Piece(p, id))
	}
	if strings.TrimPrefix(back.String(), " ") != "é€" {
		t.Fatalf("byte fallback round trip: %v → %q", ids, back.String())
	}
	if _, err := tok.Encode(string([]byte{0xff}), false); err == nil {
		t.Fatal("invalid UTF-8 accepted")
	}
}

func TestLlama2cTokenizerRefusesHostileFiles(t *testing.T) {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, int32(4))
	binary.Write(&b, binary.LittleEndian, float32(0))
	binary.Write(&b, binary.LittleEndian, int32(1<<30)) // longer than the longest
	if _, err := llm.ReadLlama2cTokenizer(bytes.NewReader(b.Bytes()), 10); err == nil {
		t.Fatal("a token longer than the declared maximum was accepted")
	}
	if _, err := llm.ReadLlama2cTokenizer(bytes.NewReader(b.Bytes()[:4]), 10); err == nil {
		t.Fatal("a truncated file was accepted")
	}
	if _, err := llm.ReadLlama2cTokenizer(bytes.NewReader(nil), math.MaxInt32); err == nil {
		t.Fatal("a huge vocabulary size was accepted")
	}
}

// TestGreedyMatchesLlama2c runs stories260K_kv.onnx greedily and compares
// every token with the reference llama2.c program's output.
func TestGreedyMatchesLlama2c(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K_kv.onnx"), &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	res, err := d.Generate(ctx, tok, g.Prompt, llm.Options{Steps: g.Steps}, func(tk llm.Token) error {
		text.WriteString(tk.Text)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, g.Tokens) {
		t.Fatalf("tokens\n got %v\nwant %v", res.Tokens, g.Tokens)
	}
	if text.String() != g.Text {
		t.Fatalf("text %q, want %q", text.String(), g.Text)
	}
	t.Logf("prefill %v, %d decode steps in %v (%.0f tokens/s)", res.Prefill, res.Generated, res.Decode, res.TokensPerSecond())

	// The context limit is refused before anything runs.
	if _, err := d.Generate(ctx, tok, g.Prompt, llm.Options{Steps: 600, ContextLength: 512}, func(llm.Token) error { return nil }); !errors.Is(err, llm.ErrContext) {
		t.Fatalf("steps beyond the context: %v", err)
	}
	// Cancellation stops the loop.
	cctx, cancel := context.WithCancel(ctx)
	n := 0
	_, err = d.Generate(cctx, tok, g.Prompt, llm.Options{Steps: g.Steps}, func(tk llm.Token) error {
		if n++; n == 6 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || n > 7 {
		t.Fatalf("cancelled after %d tokens: %v", n, err)
	}
	// Sampling with a seed is repeatable.
	run := func(seed uint64) []int {
		r, err := d.Generate(ctx, tok, g.Prompt, llm.Options{Steps: 32, Temperature: 1, TopK: 40, TopP: 0.9, Seed: seed}, func(llm.Token) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		return r.Tokens
	}
	a, b := run(7), run(7)
	if !slices.Equal(a, b) {
		t.Fatalf("seeded sampling not repeatable: %v vs %v", a, b)
	}
}

// BenchmarkDecodeBackends generates the golden 64 positions of stories260K per
// iteration on each backend set (default: every backend found) and
// reports the decode time per token:
//
//	GOMAXPROCS=1 go test ./llm -run '^$' -bench DecodeBackends
func BenchmarkDecodeBackends(b *testing.B) {
	dir := shared.Path(b, "testdata/llm/stories260K")
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		b.Fatal(err)
	}
	for _, set := range []string{"cpu", "native,cpu", "default"} {
		b.Run(set, func(b *testing.B) {
			ctx := context.Background()
			var opts switchyard.OpenOptions
			if set != "default" {
				opts.Backends = strings.Split(set, ",")
			}
			m, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K_kv.onnx"), &opts)
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			d, err := llm.NewDecoder(m)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var decode, prefill float64
			tokens := 0
			for b.Loop() {
				res, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: 64}, func(llm.Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				decode += float64(res.Decode.Nanoseconds())
				prefill += float64(res.Prefill.Nanoseconds())
				tokens += res.Generated
			}
			b.ReportMetric(decode/float64(tokens), "ns/token")
			b.ReportMetric(prefill/float64(b.N), "ns/prefill")
		})
	}
}
