package grammar

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Index is a vocabulary arranged for masking: the token texts in a trie
// stored in preorder, so that a node's subtree is the range from it to
// its end and a dead prefix skips its whole subtree at once. Tokens of
// plain string text (whole UTF-8 characters, no quote, backslash or
// control character) are also kept as a bitset: inside a string they are
// all valid, so there only the other tokens are walked (a second trie).
type Index struct {
	size  int     // vocabulary size
	ends  []int32 // the end-of-text tokens
	all   trie
	other trie // the tokens that are not plain
	plain []uint64
	// nPlain plain tokens, the most characters of one
	nPlain, maxRunes int
	// the plain tokens by their number of characters (for a string
	// with a maximum length)
	byRunes    []int32
	runesOfIdx []int32
	slow       bool // tests: never take the plain-token shortcut
}

type trie struct {
	// nodes in preorder; node 0 is the root (no byte)
	by   []byte
	end  []int32 // one past the node's subtree
	tok0 []int32 // tokens ending at node i: toks[tok0[i]:tok0[i+1]]
	toks []int32
}

// NewIndex indexes a vocabulary: texts[id] is token id's text as it
// appears in generated text, and ends are the tokens that end a
// generation. A token with no text that is not an end token is never
// allowed under a grammar.
func NewIndex(texts []string, ends []int) *Index {
	ix := &Index{size: len(texts), plain: make([]uint64, (len(texts)+63)/64)}
	isEnd := map[int]bool{}
	for _, e := range ends {
		if e >= 0 && e < len(texts) && !isEnd[e] {
			ix.ends = append(ix.ends, int32(e))
			isEnd[e] = true
		}
	}
	ids := make([]int32, 0, len(texts))
	for id, t := range texts {
		if t != "" && !isEnd[id] {
			ids = append(ids, int32(id))
		}
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if c := strings.Compare(texts[a], texts[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	var other []int32
	runes := map[int32]int32{}
	for _, id := range ids {
		if n, ok := plainText(texts[id]); ok {
			ix.plain[id>>6] |= 1 << (id & 63)
			ix.nPlain++
			ix.maxRunes = max(ix.maxRunes, n)
			ix.byRunes = append(ix.byRunes, id)
			runes[id] = int32(n)
		} else {
			other = append(other, id)
		}
	}
	slices.SortStableFunc(ix.byRunes, func(a, b int32) int { return cmp.Compare(runes[a], runes[b]) })
	for _, id := range ix.byRunes {
		ix.runesOfIdx = append(ix.runesOfIdx, runes[id])
	}
	ix.all.build(texts, ids)
	ix.other.build(texts, other)
	return ix
}

// plainText reports whether t is whole UTF-8 characters that a JSON
// string holds as they are, and how many.
func plainText(t string) (int, bool) {
	n := 0
	for _, r := range t {
		if r == utf8.RuneError || r < 0x20 || r == '"' || r == '\\' {
			return 0, false
		}
		n++
	}
	return n, true
}

// build makes the trie of the texts of ids, which are sorted by text.
func (tr *trie) build(texts []string, ids []int32) {
	tr.by = append(tr.by, 0)
	tr.end = append(tr.end, 0)
	tr.tok0 = append(tr.tok0, 0)
	path := []int32{0} // path[d]: the node at depth d of the previous text
	prev := ""
	for _, id := range ids {
		t := texts[id]
		l := 0
		for l < len(t) && l < len(prev) && t[l] == prev[l] {
			l++
		}
		// close the nodes of prev below the common prefix
		for d := len(path) - 1; d > l; d-- {
			tr.end[path[d]] = int32(len(tr.by))
		}
		path = path[:l+1]
		for d := l; d < len(t); d++ {
			tr.by = append(tr.by, t[d])
			tr.end = append(tr.end, 0)
			tr.tok0 = append(tr.tok0, int32(len(tr.toks)))
			path = append(path, int32(len(tr.by)-1))
		}
		tr.toks = append(tr.toks, id) // at the last node made (or the same text's)
		prev = t
	}
	for d := len(path) - 1; d >= 0; d-- {
		tr.end[path[d]] = int32(len(tr.by))
	}
	tr.tok0 = append(tr.tok0, int32(len(tr.toks)))
}

// Size is the vocabulary size.
func (ix *Index) Size() int { return ix.size }

// Mask sets allow (a bitset of ix.Size() bits, cleared first) to the
// tokens that may come next: those whose text keeps the text in the
// grammar and, with left tokens left to generate (this one included),
// leaves a completion that fits in the rest, and the end tokens when the
// text is complete. It returns how many tokens it allowed. The matcher is
// unchanged.
func (m *Matcher) Mask(ix *Index, left int, allow []uint64) int {
	clear(allow)
	n := 0
	if m.CanEnd() {
		for _, e := range ix.ends {
			allow[e>>6] |= 1 << (e & 63)
			n++
		}
	}
	if len(m.tops) == 0 {
		return n
	}
	mk := masker{m: m, tr: &ix.all, allow: allow, left: int64(left)}
	mk.d0 = int64(m.Rest())
	for _, t := range m.tops { // the shortcut in fits bounds growth from each stack
		mk.dMax = max(mk.dMax, m.w.rest(t))
	}
	if room, ok := m.inString(); ok && !ix.slow && mk.d0 <= mk.left-2 {
		// every plain token that fits the string's room continues it
		// and leaves its completion no longer: set them at once, walk
		// the others
		if room >= int64(ix.maxRunes) {
			for i, x := range ix.plain {
				allow[i] |= x
			}
			n += ix.nPlain
		} else {
			for i, id := range ix.byRunes {
				if int64(ix.runesOfIdx[i]) > room {
					break
				}
				allow[id>>6] |= 1 << (id & 63)
				n++
			}
		}
		mk.tr = &ix.other
	}
	mark := len(m.w.ar)
	mk.tops = append(mk.tops[:0], m.tops...)
	for c := int32(1); c < mk.tr.end[0]; c = mk.tr.end[c] {
		mk.visit(c, 0, len(m.tops), 1)
	}
	m.w.ar = m.w.ar[:mark]
	return n + mk.n
}

// inString reports whether the one state is inside a string, between
// characters, and how many more characters it may take.
func (m *Matcher) inString() (room int64, ok bool) {
	if len(m.tops) != 1 {
		return 0, false
	}
	f := m.w.ar[m.tops[0]]
	if f.node < 0 || f.st != sIn {
		return 0, false
	}
	n := &m.w.g.nodes[f.node]
	if n.kind != kString || n.re != nil { // a pattern's string: its DFA decides each byte
		return 0, false
	}
	if n.maxN < 0 {
		return inf, true
	}
	return int64(n.maxN - f.a), true
}

type masker struct {
	m     *Matcher
	tr    *trie
	allow []uint64
	left  int64
	d0    int64 // the shortest completion now; dMax the longest of a stack's
	dMax  int64
	tops  []int32 // stacks of the states along the trie path
	n     int
}

// visit walks trie node i (at depth depth) from the states tops[lo:hi].
func (mk *masker) visit(i int32, lo, hi, depth int) {
	w := &mk.m.w
	mark, tmark := len(w.ar), len(mk.tops)
	c := mk.tr.by[i]
	for k := lo; k < hi; k++ {
		mk.tops = w.step(mk.tops[k], c, mk.tops)
	}
	nlo, nhi := tmark, len(mk.tops)
	if nhi-nlo > maxTops {
		nhi = nlo + maxTops
	}
	if nhi > nlo {
		if t0, t1 := mk.tr.tok0[i], mk.tr.tok0[i+1]; t0 < t1 && mk.fits(nlo, nhi, depth) {
			for _, id := range mk.tr.toks[t0:t1] {
				mk.allow[id>>6] |= 1 << (id & 63)
			}
			mk.n += int(t1 - t0)
		}
		for ch := i + 1; ch < mk.tr.end[i]; ch = mk.tr.end[ch] {
			mk.visit(ch, nlo, nhi, depth+1)
		}
	}
	w.ar = w.ar[:mark]
	mk.tops = mk.tops[:tmark]
}

// fits reports whether, after a token of depth bytes that leads to the
// states tops[lo:hi], the shortest completion still fits in the tokens
// left after it, an end token included (one byte per token at worst).
func (mk *masker) fits(lo, hi, depth int) bool {
	budget := mk.left - 2 // the bytes of completion the tokens after this one can write
	if budget >= mk.dMax+int64(depth)*mk.m.w.g.maxGrow {
		return true // far from the budget: no stack can have grown past it
	}
	for _, t := range mk.tops[lo:hi] {
		if mk.m.w.rest(t) <= budget {
			return true
		}
	}
	return false
}
