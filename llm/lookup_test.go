package llm_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	_ "github.com/switchyard-hal/switchyard/plugins/native" // the benchmark's default backend
)

// repetitivePrompt is text a greedy continuation copies from: the
// stories model goes on repeating the sentence.
var repetitivePrompt = strings.Repeat("Lily saw a big red ball in the park. ", 4)

// TestPromptLookupIsGreedy: prompt-lookup speculation gives the plain
// greedy tokens exactly — on the golden prompt (little to copy) and on a
// repetitive one (most of the output drafted) — for several draft
// lengths and n-gram bounds, switching itself off or not; on the
// repetitive prompt drafts are accepted (measured: 36–60% of the drafted
// tokens) and the run takes at most three steps for four tokens
// (measured: about one for two). From ids too (no tokenizer, no early
// stop), and on the ONNX export's growing cache (trimmed by copying).
func TestPromptLookupIsGreedy(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	d := decoder(t, filepath.Join(dir, "stories260K.bin"))
	ctx := context.Background()
	none := func(llm.Token) error { return nil }
	// a growing (ONNX past/present) cache is trimmed by copying
	onnx := decoder(t, filepath.Join(dir, "stories260K_kv.onnx"))
	plain, err := onnx.Generate(ctx, tok, repetitivePrompt, llm.Options{Steps: 160}, none)
	if err != nil {
		t.Fatal(err)
	}
	res, err := onnx.PromptLookup(ctx, tok, repetitivePrompt, llm.Options{Steps: 160}, llm.Lookup{Always: true}, none)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, plain.Tokens) || res.Accepted == 0 || res.Accepted == res.Proposed {
		t.Fatalf("ONNX cache: lookup %v (%d of %d accepted)\nplain %v", res.Tokens, res.Accepted, res.Proposed, plain.Tokens)
	}
	for _, prompt := range []string{g.Prompt, repetitivePrompt} {
		plain, err := d.Generate(ctx, tok, prompt, llm.Options{Steps: 200}, none)
		if err != nil {
			t.Fatal(err)
		}
		for _, lk := range []llm.Lookup{{}, {Always: true}, {Draft: 1, Always: true}, {Draft: 5, MinNgram: 1, MaxNgram: 4, Always: true}, {Draft: 16}} {
			var streamed []int
			res, err := d.PromptLookup(ctx, tok, prompt, llm.Options{Steps: 200}, lk, func(tk llm.Token) error {
				streamed = append(streamed, tk.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, plain.Tokens) || !slices.Equal(streamed, plain.Tokens) {
				t.Fatalf("%q %+v: lookup\n%v\nplain greedy\n%v", prompt[:min(20, len(prompt))], lk, res.Tokens, plain.Tokens)
			}
			if res.Generated != plain.Generated || res.Accepted > res.Proposed || res.Rounds+res.Accepted != res.Generated {
				t.Errorf("%+v: %d generated (plain %d), %d rounds, %d of %d accepted", lk, res.Generated, plain.Generated, res.Rounds, res.Accepted, res.Proposed)
			}
			t.Logf("%q %+v: %d tokens in %d steps (%d plain), %d of %d drafted accepted (%.2f), off %d×",
				prompt[:min(20, len(prompt))], lk, res.Generated, res.Rounds, res.PlainRounds, res.Accepted, res.Proposed, res.AcceptanceRate(), res.SwitchedOff)
			if prompt == repetitivePrompt && lk.Always && lk.Draft != 1 && (res.AcceptanceRate() < 0.3 || res.Rounds*4 > res.Generated*3) {
				t.Errorf("repetitive prompt %+v: acceptance %.2f, %d steps for %d tokens", lk, res.AcceptanceRate(), res.Rounds, res.Generated)
			}
		}
	}
	ids := append([]int(nil), g.PromptTokens...)
	plain, err = d.GenerateIDs(ctx, ids, llm.Options{Steps: 64}, nil, none)
	if err != nil {
		t.Fatal(err)
	}
	res, err = d.PromptLookupIDs(ctx, ids, llm.Options{Steps: 64}, llm.Lookup{Always: true}, none)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, plain.Tokens) {
		t.Fatalf("from ids: lookup %v, plain %v", res.Tokens, plain.Tokens)
	}
	// refused: sampling, bad bounds
	if _, err := d.PromptLookup(ctx, tok, g.Prompt, llm.Options{Steps: 8, Temperature: 1}, llm.Lookup{}, none); err == nil {
		t.Error("sampling accepted")
	}
	for _, lk := range []llm.Lookup{{Draft: 65}, {MinNgram: 3, MaxNgram: 2}, {MaxNgram: 5}, {Draft: -1}} {
		if _, err := d.PromptLookup(ctx, tok, g.Prompt, llm.Options{Steps: 8}, lk, none); err == nil {
			t.Errorf("%+v accepted", lk)
		}
	}
}

// BenchmarkPromptLookup: stories260K (float32, on native,cpu or
// SWITCHYARD_BENCH_BACKENDS), 256 positions, plain greedy decoding
// against prompt-lookup speculation (default settings: it switches itself
// off where slower) on a repetitive prompt and on the golden,
// non-repetitive one; reports decode tokens/s and, for lookup, the
// acceptance rate. Compare the tokens/s of the two sub-benchmarks of
// each prompt (alternate them with -count).
func BenchmarkPromptLookup(b *testing.B) {
	dir := shared.Path(b, "testdata/llm/stories260K")
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	backends := []string{"native", "cpu"}
	if os.Getenv("SWITCHYARD_BENCH_BACKENDS") != "" {
		backends = benchBackends()
	}
	m, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Backends: backends})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	none := func(llm.Token) error { return nil }
	o := llm.Options{Steps: 256}
	for _, c := range []struct{ name, prompt string }{{"repetitive", repetitivePrompt}, {"plain-text", "Once upon a time"}} {
		// warm-up: every step length planned once
		if _, err := d.PromptLookup(ctx, tok, c.prompt, o, llm.Lookup{Always: true}, none); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/plain", func(b *testing.B) {
			var tokens, secs float64
			for i := 0; i < b.N; i++ {
				res, err := d.Generate(ctx, tok, c.prompt, o, none)
				if err != nil {
					b.Fatal(err)
				}
				tokens += float64(res.Generated)
				secs += res.Decode.Seconds()
			}
			b.ReportMetric(tokens/secs, "tokens/s")
		})
		b.Run(c.name+"/lookup", func(b *testing.B) {
			var tokens, secs, acc, prop float64
			for i := 0; i < b.N; i++ {
				res, err := d.PromptLookup(ctx, tok, c.prompt, o, llm.Lookup{}, none)
				if err != nil {
					b.Fatal(err)
				}
				tokens += float64(res.Generated)
				secs += res.Decode.Seconds()
				acc += float64(res.Accepted)
				prop += float64(res.Proposed)
			}
			b.ReportMetric(tokens/secs, "tokens/s")
			if prop > 0 {
				b.ReportMetric(acc/prop, "accepted")
			}
		})
	}
}
