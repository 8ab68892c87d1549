package llm

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/internal/regular"
)

// HFTokenizer is a Hugging Face tokenizer.json BPE tokenizer of one of
// the two kinds decoder LLMs ship: byte-level BPE (GPT-2: a ByteLevel
// pre-tokenizer splitting with GPT-2's pattern, bytes mapped to printable
// characters) and sentencepiece-style BPE (Llama: the normalizer prepends
// '▁' and turns spaces into '▁', unknown characters fall back to
// <0xXX> byte tokens). Special added tokens in the text encode to their
// ids; other added tokens are only decoded.
type HFTokenizer struct {
	vocab     map[string]int
	pieces    []string // id → token string
	ranks     map[[2]string]int
	byteLevel bool
	fallback  bool // byte_fallback
	unk       int  // -1: none
	bos       int
	special   []string // special added tokens, longest first
	specialID map[string]int
	byteID    [256]int // <0xXX> ids (sentencepiece style), -1 when absent
	pre       *preTokenizer
	mergeAll  bool // ignore_merges: a word that is a token is that token
}

type hfJSON struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		Normalized bool   `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer *hfPreTokenizer `json:"pre_tokenizer"`
	Model        struct {
		Type         string            `json:"type"`
		Vocab        map[string]int    `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		UnkToken     *string           `json:"unk_token"`
		ByteFallback bool              `json:"byte_fallback"`
		IgnoreMerges bool              `json:"ignore_merges"`
	} `json:"model"`
}

// LoadHFTokenizer reads a tokenizer.json.
func LoadHFTokenizer(path string) (*HFTokenizer, error) {
	b, err := regular.ReadFile(path, 0)
	if err != nil {
		return nil, err
	}
	t, err := ParseHFTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ParseHFTokenizer parses tokenizer.json bytes.
func ParseHFTokenizer(b []byte) (*HFTokenizer, error) {
	var j hfJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if j.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer.json: model type %q (BPE is supported)", j.Model.Type)
	}
	t := &HFTokenizer{vocab: map[string]int{}, ranks: map[[2]string]int{}, unk: -1, bos: -1, specialID: map[string]int{}}
	if j.PreTokenizer != nil {
		steps, byteLevel, err := j.PreTokenizer.steps(0)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
		}
		t.byteLevel, t.pre = byteLevel, &preTokenizer{name: "tokenizer.json", steps: steps}
	}
	t.mergeAll = j.Model.IgnoreMerges
	if !t.byteLevel {
		norm := string(j.Normalizer)
		if !strings.Contains(norm, "Prepend") || !strings.Contains(norm, `"content":"▁"`) && !strings.Contains(norm, `"content": "▁"`) && !strings.Contains(norm, `\u2581`) {
			return nil, errors.New("tokenizer.json: neither a ByteLevel pre-tokenizer nor a sentencepiece-style normalizer (Prepend ▁, spaces to ▁)")
		}
	}
	t.fallback = j.Model.ByteFallback
	size := 0
	for s, id := range j.Model.Vocab {
		if id < 0 || id >= maxVocab {
			return nil, fmt.Errorf("tokenizer.json: token %q has id %d", s, id)
		}
		t.vocab[s] = id
		size = max(size, id+1)
	}
	for _, a := range j.AddedTokens {
		if a.ID < 0 || a.ID >= maxVocab {
			return nil, fmt.Errorf("tokenizer.json: added token %q has id %d", a.Content, a.ID)
		}
		size = max(size, a.ID+1)
		if a.Special && a.Content != "" {
			t.special = append(t.special, a.Content)
			t.specialID[a.Content] = a.ID
		}
	}
	// ids index one table: a few large ids in a small file must not
	// size it (a 60-byte file naming id 2,000,000 asked for 32 MB)
	if tokens := len(j.Model.Vocab) + len(j.AddedTokens); size > 2*tokens+256 {
		return nil, fmt.Errorf("tokenizer.json: ids reach %d for %d tokens (the vocabulary has holes)", size-1, tokens)
	}
	t.pieces = make([]string, size)
	for s, id := range t.vocab {
		t.pieces[id] = s
	}
	for _, a := range j.AddedTokens {
		t.pieces[a.ID] = a.Content
	}
	sort.Slice(t.special, func(a, b int) bool { return len(t.special[a]) > len(t.special[b]) })
	for i, m := range j.Model.Merges {
		var pair [2]string
		var s string
		if err := json.Unmarshal(m, &s); err == nil {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("tokenizer.json: merge %d %q is not two tokens", i, s)
			}
			pair = [2]string{a, b}
		} else if err := json.Unmarshal(m, &pair); err != nil {
			return nil, fmt.Errorf("tokenizer.json: merge %d: %v", i, err)
		}
		if _, dup := t.ranks[pair]; !dup {
			t.ranks[pair] = i
		}
	}
	if j.Model.UnkToken != nil {
		if id, ok := t.vocab[*j.Model.UnkToken]; ok {
			t.unk = id
		}
	}
	for _, name := range []string{"<s>", "<|begin_of_text|>", "<|endoftext|>"} {
		if id, ok := t.specialID[name]; ok {
			t.bos = id
			break
		}
	}
	for i := range t.byteID {
		t.byteID[i] = -1
		if id, ok := t.vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			t.byteID[i] = id
		}
	}
	return t, nil
}

// BOS is <s> (sentencepiece style) or <|endoftext|> (GPT-2), -1 if none.
func (t *HFTokenizer) BOS() int { return t.bos }

// VocabSize is the number of ids, added tokens included.
func (t *HFTokenizer) VocabSize() int { return len(t.pieces) }

// byteChars is GPT-2's byte → printable character table: printable
// Latin-1 bytes map to themselves, the rest to U+0100 and up in order.
var byteChars, charBytes = func() ([256]rune, map[rune]byte) {
	var bc [256]rune
	cb := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			bc[b] = rune(b)
		} else {
			bc[b] = rune(256 + n)
			n++
		}
		cb[bc[b]] = byte(b)
	}
	return bc, cb
}()

// gpt2Split splits text as GPT-2's pattern does (scanGPT2).
func gpt2Split(s string) []string {
	return (&preTokenizer{steps: []splitStep{scanGPT2}}).strings(s)
}

// words pre-tokenizes a byte-level chunk: the tokenizer.json's pre-tokenizer
// steps (GPT-2's pattern when it names none).
func (t *HFTokenizer) words(s string) []string {
	if t.pre == nil || len(t.pre.steps) == 0 {
		return gpt2Split(s)
	}
	return t.pre.strings(s)
}

// hfPreTokenizer is tokenizer.json's pre_tokenizer: ByteLevel, Split with
// a regular expression, Digits, or a Sequence of them.
type hfPreTokenizer struct {
	Type          string            `json:"type"`
	Pretokenizers []*hfPreTokenizer `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior         string `json:"behavior"`
	Invert           bool   `json:"invert"`
	UseRegex         *bool  `json:"use_regex"`
	IndividualDigits bool   `json:"individual_digits"`
}

// steps turns a pre_tokenizer into split steps; byteLevel reports a
// ByteLevel step (bytes mapped to GPT-2's characters).
func (p *hfPreTokenizer) steps(depth int) (steps []splitStep, byteLevel bool, err error) {
	if depth > 8 {
		return nil, false, errors.New("nested too deep")
	}
	switch p.Type {
	case "Sequence":
		for _, q := range p.Pretokenizers {
			if q == nil {
				return nil, false, errors.New("a null pre-tokenizer in a Sequence")
			}
			s, b, err := q.steps(depth + 1)
			if err != nil {
				return nil, false, err
			}
			steps, byteLevel = append(steps, s...), byteLevel || b
		}
		return steps, byteLevel, nil
	case "ByteLevel":
		if p.UseRegex == nil || *p.UseRegex {
			steps = []splitStep{scanGPT2}
		}
		return steps, true, nil
	case "Digits":
		if p.IndividualDigits {
			return []splitStep{isolateEach(isNumber)}, false, nil
		}
		return []splitStep{matchRuns(isNumber)}, false, nil
	case "Split":
		if p.Invert || p.Behavior != "Isolated" || p.Pattern == nil || p.Pattern.Regex == nil {
			return nil, false, fmt.Errorf("pre-tokenizer Split %+v: only an isolating regular expression is supported", p.Pattern)
		}
		step, ok := knownSplitPattern(*p.Pattern.Regex)
		if !ok {
			return nil, false, fmt.Errorf("pre-tokenizer Split pattern %q is not one this package has a scanner for", *p.Pattern.Regex)
		}
		return []splitStep{step}, false, nil
	}
	return nil, false, fmt.Errorf("pre-tokenizer %q is not supported", p.Type)
}

// knownSplitPattern recognises the split expressions of the model
// families' tokenizer.json files (GPT-2's, Llama 3's, Qwen 2's and Qwen
// 3.5's) and returns their scanner.
func knownSplitPattern(re string) (splitStep, bool) {
	compact := strings.ReplaceAll(re, " ", "")
	switch {
	case strings.HasPrefix(re, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"):
		return scanGPT2, true
	case !strings.Contains(compact, "(?i:'s|'t|'re|'ve|'m|'ll|'d)"):
		return nil, false
	case strings.Contains(re, `[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`):
		return llama3Scanner(1, true), true
	case strings.Contains(re, `[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`):
		return llama3Scanner(1, false), true
	case strings.Contains(re, `[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`):
		return llama3Scanner(3, false), true
	}
	return nil, false
}

// bpe merges the symbols of one word by merge rank: always the adjacent
// pair of lowest rank, the leftmost of equal ones, as the tokenizers
// library does; with a heap of candidate pairs over a linked list of
// symbols, so a long word (a sentencepiece-style text is one) costs
// O(n log n), not O(n²).
func (t *HFTokenizer) bpe(syms []string) []string {
	n := len(syms)
	if n < 2 {
		return syms
	}
	next, prev := make([]int, n), make([]int, n)
	for i := range syms {
		next[i], prev[i] = i+1, i-1
	}
	next[n-1] = -1
	h := &pairHeap{}
	push := func(i int) {
		if i < 0 || next[i] < 0 {
			return
		}
		j := next[i]
		if r, ok := t.ranks[[2]string{syms[i], syms[j]}]; ok {
			heap.Push(h, pairItem{rank: r, left: i, ll: len(syms[i]), rl: len(syms[j])})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	dead := make([]bool, n)
	for h.Len() > 0 {
		it := heap.Pop(h).(pairItem)
		i := it.left
		j := next[i]
		// stale: a side was merged since the pair was pushed
		if dead[i] || j < 0 || len(syms[i]) != it.ll || len(syms[j]) != it.rl {
			continue
		}
		syms[i] += syms[j]
		dead[j] = true
		next[i] = next[j]
		if next[j] >= 0 {
			prev[next[j]] = i
		}
		push(prev[i])
		push(i)
	}
	out := syms[:0]
	for i := 0; i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

type pairItem struct {
	rank, left int
	ll, rl     int // the lengths of the two symbols when pushed
}

type pairHeap []pairItem

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].left < h[b].left
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairItem)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Encode returns the ids of text, with BOS first when bos is set (and
// the tokenizer has one).
func (t *HFTokenizer) Encode(text string, bos bool) ([]int, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("tokenizer: text is not valid UTF-8")
	}
	var ids []int
	if bos && t.bos >= 0 {
		ids = append(ids, t.bos)
	}
	first := true
	for len(text) > 0 {
		// the next special token splits the text
		cut, sp := len(text), ""
		for _, s := range t.special {
			if i := strings.Index(text, s); i >= 0 && i < cut {
				cut, sp = i, s
			}
		}
		var err error
		if ids, err = t.encodeChunk(ids, text[:cut], first); err != nil {
			return nil, err
		}
		first = false
		if sp == "" {
			break
		}
		ids = append(ids, t.specialID[sp])
		text = text[cut+len(sp):]
	}
	return ids, nil
}

func (t *HFTokenizer) encodeChunk(ids []int, s string, first bool) ([]int, error) {
	if s == "" {
		return ids, nil
	}
	if t.byteLevel {
		for _, w := range t.words(s) {
			if t.mergeAll {
				var sb strings.Builder
				for i := 0; i < len(w); i++ {
					sb.WriteRune(byteChars[w[i]])
				}
				if id, ok := t.vocab[sb.String()]; ok {
					ids = append(ids, id)
					continue
				}
			}
			var syms []string
			for i := 0; i < len(w); i++ {
				syms = append(syms, string(byteChars[w[i]]))
			}
			for _, p := range t.bpe(syms) {
				id, ok := t.vocab[p]
				if !ok {
					return nil, fmt.Errorf("tokenizer: byte-level piece %q is not in the vocabulary", p)
				}
				ids = append(ids, id)
			}
		}
		return ids, nil
	}
	if first {
		s = " " + s // the Prepend normalizer (before the first chunk only)
	}
	s = strings.ReplaceAll(s, " ", "\u2581")
	var syms []string
	for _, r := range s {
		syms = append(syms, string(r))
	}
	for _, p := range t.bpe(syms) {
		if id, ok := t.vocab[p]; ok {
			ids = append(ids, id)
			continue
		}
		if t.fallback {
			for i := 0; i < len(p); i++ {
				if t.byteID[p[i]] < 0 {
					return nil, fmt.Errorf("tokenizer: no byte token for %#x", p[i])
				}
				ids = append(ids, t.byteID[p[i]])
			}
			continue
		}
		if t.unk < 0 {
			return nil, fmt.Errorf("tokenizer: %q is not in the vocabulary and there is no unknown token", p)
		}
		ids = append(ids, t.unk)
	}
	return ids, nil
}

// bytesOf is the raw bytes a token stands for.
func (t *HFTokenizer) bytesOf(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	p := t.pieces[id]
	if _, special := t.specialID[p]; special {
		return []byte(p)
	}
	if t.byteLevel {
		var b []byte
		for _, r := range p {
			if c, ok := charBytes[r]; ok {
				b = append(b, c)
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
		return b
	}
	if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
		if v, err := strconv.ParseUint(p[3:5], 16, 8); err == nil {
			return []byte{byte(v)}
		}
	}
	return []byte(strings.ReplaceAll(p, "\u2581", " "))
}

// Piece is the text of next after prev: its bytes (a byte-level token
// may hold part of a character; consecutive pieces join into the text);
// in sentencepiece style the leading space of the first piece after BOS
// (or at the start, prev < 0) is dropped.
func (t *HFTokenizer) Piece(prev, next int) string {
	b := t.bytesOf(next)
	if !t.byteLevel && (prev < 0 || prev == t.bos) && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return string(b)
}

// Decode is the text of ids (a leading BOS skipped), the inverse of
// Encode for text without special tokens.
func (t *HFTokenizer) Decode(ids []int) string {
	var sb strings.Builder
	prev := -1
	for i, id := range ids {
		if i == 0 && id == t.bos {
			prev = id
			continue
		}
		sb.WriteString(t.Piece(prev, id))
		prev = id
	}
	return sb.String()
}
