package grammar

import (
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkMaskQwen2 is one token's mask over Qwen2's 151,936-token
// vocabulary (the peer kit's vocab/ggml-vocab-qwen2.gguf) at three
// positions of a schema's text: inside a free string (nearly every token
// valid: the most walking), where a key starts, and after a colon; and
// building the index (once per model).
func BenchmarkMaskQwen2(b *testing.B) {
	v, err := llm.LoadGGUFVocab(shared.Path(b, "peers/llamacpp/vocab/ggml-vocab-qwen2.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, v.VocabSize())
	for id := range texts {
		texts[id] = v.Piece(0, id)
	}
	ix := NewIndex(texts, v.EOGs())
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			NewIndex(texts, v.EOGs())
		}
	})
	g, err := CompileSchema([]byte(schemas[0]), nil)
	if err != nil {
		b.Fatal(err)
	}
	allow := make([]uint64, (ix.Size()+63)/64)
	for _, c := range []struct{ name, text string }{
		{"in-string", `{"name": "Ada Love`},
		{"key", `{"name": "Ada", `},
		{"value", `{"name": "Ada", "age":`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := g.NewMatcher()
			if !m.Advance([]byte(c.text)) {
				b.Fatal("text refused")
			}
			n := 0
			for b.Loop() {
				n = m.Mask(ix, 1000, allow)
			}
			b.ReportMetric(float64(n), "allowed")
		})
	}
}
