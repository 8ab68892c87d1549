package llm_test

import (
	"bytes"
	"testing"

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
		tok, err := llm.ReadLlama2cTokenizer(bytes.NewReader(data), vocab%5000)
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
