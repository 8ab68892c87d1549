package llm_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

var roundTrip = []string{
	"Hello world",
	"Once upon a time, there was a little girl named Lily.",
	"  two spaces,\nnew line\n\n\tand a tab; don't we'll it's",
	"numbers 12345 and 3.14159, symbols #@!$%^&*()",
	"Ünïcödé: naïve café, 日本語のテキスト, emoji 🦙🚀, Ελληνικά",
	"trailing spaces   ",
	" leading space",
	"x",
}

// TestHFTokenizers: the real GPT-2 (byte-level BPE) and Llama
// (sentencepiece-style with byte fallback) tokenizer.json files of the
// tiny-random models encode to known ids and round-trip text.
func TestHFTokenizers(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/tiny-random")
	for _, c := range []struct {
		file  string
		hello []int // "Hello world" with BOS asked for
		vocab int
	}{
		{"gpt2-fp32/tokenizer.json", []int{50256, 15496, 995}, 0},
		{"llama-fp16/tokenizer.json", []int{1, 15043, 3186}, 32000},
	} {
		t.Run(filepath.Dir(c.file), func(t *testing.T) {
			tok, err := llm.LoadHFTokenizer(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if c.vocab > 0 && tok.VocabSize() != c.vocab {
				t.Errorf("vocabulary %d, want %d", tok.VocabSize(), c.vocab)
			}
			ids, err := tok.Encode("Hello world", true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.hello) {
				t.Errorf("Encode(Hello world) = %v, want %v", ids, c.hello)
			}
			for _, s := range roundTrip {
				ids, err := tok.Encode(s, true)
				if err != nil {
					t.Fatal(err)
				}
				if back := tok.Decode(ids); back != s {
					t.Errorf("%q → %v → %q", s, ids, back)
				}
				// streaming pieces give the same bytes
				var sb strings.Builder
				prev := -1
				for _, id := range ids {
					if id == tok.BOS() && prev == -1 {
						prev = id
						continue
					}
					sb.WriteString(tok.Piece(prev, id))
					prev = id
				}
				if sb.String() != s {
					t.Errorf("pieces of %q join to %q", s, sb.String())
				}
			}
		})
	}
}

// TestHFTokenizerDetails: GPT-2's pre-tokenizer splits as its pattern
// does (spaces before words, contractions, runs of whitespace) and the
// Llama tokenizer falls back to byte tokens for characters outside its
// vocabulary.
func TestHFTokenizerDetails(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/tiny-random")
	gpt2, err := llm.LoadHFTokenizer(filepath.Join(dir, "gpt2-fp32/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	pieces := func(tok *llm.HFTokenizer, s string) []string {
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, id := range ids {
			out = append(out, tok.Piece(-1, id))
		}
		return out
	}
	if got := pieces(gpt2, "I don't  know"); !slices.Equal(got, []string{"I", " don", "'t", " ", " know"}) {
		t.Errorf("GPT-2 pieces %q", got)
	}
	ids, _ := gpt2.Encode("a<|endoftext|>b", false)
	if len(ids) != 3 || ids[1] != 50256 {
		t.Errorf("special token in text: %v", ids)
	}
	llama, err := llm.LoadHFTokenizer(filepath.Join(dir, "llama-fp16/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err = llama.Encode("🦙", false)
	if err != nil {
		t.Fatal(err)
	}
	// ▁ then the four UTF-8 bytes of U+1F999 as <0xF0> <0x9F> <0xA6> <0x99> (ids byte+3)
	if want := []int{29871, 0xF0 + 3, 0x9F + 3, 0xA6 + 3, 0x99 + 3}; !slices.Equal(ids, want) {
		t.Errorf("byte fallback: %v, want %v", ids, want)
	}
	if _, err := llm.ParseHFTokenizer([]byte(`{"model":{"type":"Unigram"}}`)); err == nil {
		t.Error("a Unigram model was accepted")
	}
	if _, err := llm.ParseHFTokenizer([]byte(`{`)); err == nil {
		t.Error("bad JSON accepted")
	}
}
