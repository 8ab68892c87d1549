package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// syIn is sy with standard input; it returns stdout and stderr apart.
func syIn(t *testing.T, stdin []byte, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestTokenizeLlamaCppCases: switchyard tokenize gives llama.cpp's ids
// for every case of its tokenizer tests (add_special and parse_special
// off, as test-tokenizer-0) on the vocabularies of the families the
// issue names.
func TestTokenizeLlamaCppCases(t *testing.T) {
	root := shared.Root()
	dir := filepath.Join(root, "peers", "llamacpp", "vocab")
	if m, _ := filepath.Glob(filepath.Join(dir, "*.gguf.inp")); root == "" || len(m) == 0 {
		msg := "no llama.cpp vocabularies in ../shared/peers/llamacpp/vocab (run its setup.sh)"
		if shared.Required() {
			t.Fatal(msg)
		}
		backendtest.SkipUnlessRequired(t, "llamacpp", msg)
	}
	for _, name := range []string{"llama-spm", "llama-bpe", "qwen2", "qwen35", "phi-3", "gpt-2", "gemma-4"} {
		path := filepath.Join(dir, "ggml-vocab-"+name+".gguf")
		inp, err := os.ReadFile(path + ".inp")
		must(t, err)
		want, err := os.ReadFile(path + ".out")
		must(t, err)
		out, errOut, code := syIn(t, inp, "tokenize", path, "--split", `\n__ggml_vocab_test__\n`)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		got, exp := strings.Split(out, "\n"), strings.Split(string(want), "\n")
		if len(got) != len(exp) {
			t.Fatalf("%s: %d lines, want %d", name, len(got), len(exp))
		}
		bad := 0
		for i := range exp {
			if strings.TrimSpace(got[i]) != strings.TrimSpace(exp[i]) {
				bad++
				t.Errorf("%s case %d: got %q, want %q", name, i+1, got[i], exp[i])
			}
		}
		t.Logf("%s: %d of %d cases", name, len(exp)-1-bad, len(exp)-1)
	}
	// BOS only with --add-special; special-token texts only with --parse-special
	bpe := filepath.Join(dir, "ggml-vocab-llama-bpe.gguf")
	if out, _ := sy(t, "tokenize", bpe, "Hello"); strings.TrimSpace(out) != "9906" {
		t.Fatalf("tokenize Hello: %q", out)
	}
	if out, _ := sy(t, "tokenize", bpe, "Hello", "--add-special", "--json"); strings.TrimSpace(out) != "[128000,9906]" {
		t.Fatalf("tokenize --add-special --json: %q", out)
	}
	qwen := filepath.Join(dir, "ggml-vocab-qwen2.gguf")
	plain, _ := sy(t, "tokenize", qwen, "<|im_start|>user")
	parsed, _ := sy(t, "tokenize", qwen, "<|im_start|>user", "--parse-special")
	if strings.TrimSpace(parsed) != "151644 872" || len(strings.Fields(plain)) < 3 {
		t.Fatalf("--parse-special: %q, without: %q", parsed, plain)
	}
	if out, code := sy(t, "tokenize", filepath.Join(t.TempDir(), "none.gguf"), "x"); code == 0 {
		t.Fatalf("missing model: %s", out)
	}
}

// TestGenerateChat: generate --chat keeps the KV cache across turns: after
// the first, each turn prefills only its new tokens (stories260K, with a
// chat template given here since the model has none).
func TestGenerateChat(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	tmpl := filepath.Join(t.TempDir(), "story.jinja")
	must(t, os.WriteFile(tmpl, []byte("{% for m in messages %}{% if m.role == 'assistant' %}{{ m.content }}\n{% elif m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"), 0o644))
	model := filepath.Join(dir, "stories260K_f32.gguf")
	out, errOut, code := syIn(t, []byte("Once upon a time\nThe cat\n\nOne day, Lily\n"),
		"generate", model, "--backends", "cpu", "--chat", "--chat-template", tmpl, "--steps", "12")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	turns := regexp.MustCompile(`turn (\d): prefill (\d+) tokens \((\d+) of (\d+) in the cache\)`).FindAllStringSubmatch(errOut, -1)
	if len(turns) != 3 || strings.Count(out, "\n") != 3 {
		t.Fatalf("want 3 turns:\n%s\n%s", out, errOut)
	}
	prevTotal := 0
	for i, m := range turns {
		pre, reused, total := atoi(m[2]), atoi(m[3]), atoi(m[4])
		if pre != total-reused || (i == 0) != (reused == 0) || i > 0 && (reused < prevTotal || pre >= total/2) {
			t.Fatalf("turn %d: prefill %d, %d of %d cached (previous prompt %d)\n%s", i+1, pre, reused, total, prevTotal, errOut)
		}
		prevTotal = total
	}
	t.Logf("%s", errOut)
	// a model without a chat template and no --chat-template: a clear error
	if _, errOut, code := syIn(t, []byte("hi\n"), "generate", model, "--backends", "cpu", "--chat"); code == 0 || !strings.Contains(errOut, "chat template") {
		t.Fatalf("no template: exit %d %s", code, errOut)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
