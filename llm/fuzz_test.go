package llm_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// FuzzReadLlama2cTokenizer: any bytes give a tokenizer or an error, never a
// panic or an allocation beyond the declared bounds; a tokenizer read
// encodes and decodes text without panicking.
func FuzzReadLlama2cTokenizer(f *testing.F) {
	f.Add([]byte("\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00a"), 4)
	f.Add([]byte("\x02\x00\x00\x00\x00\x00\x80\x3f\x02\x00\x00\x00ab\x00\x00\x00\x00\x01\x00\x00\x00 "), 5)
	// A valid four-token vocabulary without byte pieces.
	f.Add([]byte("\x02\x00\x00\x00"+
		"\x00\x00\x00\x00\x01\x00\x00\x00u"+
		"\x00\x00\x00\x00\x01\x00\x00\x00 "+
		"\x00\x00\x80\x3f\x01\x00\x00\x00O"+
		"\x00\x00\x00\x40\x02\x00\x00\x00 O"), 4)
	f.Fuzz(func(t *testing.T, data []byte, vocab int) {
		var tok *llm.Llama2cTokenizer
		var err error
		allocguard.Check(t, "ReadLlama2cTokenizer", allocguard.Bound(len(data), 16, 4<<20), func() {
			tok, err = llm.ReadLlama2cTokenizer(bytes.NewReader(data), vocab%5000)
		})
		if err != nil {
			return
		}
		ids, err := tok.Encode("Once upon a time é", true)
		if err != nil {
			return
		}
		for i := 1; i < len(ids); i++ {
			_ = tok.Piece(ids[i-1], ids[i])
		}
	})
}

// FuzzHFTokenizerRoundTrip: on the real GPT-2 and Llama tokenizer.json
// files, any valid UTF-8 text without special tokens (and, for the
// sentencepiece-style one, without '▁') encodes without error and decodes
// back to itself.
func FuzzHFTokenizerRoundTrip(f *testing.F) {
	dir := shared.Path(f, "testdata/llm/tiny-random")
	var toks []*llm.HFTokenizer
	for _, p := range []string{"gpt2-fp32/tokenizer.json", "llama-fp16/tokenizer.json"} {
		tok, err := llm.LoadHFTokenizer(filepath.Join(dir, p))
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	for _, s := range []string{"Hello world", "  a\n\n b\t", "don't 'll 's", "日本語 🦙", "x  ", "1234.5", "\u00a0\u2581 weird"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.Contains(s, "<s>") || strings.Contains(s, "</s>") || strings.Contains(s, "<unk>") || strings.Contains(s, "<|endoftext|>") {
			return
		}
		for i, tok := range toks {
			if i == 1 && strings.Contains(s, "\u2581") {
				continue // sentencepiece's space mark decodes as a space (as in Hugging Face's decoder)
			}
			ids, err := tok.Encode(s, true)
			if err != nil {
				t.Fatalf("tokenizer %d: %q: %v", i, s, err)
			}
			if back := tok.Decode(ids); back != s {
				t.Fatalf("tokenizer %d: %q → %v → %q", i, s, ids, back)
			}
		}
	})
}
