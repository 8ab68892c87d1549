package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/internal/tinygguf"
)

// TestGeneratePromptTokens: generate --prompt-tokens takes the golden
// prompt's ids as they are and prints one JSON line whose tokens are the
// golden greedy ones after the prompt; --logits writes a row per step.
func TestGeneratePromptTokens(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	must(t, err)
	var g struct {
		Steps        int
		PromptTokens []int `json:"prompt_tokens"`
		Tokens       []int
		Text         string
	}
	must(t, json.Unmarshal(raw, &g))
	ids := make([]string, len(g.PromptTokens))
	for i, v := range g.PromptTokens {
		ids[i] = fmt.Sprint(v)
	}
	lf := filepath.Join(t.TempDir(), "logits.f32")
	out, code := sy(t, "generate", filepath.Join(dir, "stories260K_f32.gguf"), "--backends", "cpu", "--prompt-tokens", strings.Join(ids, ","),
		"--steps", fmt.Sprint(g.Steps), "--temperature", "0", "--json", "--logits", lf, "--prompt-logits")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var r struct {
		Tokens       []int    `json:"tokens"`
		PromptTokens []int    `json:"prompt_tokens"`
		PrefillMs    float64  `json:"prefill_ms"`
		MsPerToken   *float64 `json:"ms_per_token"`
		Text         *string  `json:"text"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	want := g.Tokens[len(g.PromptTokens)-1:]
	if !slices.Equal(r.Tokens, want) || !slices.Equal(r.PromptTokens, g.PromptTokens) || r.PrefillMs <= 0 || r.MsPerToken == nil || r.Text == nil {
		t.Fatalf("JSON %s\nwant tokens %v", lines[len(lines)-1], want)
	}
	st, err := os.Stat(lf)
	must(t, err)
	if rows := int(st.Size()) / 4 / 512; rows != g.Steps || int(st.Size()) != rows*4*512 {
		t.Fatalf("logits file of %d bytes: want %d rows of 512", st.Size(), g.Steps)
	}
}

// TestGeneratePromptTokensWithoutTokenizer: a GGUF whose tokenizer is not
// read runs from ids, saying why there is no text; without ids it is an
// error that points at --prompt-tokens.
func TestGeneratePromptTokensWithoutTokenizer(t *testing.T) {
	s := tinygguf.Shapes["qwen3-tiny"]
	s.Dim, s.FFN, s.Heads, s.KVHeads, s.HeadDim, s.Context = 8, 16, 2, 1, 4, 64
	b, err := tinygguf.Encode(s, 12, map[string]any{"tokenizer.ggml.model": "gpt2"})
	must(t, err)
	path := filepath.Join(t.TempDir(), "q.gguf")
	must(t, os.WriteFile(path, b, 0o644))
	out, code := sy(t, "generate", path, "--prompt-tokens", "1,2,3", "--steps", "8", "--json")
	if code != 0 || !strings.Contains(out, `"tokenizer":"unavailable: `) || !strings.Contains(out, "gpt2") {
		t.Fatalf("exit %d: %s", code, out)
	}
	var r struct{ Tokens []int }
	lines := strings.Split(strings.TrimSpace(out), "\n")
	must(t, json.Unmarshal([]byte(lines[len(lines)-1]), &r))
	if len(r.Tokens) != 6 {
		t.Fatalf("%d tokens for 8 positions after a 3-token prompt: %s", len(r.Tokens), out)
	}
	if out, code := sy(t, "generate", path, "--prompt", "hi", "--steps", "8"); code == 0 || !strings.Contains(out, "--prompt-tokens") {
		t.Fatalf("no ids: exit %d %s", code, out)
	}
	if out, code := sy(t, "generate", path, "--prompt-tokens", "1,99", "--steps", "8"); code == 0 || !strings.Contains(out, "outside the vocabulary") {
		t.Fatalf("id 99 of 12: exit %d %s", code, out)
	}
}
