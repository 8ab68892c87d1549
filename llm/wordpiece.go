package llm

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// wpm encodes a text fragment with BERT's WordPiece as llama.cpp does:
// the text is lowercased and stripped of accents (as the GGUF asks), cut
// at white space and around punctuation, ASCII symbols and CJK
// ideographs; each word, with '▁' before it, is covered by the longest
// tokens from the left, and a word that cannot be covered is [UNK].
func (v *Vocab) wpm(text string, out []int) []int {
	for _, w := range v.wpmWords(text) {
		word := "\u2581" + w
		n := len(word)
		start := len(out)
		for i := 0; i < n; {
			matched := false
			for j := min(n, i+v.maxLen+1); j > i; j-- {
				if id, ok := v.index[word[i:j]]; ok {
					out = append(out, id)
					i, matched = j, true
					break
				}
			}
			if !matched {
				out = out[:start]
				break
			}
		}
		if len(out) == start && v.unk >= 0 {
			out = append(out, v.unk)
		}
	}
	return out
}

// wpmWords is WordPiece's pre-tokenization.
func (v *Vocab) wpmWords(text string) []string {
	var words []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			words = append(words, cur.String())
			cur.Reset()
		}
	}
	for _, r := range text {
		if v.stripAccents {
			// the first code point of the canonical decomposition
			if d := norm.NFD.String(string(r)); d != "" {
				for _, c := range d {
					r = c
					break
				}
			}
		}
		switch {
		case isWS(r):
			flush()
			continue
		case r == 0 || r == 0xFFFD || unicode.Is(unicode.C, r):
			continue
		case v.stripAccents && isMark(r):
			continue
		}
		if v.lower {
			r = unicode.ToLower(r)
		}
		if isPunct(r) || r < 0x7F && unicode.IsSymbol(r) || isCJKIdeograph(r) {
			flush()
			words = append(words, string(r))
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	return words
}

// isCJKIdeograph is BERT's "Chinese character" test (the CJK ideograph
// blocks, with the Hugging Face tokenizers' 0x2B920 bound).
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B920 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
