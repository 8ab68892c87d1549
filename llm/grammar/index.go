package grammar

import (
	"sort"
)

// Index is a vocabulary arranged for masking: the token texts in a trie
// stored in preorder, so that a node's subtree is the range from it to
// its end and a dead prefix skips its whole subtree at once.
type Index struct {
	size int     // vocabulary size
	ends []int32 // the end-of-text tokens
	// trie nodes in preorder; node 0 is the root (no byte)
	by   []byte
	end  []int32 // one past the node's subtree
	tok0 []int32 // tokens ending at node i: toks[tok0[i]:tok0[i+1]]
	toks []int32
	// maxLen is the longest token text
	maxLen int
}

// NewIndex indexes a vocabulary: texts[id] is token id's text as it
// appears in generated text, and ends are the tokens that end a
// generation. A token with no text that is not an end token is never
// allowed under a grammar.
func NewIndex(texts []string, ends []int) *Index {
	ix := &Index{size: len(texts)}
	for _, e := range ends {
		if e >= 0 && e < len(texts) {
			ix.ends = append(ix.ends, int32(e))
		}
	}
	isEnd := map[int]bool{}
	for _, e := range ends {
		isEnd[e] = true
	}
	ids := make([]int32, 0, len(texts))
	for id, t := range texts {
		if t != "" && !isEnd[id] {
			ids = append(ids, int32(id))
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := texts[ids[i]], texts[ids[j]]
		return a < b || a == b && ids[i] < ids[j]
	})
	ix.by = append(ix.by, 0)
	ix.end = append(ix.end, 0)
	ix.tok0 = append(ix.tok0, 0)
	path := []int32{0} // path[d]: the node at depth d of the previous text
	prev := ""
	for _, id := range ids {
		t := texts[id]
		ix.maxLen = max(ix.maxLen, len(t))
		l := 0
		for l < len(t) && l < len(prev) && t[l] == prev[l] {
			l++
		}
		// close the nodes of prev below the common prefix
		for d := len(path) - 1; d > l; d-- {
			ix.end[path[d]] = int32(len(ix.by))
		}
		path = path[:l+1]
		for d := l; d < len(t); d++ {
			ix.by = append(ix.by, t[d])
			ix.end = append(ix.end, 0)
			ix.tok0 = append(ix.tok0, int32(len(ix.toks)))
			path = append(path, int32(len(ix.by)-1))
		}
		ix.toks = append(ix.toks, id) // at the last node made (or the same text's)
		prev = t
	}
	for d := len(path) - 1; d >= 0; d-- {
		ix.end[path[d]] = int32(len(ix.by))
	}
	ix.tok0 = append(ix.tok0, int32(len(ix.toks)))
	return ix
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
	mk := masker{m: m, ix: ix, allow: allow, left: int64(left)}
	mk.d0 = int64(m.Rest())
	mark := len(m.w.ar)
	mk.tops = append(mk.tops[:0], m.tops...)
	for c := int32(1); c < ix.end[0]; c = ix.end[c] {
		mk.visit(c, 0, len(m.tops), 1)
	}
	m.w.ar = m.w.ar[:mark]
	return n + mk.n
}

type masker struct {
	m     *Matcher
	ix    *Index
	allow []uint64
	left  int64
	d0    int64
	tops  []int32 // stacks of the states along the trie path
	n     int
}

// visit walks trie node i (at depth depth) from the states tops[lo:hi].
func (mk *masker) visit(i int32, lo, hi, depth int) {
	w := &mk.m.w
	mark, tmark := len(w.ar), len(mk.tops)
	c := mk.ix.by[i]
	for k := lo; k < hi; k++ {
		mk.tops = w.step(mk.tops[k], c, mk.tops)
	}
	nlo, nhi := tmark, len(mk.tops)
	if nhi-nlo > maxTops {
		nhi = nlo + maxTops
	}
	if nhi > nlo {
		if t0, t1 := mk.ix.tok0[i], mk.ix.tok0[i+1]; t0 < t1 && mk.fits(nlo, nhi, depth) {
			for _, id := range mk.ix.toks[t0:t1] {
				mk.allow[id>>6] |= 1 << (id & 63)
			}
			mk.n += int(t1 - t0)
		}
		for ch := i + 1; ch < mk.ix.end[i]; ch = mk.ix.end[ch] {
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
	if budget >= mk.d0+int64(depth)*mk.m.w.g.maxGrow {
		return true // far from the budget: no need to look
	}
	for _, t := range mk.tops[lo:hi] {
		if mk.m.w.rest(t) <= budget {
			return true
		}
	}
	return false
}
