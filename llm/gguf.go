package llm

import (
	"fmt"
	"strings"

	"github.com/switchyard-hal/switchyard/internal/regular"

	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// NewLlama2cTokenizer makes a sentencepiece-style tokenizer with
// llama2.c's encoder from its pieces (spaces as ' ') and merge scores;
// ids 0, 1, 2 must be <unk>, <s>, </s>.
func NewLlama2cTokenizer(pieces []string, scores []float32) (*Llama2cTokenizer, error) {
	if len(pieces) <= 3 || len(pieces) > maxVocab || len(scores) != len(pieces) {
		return nil, fmt.Errorf("llm: tokenizer with %d pieces and %d scores", len(pieces), len(scores))
	}
	t := &Llama2cTokenizer{index: make(map[string]int, len(pieces))}
	for i, p := range pieces {
		t.vocab = append(t.vocab, p)
		t.scores = append(t.scores, scores[i])
		t.maxLen = max(t.maxLen, len(p))
		if _, dup := t.index[p]; !dup {
			t.index[p] = i
		}
	}
	return t, nil
}

// GGUFTokenizer reads the sentencepiece ("llama") tokenizer a GGUF file
// carries in its tokenizer.ggml.* metadata (pieces with '▁' for space,
// scores), BOS id 1.
func GGUFTokenizer(f *gguf.File) (*Llama2cTokenizer, error) {
	if m, _ := f.String("tokenizer.ggml.model"); m != "llama" {
		return nil, fmt.Errorf("llm: GGUF tokenizer model %q (the sentencepiece \"llama\" one is read)", m)
	}
	if bos, ok := f.Uint("tokenizer.ggml.bos_token_id"); ok && bos != 1 {
		return nil, fmt.Errorf("llm: GGUF BOS id %d (1 is supported)", bos)
	}
	toks, _ := f.Meta["tokenizer.ggml.tokens"].([]string)
	var sc []float32
	switch v := f.Meta["tokenizer.ggml.scores"].(type) {
	case []float32:
		sc = v
	case []float64:
		sc = make([]float32, len(v))
		for i, x := range v {
			sc[i] = float32(x)
		}
	}
	if len(toks) == 0 || len(sc) != len(toks) {
		return nil, fmt.Errorf("llm: GGUF has %d tokens and %d scores", len(toks), len(sc))
	}
	pieces, scores := make([]string, len(toks)), make([]float32, len(toks))
	for i, s := range toks {
		pieces[i], scores[i] = strings.ReplaceAll(s, "\u2581", " "), sc[i]
	}
	return NewLlama2cTokenizer(pieces, scores)
}

// LoadGGUFTokenizer reads the tokenizer of a GGUF file.
func LoadGGUFTokenizer(path string) (*Llama2cTokenizer, error) {
	return fromGGUF(path, GGUFTokenizer)
}

// fromGGUF builds a tokenizer from the metadata of the GGUF file at
// path. The file is mapped, not read: only the header's metadata is
// touched, and build keeps copies of it (Parse copies every string and
// array), so the mapping is released when build returns.
func fromGGUF[T any](path string, build func(*gguf.File) (T, error)) (T, error) {
	var none T
	data, err := regular.Map(path, 0)
	if err != nil {
		return none, fmt.Errorf("gguf: %w", err)
	}
	defer regular.Unmap(data)
	f, err := gguf.Parse(data)
	if err != nil {
		return none, fmt.Errorf("%s: %w", path, err)
	}
	t, err := build(f)
	if err != nil {
		return none, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
