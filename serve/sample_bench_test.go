package serve

import (
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/llm/grammar"
)

// BenchmarkConstrainedToken is one sampled token under a json_schema
// grammar over Qwen2's 151,936-token vocabulary (the peer kit's
// vocab/ggml-vocab-qwen2.gguf): the mask, the logits set to -Inf,
// the draw at temperature 1 from random logits, and the grammar
// advanced; a reply that ends starts over. "free" is the same draw
// without a grammar (the sampler sorts every candidate: most of the
// cost of both).
func BenchmarkConstrainedToken(b *testing.B) {
	v, err := llm.LoadGGUFVocab(shared.Path(b, "peers/llamacpp/vocab/ggml-vocab-qwen2.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	texts := make([]string, v.VocabSize())
	for id := range texts {
		texts[id] = v.Piece(0, id)
	}
	ends := v.EOGs()
	ix := grammar.NewIndex(texts, ends)
	g, err := grammar.CompileSchema([]byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b","c"]}}},"required":["name","age","tags"],"additionalProperties":false}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	isEnd := map[int]bool{}
	for _, e := range ends {
		isEnd[e] = true
	}
	for _, constrained := range []bool{false, true} {
		name := "free"
		if constrained {
			name = "json_schema"
		}
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			logits := make([]float32, len(texts))
			var s *sampler
			restart := func() {
				s = newSampler(sampling{temperature: 1, topP: 1, seed: rng.Uint64()})
				if constrained {
					s.con = newConstraint(g, ix, ends, 200, 0, v.Piece, func(id int) bool { return isEnd[id] })
				}
			}
			restart()
			replies := 0
			for b.Loop() {
				b.StopTimer()
				for i := range logits {
					logits[i] = float32(rng.NormFloat64())
				}
				b.StartTimer()
				id := s.next(logits)
				if constrained && isEnd[id] {
					if !s.con.m.CanEnd() {
						b.Fatal("ended incomplete")
					}
					replies++
					restart()
				}
			}
			b.ReportMetric(float64(replies), "replies")
		})
	}
}
