package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

func TestGenerateStories260KGreedy(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	must(t, err)
	var g struct {
		Prompt string
		Steps  int
		Text   string
	}
	must(t, json.Unmarshal(raw, &g))
	model := filepath.Join(dir, "stories260K_kv.onnx")
	out, code := sy(t, "generate", model, "--backends", "cpu", "--prompt", g.Prompt, "--steps", "64")
	if code != 0 || !strings.HasPrefix(out, g.Text+"\n") || !strings.Contains(out, "tokens/s") {
		t.Fatalf("exit %d:\n%s\nwant the text\n%s", code, out, g.Text)
	}
	// Warm-up generations are neither shown nor counted: the text once,
	// one timing line.
	out, code = sy(t, "generate", model, "--backends", "cpu", "--prompt", g.Prompt, "--steps", "64", "--warmup", "2")
	if code != 0 || !strings.HasPrefix(out, g.Text+"\n") || strings.Count(out, g.Text) != 1 || strings.Count(out, "tokens/s") != 1 {
		t.Fatalf("--warmup: exit %d:\n%s", code, out)
	}
	// The Llama graph built from the GGUF file (its own tokenizer) and from
	// the llama2.c checkpoint (tok512.bin found beside it) gives the same text.
	for _, m := range []string{"stories260K_f32.gguf", "stories260K.bin"} {
		out, code := sy(t, "generate", filepath.Join(dir, m), "--backends", "cpu", "--prompt", g.Prompt, "--steps", "64")
		if code != 0 || !strings.HasPrefix(out, g.Text+"\n") {
			t.Fatalf("%s: exit %d:\n%s\nwant the text\n%s", m, code, out, g.Text)
		}
	}
	// Speculative decoding with the int8 export as the draft: the same text.
	out, code = sy(t, "generate", filepath.Join(dir, "stories260K.bin"), "--backends", "cpu", "--prompt", g.Prompt, "--steps", "64",
		"--draft", filepath.Join(dir, "stories260K_q80.bin"), "--draft-k", "4")
	if code != 0 || !strings.HasPrefix(out, g.Text+"\n") || !strings.Contains(out, "draft tokens accepted") {
		t.Fatalf("--draft: exit %d:\n%s", code, out)
	}
	// Prompt-lookup speculation: the same text, the acceptance reported.
	out, code = sy(t, "generate", filepath.Join(dir, "stories260K.bin"), "--backends", "cpu", "--prompt", g.Prompt, "--steps", "64", "--lookup", "6")
	if code != 0 || !strings.HasPrefix(out, g.Text+"\n") || !strings.Contains(out, "drafted tokens accepted") {
		t.Fatalf("--lookup: exit %d:\n%s", code, out)
	}
	if out, code := sy(t, "generate", model, "--backends", "cpu", "--prompt", "x", "--steps", "600", "--context", "512"); code == 0 || !strings.Contains(out, "context length exceeded") {
		t.Fatalf("context limit: exit %d %s", code, out)
	}
	if out, code := sy(t, "generate", model, "--backends", "cpu", "--tokenizer", filepath.Join(t.TempDir(), "none.bin")); code == 0 || !strings.Contains(out, "none.bin") {
		t.Fatalf("missing tokenizer: exit %d %s", code, out)
	}
}
