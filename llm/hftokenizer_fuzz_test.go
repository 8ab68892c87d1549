package llm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// tinyTokenizerJSON is a byte-level BPE tokenizer.json of a few tokens.
const tinyTokenizerJSON = `{"added_tokens":[{"id":5,"content":"<|endoftext|>","special":true}],
"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},
"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"Ġ":3,"Ġa":4},"merges":["a b",["Ġ","a"]]}}`

// FuzzParseHFTokenizer: any tokenizer.json gives a tokenizer or an
// error, never a panic, within a small multiple of its size (issue #32);
// a tokenizer it gives encodes and decodes text without panicking.
func FuzzParseHFTokenizer(f *testing.F) {
	f.Add([]byte(tinyTokenizerJSON))
	if root := shared.Root(); root != "" {
		for _, p := range []string{"gpt2-fp32/tokenizer.json", "llama-fp16/tokenizer.json"} {
			if b, err := os.ReadFile(filepath.Join(root, "testdata/llm/tiny-random", p)); err == nil && len(b) < 4<<20 {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var tok *llm.HFTokenizer
		var err error
		allocguard.Check(t, "ParseHFTokenizer", allocguard.Bound(len(data), 64, 4<<20), func() { tok, err = llm.ParseHFTokenizer(data) })
		if err != nil {
			return
		}
		ids, err := tok.Encode("ab a<|endoftext|> é", true)
		if err == nil {
			_ = tok.Decode(ids)
		}
	})
}

// TestTokenizerJSONHoles: a tokenizer.json naming one huge id is refused
// before the id table is sized by it.
func TestTokenizerJSONHoles(t *testing.T) {
	data := []byte(`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":2000000}}}`)
	var err error
	allocguard.Check(t, "a 2,000,000 id in an 80-byte file", 1<<20, func() { _, err = llm.ParseHFTokenizer(data) })
	if err == nil {
		t.Fatal("a one-token vocabulary with id 2,000,000 was accepted")
	}
}
