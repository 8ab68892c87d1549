package llm

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// Vocab is the tokenizer a GGUF file describes in its tokenizer.*
// metadata, encoding as llama.cpp does: sentencepiece ("llama": merges by
// piece score, byte fallback to <0xXX> pieces, a space before the text),
// byte-level BPE ("gpt2": the pre-tokenizer tokenizer.ggml.pre names cuts
// the text into words, each word's bytes map to GPT-2's printable
// characters and merge by tokenizer.ggml.merges rank) and Gemma 4's BPE
// on sentencepiece-style text ("gemma4": spaces as '▁', raw UTF-8, byte
// fallback) and BERT's WordPiece ("bert"). Special tokens (control, user-defined) are found in the text
// before any of that, as llama.cpp's tokenizer does.
type Vocab struct {
	kind     vocabKind
	model    string
	pre      *preTokenizer
	pieces   []string
	scores   []float32
	attrs    []tokenAttr
	index    map[string]int
	ranks    map[[2]string]int
	special  []int // control, user-defined and unknown tokens, longest first
	byteEnc  bool  // GPT-2 byte-to-character mapping (byte-level BPE)
	escapeWS bool  // spaces become '▁' before encoding
	prefix   bool  // a space before the text (and after each special token)
	mergeAll bool  // a word that is a token is that token (ignore_merges)
	nlWords  bool  // a word of newlines that is a token is that token (Gemma 4)
	addBOS   bool
	addEOS   bool
	bos, eos int // -1: none
	eot, unk int
	sep      int // WordPiece's [SEP], -1: none
	eog      map[int]bool
	template string
	// WordPiece (BERT): lowercasing and accent stripping, the longest piece
	lower, stripAccents bool
	maxLen              int
}

type vocabKind int

const (
	vocabSPM vocabKind = iota
	vocabBPE
	vocabWPM
)

// tokenAttr are llama.cpp's token attributes, from tokenizer.ggml.token_type.
type tokenAttr uint16

const (
	attrUndefined tokenAttr = 1 << iota
	attrUnknown
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrLStrip
	attrRStrip
)

// token types as GGUF stores them
var tokenTypeAttr = map[int64]tokenAttr{1: attrNormal, 2: attrUnknown, 3: attrControl, 4: attrUserDefined, 5: attrUnused, 6: attrByte}

// eogTexts are the token texts llama.cpp treats as ending a generation
// wherever they occur in a vocabulary.
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

// eotTexts name the end-of-turn token when tokenizer.ggml.eot_token_id does not.
var eotTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
	"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
}

// LoadGGUFVocab reads the tokenizer of a GGUF file.
func LoadGGUFVocab(path string) (*Vocab, error) { return fromGGUF(path, GGUFVocab) }

// metaStrings reads a string array key (nil, nil when absent).
func metaStrings(f *gguf.File, key string) ([]string, error) {
	raw, ok := f.Meta[key]
	if !ok {
		return nil, nil
	}
	out, ok := f.Strings(key)
	if !ok {
		return nil, fmt.Errorf("llm: GGUF %s is %T, want an array of strings", key, raw)
	}
	return out, nil
}

func metaBool(f *gguf.File, key string, def bool) (bool, error) {
	raw, ok := f.Meta[key]
	if !ok {
		return def, nil
	}
	b, ok := raw.(bool)
	if !ok {
		return def, fmt.Errorf("llm: GGUF %s is %T, want a bool", key, raw)
	}
	return b, nil
}

// GGUFVocab reads the tokenizer in a GGUF file's metadata.
func GGUFVocab(f *gguf.File) (*Vocab, error) {
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return nil, errors.New("llm: GGUF has no tokenizer.ggml.model")
	}
	pre, _ := f.String("tokenizer.ggml.pre")
	v := &Vocab{model: model, bos: -1, eos: -1, eot: -1, unk: -1, sep: -1, eog: map[int]bool{}}
	v.template, _ = f.String("tokenizer.chat_template")
	switch model {
	case "llama":
		v.kind, v.prefix, v.escapeWS, v.addBOS = vocabSPM, true, true, true
		v.bos, v.eos, v.unk = 1, 2, 0
	case "gpt2", "gemma4":
		v.kind = vocabBPE
		if model == "gemma4" {
			pre = "gemma4"
		} else {
			v.bos, v.eos = 11, 11
		}
		p, ok := lookupPreTokenizer(pre)
		if !ok {
			return nil, errUnknownPre(pre)
		}
		v.pre = p
		v.byteEnc = true
		switch p.name {
		case "llama3":
			v.mergeAll, v.addBOS = true, true
		case "newlines":
			v.byteEnc, v.escapeWS, v.nlWords, v.addBOS = false, true, true, true
		}
		merges, err := metaStrings(f, "tokenizer.ggml.merges")
		if err != nil {
			return nil, err
		}
		if merges == nil {
			return nil, fmt.Errorf("llm: GGUF BPE tokenizer (tokenizer.ggml.model %q) has no tokenizer.ggml.merges", model)
		}
		if len(merges) > 4*maxVocab {
			return nil, fmt.Errorf("llm: GGUF has %d merges", len(merges))
		}
		v.ranks = make(map[[2]string]int, len(merges))
		for i, m := range merges {
			var a, b string
			if len(m) > 1 {
				if k := strings.IndexByte(m[1:], ' '); k >= 0 {
					a, b = m[:k+1], m[k+2:]
				}
			}
			if _, dup := v.ranks[[2]string{a, b}]; !dup {
				v.ranks[[2]string{a, b}] = i
			}
		}
	case "bert":
		v.kind, v.addBOS = vocabWPM, true
		v.bos, v.unk, v.sep = 101, 100, 102
		var err error
		if v.lower, err = metaBool(f, "tokenizer.ggml.normalizer.lowercase", true); err != nil {
			return nil, err
		}
		if v.stripAccents, err = metaBool(f, "tokenizer.ggml.normalizer.strip_accents", v.lower); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("llm: GGUF tokenizer model %q is not supported (llama, gpt2, gemma4 and bert are)", model)
	}
	var err error
	if v.prefix, err = metaBool(f, "tokenizer.ggml.add_space_prefix", v.prefix && v.kind == vocabSPM); err != nil {
		return nil, err
	}
	toks, err := metaStrings(f, "tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 || len(toks) > maxVocab {
		return nil, fmt.Errorf("llm: GGUF tokenizer.ggml.tokens has %d tokens", len(toks))
	}
	n := len(toks)
	v.pieces, v.scores, v.attrs = make([]string, n), make([]float32, n), make([]tokenAttr, n)
	v.index = make(map[string]int, n)
	if raw, ok := f.Meta["tokenizer.ggml.scores"]; ok {
		arr, ok := f.Numbers("tokenizer.ggml.scores")
		if !ok || len(arr) < n {
			return nil, fmt.Errorf("llm: GGUF tokenizer.ggml.scores is %T of %d, want %d numbers", raw, len(arr), n)
		}
		for i := range n {
			v.scores[i] = float32(arr[i])
		}
	}
	var types []float64
	if raw, ok := f.Meta["tokenizer.ggml.token_type"]; ok {
		arr, ok := f.Numbers("tokenizer.ggml.token_type")
		if !ok || len(arr) < n {
			return nil, fmt.Errorf("llm: GGUF tokenizer.ggml.token_type is %T of %d, want %d integers", raw, len(arr), n)
		}
		types = arr
	}
	for i, s := range toks {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		v.pieces[i] = s
		v.index[s] = i // the last of equal texts, as llama.cpp
		v.maxLen = max(v.maxLen, len(s))
		v.attrs[i] = attrNormal
		if types != nil {
			x := types[i]
			if x != math.Trunc(x) {
				return nil, fmt.Errorf("llm: GGUF tokenizer.ggml.token_type[%d] is %v, want an integer", i, x)
			}
			t := int64(max(min(x, 1<<20), -1<<20))
			if a, ok := tokenTypeAttr[t]; ok {
				v.attrs[i] = a
			} else {
				v.attrs[i] = attrUndefined
			}
		}
	}
	// special ids: the defaults above, then the file's (ignored when out of range)
	for _, s := range []struct {
		key string
		id  *int
	}{{"bos", &v.bos}, {"eos", &v.eos}, {"eot", &v.eot}, {"unknown", &v.unk}, {"seperator", &v.sep}} {
		if *s.id >= n {
			*s.id = -1
		}
		if id, ok := f.Uint("tokenizer.ggml." + s.key + "_token_id"); ok && id < uint64(n) {
			*s.id = int(id)
		}
	}
	if v.addBOS, err = metaBool(f, "tokenizer.ggml.add_bos_token", v.addBOS); err != nil {
		return nil, err
	}
	if v.addEOS, err = metaBool(f, "tokenizer.ggml.add_eos_token", v.addEOS); err != nil {
		return nil, err
	}
	if v.pre != nil && v.pre.name == "newlines" {
		v.addBOS = true // as llama.cpp does for Gemma 4
	}
	v.findEndTokens(f)
	for id := range n {
		if v.attrs[id]&(attrControl|attrUserDefined|attrUnknown) != 0 {
			v.special = append(v.special, id)
		}
	}
	sort.SliceStable(v.special, func(a, b int) bool { return len(v.pieces[v.special[a]]) > len(v.pieces[v.special[b]]) })
	if name, _ := f.String("general.name"); strings.Contains(strings.ToLower(name), "phi-3") || strings.Contains(strings.ToLower(name), "phi3") {
		// Phi-3's special tokens swallow the white space after them
		for _, id := range v.special {
			v.attrs[id] |= attrRStrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id, ok := v.index[s]; ok {
				v.attrs[id] &^= attrRStrip
			}
		}
		if id, ok := v.index["</s>"]; ok {
			v.attrs[id] |= attrRStrip
		}
	}
	if v.addBOS && v.bos < 0 {
		return nil, errors.New("llm: GGUF tokenizer adds a BOS token but has none")
	}
	return v, nil
}

// findEndTokens sets the end-of-turn id and the ids that end a
// generation (EOS, EOT and the end-marking texts llama.cpp knows).
func (v *Vocab) findEndTokens(f *gguf.File) {
	if v.eot < 0 {
		for _, s := range eotTexts {
			if id, ok := v.index[s]; ok && (v.eot < 0 || id < v.eot) {
				v.eot = id
			}
		}
	}
	for _, s := range eogTexts {
		if id, ok := v.index[s]; ok {
			v.eog[id] = true
			v.attrs[id] |= attrControl
		}
	}
	if id, ok := f.Uint("tokenizer.ggml.eom_token_id"); ok && id < uint64(len(v.pieces)) {
		v.eog[int(id)] = true
	}
	for _, id := range []int{v.eos, v.eot} {
		if id >= 0 {
			v.eog[id] = true
		}
	}
	has := func(s string) (int, bool) {
		id, ok := v.index[s]
		return id, ok && v.eog[id]
	}
	// a vocabulary with the harmony (or solar) call tokens ends turns on
	// those, not on <|end|>; one with <|tool_response> does not end on </s>
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && (ret && call || (call || calls) && flush) {
		delete(v.eog, end)
		v.attrs[end] = attrUserDefined
	}
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			delete(v.eog, s)
			v.attrs[s] = attrNormal
		}
	}
}

// BOS is the beginning-of-sequence id, -1 if none.
func (v *Vocab) BOS() int { return v.bos }

// EOS is the end-of-sequence id, -1 if none.
func (v *Vocab) EOS() int { return v.eos }

// EOT is the end-of-turn id (tokenizer.ggml.eot_token_id, else the
// vocabulary's <|eot_id|>, <|im_end|>, <end_of_turn>, ...), -1 if none.
func (v *Vocab) EOT() int { return v.eot }

// IsEOG reports whether id ends a generation: EOS, EOT or another token
// that ends a turn (the set llama.cpp stops at).
func (v *Vocab) IsEOG(id int) bool { return v.eog[id] }

// EOGs lists the ids that end a generation, in increasing order.
func (v *Vocab) EOGs() []int {
	ids := make([]int, 0, len(v.eog))
	for id := range v.eog {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

// AddBOS and AddEOS say whether the model expects BOS before and EOS
// after a text (tokenizer.ggml.add_bos_token, add_eos_token, else the
// tokenizer's default).
func (v *Vocab) AddBOS() bool { return v.addBOS }
func (v *Vocab) AddEOS() bool { return v.addEOS }

// ChatTemplate is the file's tokenizer.chat_template ("" if none).
func (v *Vocab) ChatTemplate() string { return v.template }

// VocabSize is the number of tokens.
func (v *Vocab) VocabSize() int { return len(v.pieces) }

// Model is the tokenizer kind (tokenizer.ggml.model) and PreTokenizer
// the pre-tokenizer's name ("" for sentencepiece).
func (v *Vocab) Model() string { return v.model }
func (v *Vocab) PreTokenizer() string {
	if v.pre == nil {
		return ""
	}
	return v.pre.name
}

// Text is the stored text of token id ("" when out of range).
func (v *Vocab) Text(id int) string {
	if id < 0 || id >= len(v.pieces) {
		return ""
	}
	return v.pieces[id]
}

// IsControl reports whether id is a control token (BOS, EOS, turn markers).
func (v *Vocab) IsControl(id int) bool {
	return id >= 0 && id < len(v.attrs) && v.attrs[id]&attrControl != 0
}

// Encode returns the ids of text with BOS first when bos is set and the
// vocabulary has one; special-token texts in text are not parsed (the
// Tokenizer interface, as generate's --prompt uses it).
func (v *Vocab) Encode(text string, bos bool) ([]int, error) {
	ids, err := v.Tokenize(text, false, false)
	if err != nil {
		return nil, err
	}
	if bos && v.bos >= 0 {
		ids = append([]int{v.bos}, ids...)
	}
	return ids, nil
}

// maxTokenizeBytes bounds the text one call encodes.
const maxTokenizeBytes = 1 << 28

// fragment is a piece of the text still to encode, or a token found in it.
type fragment struct {
	text string
	tok  int // >= 0: a special token
}

// Tokenize returns the ids of text as llama_tokenize does: with
// addSpecial, BOS first and EOS last as the model asks (AddBOS, AddEOS);
// with parseSpecial, control-token texts in text become those tokens
// (user-defined tokens always do).
func (v *Vocab) Tokenize(text string, addSpecial, parseSpecial bool) ([]int, error) {
	if len(text) > maxTokenizeBytes {
		return nil, fmt.Errorf("llm: text of %d bytes to tokenize (at most %d)", len(text), maxTokenizeBytes)
	}
	var frags []fragment
	if text != "" {
		frags = v.partition(text, parseSpecial)
	}
	var out []int
	if addSpecial && v.addBOS {
		out = append(out, v.bos)
	}
	prevSpecial := true
	for _, fr := range frags {
		if fr.tok >= 0 {
			out = append(out, fr.tok)
			prevSpecial = true
			continue
		}
		s := fr.text
		if v.kind == vocabWPM {
			out = v.wpm(s, out)
		} else if v.kind == vocabSPM {
			if v.prefix && prevSpecial {
				s = " " + s
			}
			out = v.spm(strings.ReplaceAll(s, " ", "\u2581"), out)
		} else {
			if v.escapeWS {
				s = strings.ReplaceAll(s, " ", "\u2581")
			}
			out = v.bpe(s, out)
		}
		prevSpecial = false
	}
	if addSpecial && v.kind == vocabWPM {
		if v.sep >= 0 {
			out = append(out, v.sep) // WordPiece closes with [SEP]
		}
	} else if addSpecial && v.addEOS {
		if v.eos < 0 {
			return nil, errors.New("llm: the tokenizer adds EOS but has none")
		}
		out = append(out, v.eos)
	}
	return out, nil
}

// isSpace is C's isspace.
func isSpace(b byte) bool { return b == ' ' || b >= '\t' && b <= '\r' }

// partition cuts text at every occurrence of a special token's text,
// longest tokens first (control and unknown ones only with parseSpecial).
func (v *Vocab) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{text: text, tok: -1}}
	for _, id := range v.special {
		a := v.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		sp := v.pieces[id]
		var next []fragment
		for _, fr := range frags {
			if fr.tok >= 0 || !strings.Contains(fr.text, sp) {
				next = append(next, fr)
				continue
			}
			s := fr.text
			for {
				i := strings.Index(s, sp)
				if i < 0 {
					if s != "" {
						next = append(next, fragment{text: s, tok: -1})
					}
					break
				}
				left := s[:i]
				if a&attrLStrip != 0 {
					left = strings.TrimRightFunc(left, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
				}
				if left != "" {
					next = append(next, fragment{text: left, tok: -1})
				}
				next = append(next, fragment{tok: id})
				s = s[i+len(sp):]
				if a&attrRStrip != 0 {
					s = strings.TrimLeftFunc(s, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
				}
			}
		}
		frags = next
	}
	return frags
}

// utf8Len is the length of the UTF-8 sequence a lead byte starts (1 for
// a stray continuation byte), as llama.cpp cuts symbols.
func utf8Len(b byte) int {
	switch {
	case b < 0xC0:
		return 1
	case b < 0xE0:
		return 2
	case b < 0xF0:
		return 3
	}
	return 4
}

// symbol is a piece of a word during merging: bytes [start, end) of it,
// and its neighbours in the word's linked list.
type symbol struct {
	start, end int
	prev, next int
}

func splitSymbols(w string) []symbol {
	syms := make([]symbol, 0, len(w))
	for i := 0; i < len(w); {
		n := min(utf8Len(w[i]), len(w)-i)
		syms = append(syms, symbol{start: i, end: i + n, prev: len(syms) - 1, next: len(syms) + 1})
		i += n
	}
	if len(syms) > 0 {
		syms[len(syms)-1].next = -1
	}
	return syms
}

// spm encodes one escaped text fragment with sentencepiece's merges: the
// adjacent pair whose concatenation is the highest-scoring token merges
// first (the leftmost of equal scores); pieces left without a token fall
// back to their bytes' <0xXX> tokens.
func (v *Vocab) spm(w string, out []int) []int {
	syms := splitSymbols(w)
	h := &mergeHeap{score: true}
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		if id, ok := v.index[w[syms[l].start:syms[r].end]]; ok {
			h.push(mergeItem{left: l, right: r, score: v.scores[id], size: syms[r].end - syms[l].start})
		}
	}
	mergeSymbols(syms, h, try)
	return v.emit(w, syms, out, v.byteToken)
}

// mergeSymbols queues every adjacent pair of syms with try, then merges
// the pairs in the heap's order: a merged pair's new neighbours are
// queued with try, and a popped pair whose sides changed since it was
// queued (its size, or its left side's size when it was recorded) is
// dropped.
func mergeSymbols(syms []symbol, h *mergeHeap, try func(l, r int)) {
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for h.len() > 0 {
		it := h.pop()
		l, r := &syms[it.left], &syms[it.right]
		if l.end == l.start || r.end == r.start || l.next != it.right || r.end-l.start != it.size ||
			(it.lsize != 0 && l.end-l.start != it.lsize) {
			continue
		}
		l.end = r.end
		r.start = r.end
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = it.left
		}
		try(l.prev, it.left)
		try(it.left, l.next)
	}
}

// emit appends the token of each merged symbol of w; a symbol without
// one becomes the tokens byteTok gives its bytes (none for a byte it
// has no token for).
func (v *Vocab) emit(w string, syms []symbol, out []int, byteTok func(byte) (int, bool)) []int {
	for i := 0; i >= 0 && len(syms) > 0; i = syms[i].next {
		s := w[syms[i].start:syms[i].end]
		if id, ok := v.index[s]; ok {
			out = append(out, id)
			continue
		}
		for j := 0; j < len(s); j++ {
			if id, ok := byteTok(s[j]); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// byteToken is the token of one byte: <0xXX> (sentencepiece), else the
// byte as a one-byte text.
func (v *Vocab) byteToken(b byte) (int, bool) {
	if id, ok := v.index[fmt.Sprintf("<0x%02X>", b)]; ok {
		return id, true
	}
	id, ok := v.index[string([]byte{b})]
	return id, ok
}

// bpe encodes one text fragment: pre-tokenized into words, each merged
// by rank.
func (v *Vocab) bpe(text string, out []int) []int {
	// a byte of a symbol without a token: the one-byte text (of the
	// byte-encoded word) in a byte-encoded vocabulary, else its <0xXX>
	// token
	byteTok := func(b byte) (int, bool) {
		if v.byteEnc {
			id, ok := v.index[string([]byte{b})]
			return id, ok
		}
		id, ok := v.index[fmt.Sprintf("<0x%02X>", b)]
		return id, ok
	}
	for _, wr := range v.pre.split([]rune(text)) {
		var w string
		if v.byteEnc {
			var sb strings.Builder
			for _, b := range []byte(string(wr)) {
				sb.WriteRune(byteChars[b])
			}
			w = sb.String()
		} else {
			w = string(wr)
		}
		if v.mergeAll || v.nlWords && strings.Trim(w, "\n") == "" {
			if id, ok := v.index[w]; ok {
				out = append(out, id)
				continue
			}
		}
		syms := splitSymbols(w)
		h := &mergeHeap{}
		try := func(l, r int) {
			if l < 0 || r < 0 {
				return
			}
			rank, ok := v.ranks[[2]string{w[syms[l].start:syms[l].end], w[syms[r].start:syms[r].end]}]
			if ok {
				h.push(mergeItem{left: l, right: r, rank: rank, size: syms[r].end - syms[l].start, lsize: syms[l].end - syms[l].start})
			}
		}
		mergeSymbols(syms, h, try)
		out = v.emit(w, syms, out, byteTok)
	}
	return out
}

// mergeItem is a candidate merge of two adjacent symbols.
type mergeItem struct {
	left, right int
	rank        int     // BPE: lower first
	score       float32 // sentencepiece: higher first
	size, lsize int
}

// mergeHeap is a binary heap of candidate merges: by rank (BPE) or score
// (sentencepiece), then leftmost.
type mergeHeap struct {
	items []mergeItem
	score bool
}

func (h *mergeHeap) less(a, b mergeItem) bool {
	if h.score {
		if a.score != b.score {
			return a.score > b.score
		}
	} else if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}

func (h *mergeHeap) len() int { return len(h.items) }

func (h *mergeHeap) push(it mergeItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < last && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

// TokenBytes is the text token id stands for: a byte token its byte, a
// normal token its text with '▁' as space (sentencepiece style) or its
// GPT-2 characters mapped back to bytes (byte-level BPE), a control or
// unknown token its text when special is set and nothing otherwise.
func (v *Vocab) TokenBytes(id int, special bool) []byte {
	if id < 0 || id >= len(v.pieces) {
		return nil
	}
	a, p := v.attrs[id], v.pieces[id]
	switch {
	case a&(attrControl|attrUnknown) != 0:
		if special {
			return []byte(p)
		}
		return nil
	case a&attrUserDefined != 0:
		return []byte(p)
	case a&attrByte != 0:
		if len(p) == 6 && strings.HasPrefix(p, "<0x") && p[5] == '>' {
			var b byte
			if _, err := fmt.Sscanf(p[3:5], "%02X", &b); err == nil {
				return []byte{b}
			}
		}
		if v.byteEnc {
			if r, _ := utf8.DecodeRuneInString(p); r != utf8.RuneError {
				if b, ok := charBytes[r]; ok {
					return []byte{b}
				}
			}
		}
		return []byte(p)
	case a&attrNormal != 0:
		if v.kind != vocabBPE || v.escapeWS {
			return []byte(strings.ReplaceAll(p, "\u2581", " "))
		}
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
	return nil
}

// Piece is the text of next after prev (the Tokenizer interface): its
// bytes without control tokens, and for sentencepiece the leading space
// of the first piece after BOS (or at the start, prev < 0) dropped.
func (v *Vocab) Piece(prev, next int) string {
	b := v.TokenBytes(next, false)
	if v.kind == vocabSPM && v.prefix && (prev < 0 || prev == v.bos) && len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	return string(b)
}

// Decode is the text of ids (control tokens left out; a leading space
// that the sentencepiece prefix added dropped).
func (v *Vocab) Decode(ids []int) string {
	var sb strings.Builder
	prev := -1
	for _, id := range ids {
		sb.WriteString(v.Piece(prev, id))
		prev = id
	}
	return sb.String()
}
