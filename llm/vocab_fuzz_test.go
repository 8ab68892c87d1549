package llm_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// gpt2Chars maps bytes to GPT-2's printable characters (its byte-level
// BPE alphabet), for building test vocabularies.
func gpt2Chars() [256]string {
	var out [256]string
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			out[b] = string(rune(b))
		} else {
			out[b] = string(rune(256 + n))
			n++
		}
	}
	return out
}

// tinyVocab writes a small GGUF tokenizer of the given kind: "llama"
// (sentencepiece with byte pieces), a gpt2 pre-tokenizer name, or
// "gemma4"; every byte has a token, a few merges or scored pieces join
// common letters, and <|im_start|> (control) and <tool> (user-defined)
// are special tokens.
func tinyVocab(t testing.TB, kind string) []byte {
	t.Helper()
	var toks []any
	var types []any
	var scores []any
	add := func(s string, typ int32, score float32) {
		toks, types, scores = append(toks, s), append(types, typ), append(scores, score)
	}
	meta := map[string]any{}
	words := []string{"he", "ll", "hell", "hello", "wo", "wor", "world", "th", "the", "in", "ing"}
	switch kind {
	case "bert":
		for _, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]"} {
			add(s, 3, 0)
		}
		add("\u2581", 1, 0)
		for _, c := range "abcdefghijklmnopqrstuvwxyz0123456789.,'!" {
			add(string(c), 1, 0)
			add("\u2581"+string(c), 1, 0)
		}
		for _, w := range words {
			add("\u2581"+w, 1, 0)
		}
		meta["tokenizer.ggml.model"] = "bert"
		meta["tokenizer.ggml.unknown_token_id"] = uint32(1)
		meta["tokenizer.ggml.seperator_token_id"] = uint32(3)
		meta["tokenizer.ggml.bos_token_id"] = uint32(2)
	case "llama", "gemma4":
		add("<unk>", 2, 0)
		add("<s>", 3, 0)
		add("</s>", 3, 0)
		for b := 0; b < 256; b++ {
			add(fmt.Sprintf("<0x%02X>", b), 6, 0)
		}
		add("\u2581", 1, -1)
		for _, c := range "abcdefghijklmnopqrstuvwxyz" {
			add(string(c), 1, -2)
		}
		var merges []any
		for i, w := range words {
			add(w, 1, float32(-3-i))
			add("\u2581"+w, 1, float32(-3-i))
			merges = append(merges, w[:len(w)-1]+" "+w[len(w)-1:])
		}
		add("\n\n", 1, -20)
		meta["tokenizer.ggml.model"] = kind
		meta["tokenizer.ggml.bos_token_id"] = uint32(1)
		meta["tokenizer.ggml.eos_token_id"] = uint32(2)
		if kind == "gemma4" {
			merges = append(merges, "\u2581 h", "\u2581h e", "\u2581 w")
			add("\u2581h", 1, 0)
			add("\u2581he", 1, 0)
			add("\u2581w", 1, 0)
			meta["tokenizer.ggml.merges"] = merges
		}
	default:
		chars := gpt2Chars()
		for b := 0; b < 256; b++ {
			add(chars[b], 1, 0)
		}
		var merges []any
		for _, w := range append(words, "Ġh", "Ġhe", "Ġw", "Ġt", "Ġth", "Ġthe") {
			add(w, 1, 0)
			r := []rune(w)
			merges = append(merges, string(r[:len(r)-1])+" "+string(r[len(r)-1:]))
		}
		add("<|endoftext|>", 3, 0)
		meta["tokenizer.ggml.model"] = "gpt2"
		meta["tokenizer.ggml.pre"] = kind
		meta["tokenizer.ggml.merges"] = merges
		meta["tokenizer.ggml.bos_token_id"] = uint32(len(toks) - 1)
		meta["tokenizer.ggml.eos_token_id"] = uint32(len(toks) - 1)
	}
	add("<|im_start|>", 3, 0)
	add("<tool>", 4, 0)
	meta["tokenizer.ggml.tokens"] = toks
	meta["tokenizer.ggml.token_type"] = types
	meta["tokenizer.ggml.scores"] = scores
	var buf bytes.Buffer
	if err := gguf.Write(&buf, meta, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var tinyKinds = []string{"bert", "llama", "gemma4", "gpt-2", "llama-bpe", "qwen2", "qwen35", "starcoder", "falcon", "deepseek-coder", "deepseek-llm", "default"}

// TestTinyVocabRoundTrip: on every tokenizer kind, text encodes and
// decodes back to itself, and special-token texts split as llama.cpp
// splits them.
func TestTinyVocabRoundTrip(t *testing.T) {
	for _, kind := range tinyKinds {
		f, err := gguf.Parse(tinyVocab(t, kind))
		if err != nil {
			t.Fatal(err)
		}
		v, err := llm.GGUFVocab(f)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if kind == "bert" {
			ids, _ := v.Tokenize("Hello, wörld! 日x", true, false)
			if got := v.Decode(ids); got != " hello , world ! x" {
				t.Errorf("bert: %v → %q", ids, got)
			}
			continue
		}
		for _, s := range []string{"hello world", "the thing's 123 4567\n\n  x", "héllo 日本 🦙\t'LL", "a<tool>b<|im_start|>c"} {
			ids, err := v.Tokenize(s, false, true)
			if err != nil {
				t.Fatal(err)
			}
			back := v.Decode(ids)
			if kind == "llama" && strings.Contains(s, "<") {
				continue // sentencepiece puts a space after each special token, as llama.cpp does
			}
			if back != strings.ReplaceAll(s, "<|im_start|>", "") && back != s {
				t.Errorf("%s: %q → %v → %q", kind, s, ids, back)
			}
		}
		ids, _ := v.Tokenize("x<tool>y<|im_start|>", false, false)
		if n := len(ids); n < 3 || v.Text(ids[1]) != "<tool>" && v.Text(ids[2]) != "<tool>" {
			t.Errorf("%s: user-defined token not split out: %v", kind, ids)
		}
		ids, _ = v.Tokenize("<|im_start|>", false, true)
		if len(ids) != 1 || v.Text(ids[0]) != "<|im_start|>" {
			t.Errorf("%s: control token with parse_special: %v", kind, ids)
		}
	}
}

// FuzzVocabTokenize: any text encodes without error on every tokenizer
// kind to ids in range, and valid UTF-8 without special-token texts
// decodes back to itself.
func FuzzVocabTokenize(f *testing.F) {
	var vocabs []*llm.Vocab
	for _, kind := range tinyKinds {
		g, err := gguf.Parse(tinyVocab(f, kind))
		if err != nil {
			f.Fatal(err)
		}
		v, err := llm.GGUFVocab(g)
		if err != nil {
			f.Fatal(err)
		}
		vocabs = append(vocabs, v)
	}
	for _, s := range []string{"hello world", " 's 'T  \n\n\r\n x", "日本語 🦙 ½ ٣", "\xff\xfe bad", "<tool><|im_start|>", "\u00a0\u3000\u2581"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, v := range vocabs {
			ids, err := v.Tokenize(s, true, true)
			if err != nil {
				t.Fatalf("%s: %q: %v", tinyKinds[i], s, err)
			}
			for _, id := range ids {
				if id < 0 || id >= v.VocabSize() {
					t.Fatalf("%s: id %d out of range", tinyKinds[i], id)
				}
			}
			plain, err := v.Tokenize(s, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if tinyKinds[i] == "bert" || !utf8.ValidString(s) || strings.Contains(s, "<tool>") || strings.Contains(s, "\u2581") && tinyKinds[i] == "llama" || strings.Contains(s, "\u2581") && tinyKinds[i] == "gemma4" {
				continue
			}
			if back := v.Decode(plain); back != s {
				t.Fatalf("%s: %q → %v → %q", tinyKinds[i], s, plain, back)
			}
		}
	})
}

// FuzzGGUFVocab: any GGUF bytes give a tokenizer or an error, never a
// panic; a tokenizer read encodes text.
func FuzzGGUFVocab(f *testing.F) {
	for _, kind := range []string{"llama", "gpt-2", "gemma4"} {
		f.Add(tinyVocab(f, kind))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := gguf.Parse(data)
		if err != nil {
			return
		}
		v, err := llm.GGUFVocab(g)
		if err != nil {
			return
		}
		ids, err := v.Tokenize("Hello wörld <tool> 123\n", true, true)
		if err != nil {
			return
		}
		_ = v.Decode(ids)
	})
}

// TestGGUFVocabBadInput: metadata of the wrong type or size is refused
// with the key named.
func TestGGUFVocabBadInput(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"tokenizer.ggml.model":  "llama",
			"tokenizer.ggml.tokens": []any{"<unk>", "<s>", "</s>", "a"},
			"tokenizer.ggml.scores": []any{float32(0), float32(0), float32(0), float32(-1)},
		}
	}
	for _, c := range []struct {
		key  string
		val  any
		want string
	}{
		{"tokenizer.ggml.tokens", []any{uint32(1), uint32(2)}, "tokenizer.ggml.tokens"}, // arrays are typed: the key is named
		{"tokenizer.ggml.tokens", "abc", "tokenizer.ggml.tokens"},
		{"tokenizer.ggml.tokens", []any{}, "tokenizer.ggml.tokens"},
		{"tokenizer.ggml.scores", []any{float32(0)}, "tokenizer.ggml.scores"},
		{"tokenizer.ggml.scores", []any{"x", "y", "z", "w"}, "tokenizer.ggml.scores"},
		{"tokenizer.ggml.token_type", []any{"x", "y", "z", "w"}, "tokenizer.ggml.token_type"},
		{"tokenizer.ggml.add_bos_token", uint32(1), "tokenizer.ggml.add_bos_token"},
		{"tokenizer.ggml.model", "t5", "t5"},
		{"tokenizer.ggml.model", "gpt2", "tokenizer.ggml.merges"},
		{"tokenizer.ggml.pre", "no-such-pre", "no-such-pre"},
	} {
		meta := base()
		meta[c.key] = c.val
		if c.key == "tokenizer.ggml.pre" {
			meta["tokenizer.ggml.model"] = "gpt2"
			meta["tokenizer.ggml.merges"] = []any{"a b"}
		}
		var buf bytes.Buffer
		if err := gguf.Write(&buf, meta, nil); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := llm.GGUFVocab(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %v: error %v, want one naming %q", c.key, c.val, err, c.want)
		}
	}
}
