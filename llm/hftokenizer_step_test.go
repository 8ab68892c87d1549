package llm_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// The split expressions of the families' tokenizer.json files.
const (
	llama3Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Split  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen35Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// TestHFTokenizerInStepWithGGUF: a tokenizer.json made from a GGUF
// vocabulary (its tokens, merges and control tokens, with the family's
// pre-tokenizer as Hugging Face writes it) encodes llama.cpp's test cases
// to the same ids as the GGUF tokenizer: the two paths share the
// pre-tokenizers and the merge rules.
func TestHFTokenizerInStepWithGGUF(t *testing.T) {
	dir := peerVocabDir(t)
	for _, c := range []struct {
		vocab, split string
		ignoreMerges bool
	}{
		{"gpt-2", "", false},
		{"llama-bpe", llama3Split, true},
		{"qwen2", qwen2Split, false},
		{"qwen35", qwen35Split, false},
	} {
		path := filepath.Join(dir, "ggml-vocab-"+c.vocab+".gguf")
		f, err := gguf.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		v, err := llm.GGUFVocab(f)
		if err != nil {
			t.Fatal(err)
		}
		toks, _ := f.Strings("tokenizer.ggml.tokens")
		types, _ := f.Numbers("tokenizer.ggml.token_type")
		vocab := map[string]int{}
		var added []map[string]any
		for i, x := range toks {
			if types[i] == 3 {
				added = append(added, map[string]any{"id": i, "content": x, "special": true})
				continue
			}
			vocab[x] = i
		}
		pre := map[string]any{"type": "ByteLevel", "use_regex": true}
		if c.split != "" {
			pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": c.split}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "use_regex": false},
			}}
		}
		js, err := json.Marshal(map[string]any{
			"added_tokens":  added,
			"pre_tokenizer": pre,
			"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": f.Meta["tokenizer.ggml.merges"], "ignore_merges": c.ignoreMerges},
		})
		if err != nil {
			t.Fatal(err)
		}
		hf, err := llm.ParseHFTokenizer(js)
		if err != nil {
			t.Fatalf("%s: %v", c.vocab, err)
		}
		cases, order := readVocabCases(t, path)
		for _, s := range order {
			want, _ := v.Tokenize(s, false, true)
			got, err := hf.Encode(s, false)
			if err != nil {
				t.Fatalf("%s: %q: %v", c.vocab, s, err)
			}
			if !slices.Equal(got, want) || !slices.Equal(got, cases[s]) && len(cases[s]) > 0 {
				t.Errorf("%s: %q: tokenizer.json %v, GGUF %v, llama.cpp %v", c.vocab, s, got, want, cases[s])
			}
		}
		t.Logf("%s: %d cases agree", c.vocab, len(order))
	}
}
