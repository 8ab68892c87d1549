package llm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/internal/regular"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Encode returns the ids of text, with BOS first when bos is set.
	Encode(text string, bos bool) ([]int, error)
	// Piece returns the text of token next as it follows token prev
	// (sentencepiece drops the leading space of the first piece after BOS).
	Piece(prev, next int) string
	// BOS is the beginning-of-sequence id; VocabSize the number of ids.
	BOS() int
	VocabSize() int
}

// Llama2cTokenizer reads llama2.c's tokenizer.bin format: an int32 longest
// token length, then for every token a float32 merge score, an int32 byte
// length and the bytes. Ids 0, 1, 2 are <unk>, <s> (BOS), </s>; ids 3..258
// are the byte-fallback pieces <0x00>..<0xFF>.
type Llama2cTokenizer struct {
	vocab  []string
	scores []float32
	index  map[string]int
	maxLen int
}

// maxVocab bounds the vocabulary a hostile file can make us allocate.
const maxVocab = 1 << 21

// LoadLlama2cTokenizer reads a tokenizer.bin file with vocabSize entries
// (the checkpoint's header says how many).
func LoadLlama2cTokenizer(path string, vocabSize int) (*Llama2cTokenizer, error) {
	f, _, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ReadLlama2cTokenizer(f, vocabSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadLlama2cTokenizer reads the llama2.c tokenizer format from r.
func ReadLlama2cTokenizer(r io.Reader, vocabSize int) (*Llama2cTokenizer, error) {
	if vocabSize <= 3 || vocabSize > maxVocab {
		return nil, fmt.Errorf("llama2.c tokenizer: vocabulary size %d out of range", vocabSize)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("llama2.c tokenizer: header: %w", err)
	}
	t := &Llama2cTokenizer{maxLen: int(int32(binary.LittleEndian.Uint32(hdr[:]))), index: make(map[string]int, vocabSize)}
	if t.maxLen <= 0 || t.maxLen > 1<<16 {
		return nil, fmt.Errorf("llama2.c tokenizer: longest token length %d out of range", t.maxLen)
	}
	var rec [8]byte
	for i := 0; i < vocabSize; i++ {
		if _, err := io.ReadFull(r, rec[:]); err != nil {
			return nil, fmt.Errorf("llama2.c tokenizer: token %d of %d: %w", i, vocabSize, err)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(rec[:4]))
		n := int(int32(binary.LittleEndian.Uint32(rec[4:])))
		if n < 0 || n > t.maxLen {
			return nil, fmt.Errorf("llama2.c tokenizer: token %d has length %d (longest %d)", i, n, t.maxLen)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("llama2.c tokenizer: token %d: %w", i, err)
		}
		s := string(b)
		t.vocab = append(t.vocab, s)
		t.scores = append(t.scores, score)
		if _, dup := t.index[s]; !dup {
			t.index[s] = i
		}
	}
	return t, nil
}

// BOS is id 1 (<s>).
func (t *Llama2cTokenizer) BOS() int { return 1 }

// VocabSize is the number of tokens.
func (t *Llama2cTokenizer) VocabSize() int { return len(t.vocab) }

// Encode follows llama2.c's encoder: a dummy-prefix space before non-empty
// text, one piece per UTF-8 character (unknown characters fall back to
// their bytes, id byte+3), then greedy merges of the adjacent pair whose
// concatenation is the vocabulary's highest-scoring piece.
func (t *Llama2cTokenizer) Encode(text string, bos bool) ([]int, error) {
	var ids []int
	if bos {
		ids = append(ids, t.BOS())
	}
	if text == "" {
		return ids, nil
	}
	if !utf8.ValidString(text) {
		return nil, errors.New("llama2.c tokenizer: text is not valid UTF-8")
	}
	if sp, ok := t.index[" "]; ok {
		ids = append(ids, sp)
	}
	for _, r := range text {
		c := string(r)
		if id, ok := t.index[c]; ok {
			ids = append(ids, id)
			continue
		}
		for i := 0; i < len(c); i++ {
			id := int(c[i]) + 3
			if id >= len(t.vocab) {
				id = 0 // <unk>: a vocabulary without the byte pieces
			}
			ids = append(ids, id)
		}
	}
	start := 0
	if bos {
		start = 1
	}
	for {
		best, bestID, at := float32(math.Inf(-1)), -1, -1
		for i := start; i+1 < len(ids); i++ {
			id, ok := t.index[t.vocab[ids[i]]+t.vocab[ids[i+1]]]
			if ok && t.scores[id] > best {
				best, bestID, at = t.scores[id], id, i
			}
		}
		if at < 0 {
			return ids, nil
		}
		ids[at] = bestID
		ids = append(ids[:at+1], ids[at+2:]...)
	}
}

// Piece is the text of next after prev, as llama2.c prints it: the leading
// space of the first piece after BOS is dropped and <0xXX> pieces are
// their raw byte.
func (t *Llama2cTokenizer) Piece(prev, next int) string {
	if next < 0 || next >= len(t.vocab) {
		return ""
	}
	p := t.vocab[next]
	if prev == t.BOS() {
		p = strings.TrimPrefix(p, " ")
	}
	var b byte
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		if _, err := fmt.Sscanf(p, "<0x%02X>", &b); err == nil {
			return string([]byte{b})
		}
	}
	return p
}
