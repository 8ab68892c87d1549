package llm_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

func decoder(t *testing.T, path string) *llm.Decoder {
	t.Helper()
	m, err := switchyard.Open(context.Background(), path, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSpeculativeIsTargetGreedy: with the int8 export as the draft and
// the float32 checkpoint as the target, speculative decoding gives the
// target's plain greedy tokens exactly (64 positions, the golden ones,
// and 256), for several draft lengths; a draft equal to the target has
// every proposal accepted.
func TestSpeculativeIsTargetGreedy(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	target := decoder(t, filepath.Join(dir, "stories260K.bin"))
	draft := decoder(t, filepath.Join(dir, "stories260K_q80.bin"))
	ctx := context.Background()
	none := func(llm.Token) error { return nil }
	for _, steps := range []int{g.Steps, 256} {
		t0 := time.Now()
		plain, err := target.Generate(ctx, tok, g.Prompt, llm.Options{Steps: steps}, none)
		if err != nil {
			t.Fatal(err)
		}
		plainTime := time.Since(t0)
		if steps == g.Steps && !slices.Equal(plain.Tokens, g.Tokens) {
			t.Fatalf("target greedy %v, golden %v", plain.Tokens, g.Tokens)
		}
		for _, k := range []int{1, 3, 4, 8} {
			var streamed []int
			t0 := time.Now()
			res, err := llm.Speculative(ctx, target, draft, tok, g.Prompt, k, llm.Options{Steps: steps}, func(tk llm.Token) error {
				streamed = append(streamed, tk.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(t0)
			if !slices.Equal(res.Tokens, plain.Tokens) || !slices.Equal(streamed, plain.Tokens) {
				t.Fatalf("steps %d, k %d: speculative\n %v\ntarget alone\n %v", steps, k, res.Tokens, plain.Tokens)
			}
			t.Logf("steps %d, k %d: %d target rounds for %d tokens, acceptance %d/%d = %.2f, %v vs %v target-only (%.2f×)",
				steps, k, res.Rounds, res.Generated, res.Accepted, res.Proposed, res.AcceptanceRate(), el.Round(time.Millisecond), plainTime.Round(time.Millisecond), plainTime.Seconds()/el.Seconds())
		}
	}
	res, err := llm.Speculative(ctx, target, target, tok, g.Prompt, 4, llm.Options{Steps: g.Steps}, none)
	if err != nil {
		t.Fatal(err)
	}
	if res.Accepted != res.Proposed || !slices.Equal(res.Tokens, g.Tokens) {
		t.Fatalf("self-draft: %d of %d accepted, tokens %v", res.Accepted, res.Proposed, res.Tokens)
	}
	if _, err := llm.Speculative(ctx, target, draft, tok, g.Prompt, 4, llm.Options{Steps: 8, Temperature: 1}, none); err == nil {
		t.Fatal("sampling accepted")
	}
}
