package grammar

import "fmt"

// Matcher is one generation's position in a grammar.
type Matcher struct {
	w    walker
	tops []int32
	tmp  []int32
}

// NewMatcher starts a text.
func (g *Grammar) NewMatcher() *Matcher {
	m := &Matcher{w: walker{g: g}}
	st := rPre
	if len(g.prefix) == 0 {
		st = rValue
	}
	m.tops = []int32{m.w.push(frame{parent: -1, node: -1, st: st})}
	return m
}

// Advance feeds text; false when the text leaves the grammar (the
// matcher is then dead: nothing more is accepted and it cannot end).
func (m *Matcher) Advance(text []byte) bool {
	for _, c := range text {
		m.tmp = m.tmp[:0]
		for _, t := range m.tops {
			m.tmp = m.w.step(t, c, m.tmp)
		}
		m.tops, m.tmp = m.tmp, m.tops
		if len(m.tops) > maxTops {
			m.tops = m.tops[:maxTops]
		}
		if len(m.tops) == 0 {
			break
		}
	}
	m.compact()
	return len(m.tops) > 0
}

// compact copies the live frames to a fresh arena, dropping the stacks
// that are equal to an earlier one.
func (m *Matcher) compact() {
	old := m.w.ar
	ar := make([]frame, 0, 16)
	moved := map[int32]int32{}
	var move func(i int32) int32
	move = func(i int32) int32 {
		if i < 0 {
			return -1
		}
		if j, ok := moved[i]; ok {
			return j
		}
		f := old[i]
		f.parent = move(f.parent)
		// an equal frame already moved is the same state
		for j := range ar {
			if ar[j] == f {
				moved[i] = int32(j)
				return int32(j)
			}
		}
		ar = append(ar, f)
		moved[i] = int32(len(ar) - 1)
		return int32(len(ar) - 1)
	}
	tops := m.tops[:0]
	for _, t := range m.tops {
		nt := move(t)
		dup := false
		for _, x := range tops {
			dup = dup || x == nt
		}
		if !dup {
			tops = append(tops, nt)
		}
	}
	m.tops = tops
	m.w.ar = ar
}

// Dead reports whether the text has left the grammar.
func (m *Matcher) Dead() bool { return len(m.tops) == 0 }

// CanEnd reports whether the text so far is complete.
func (m *Matcher) CanEnd() bool {
	for _, t := range m.tops {
		if m.w.canEnd(t) {
			return true
		}
	}
	return false
}

// Rest is the fewest bytes that complete the text (-1 when dead).
func (m *Matcher) Rest() int {
	if len(m.tops) == 0 {
		return -1
	}
	best := inf
	for _, t := range m.tops {
		best = min(best, m.w.rest(t))
	}
	return int(best)
}

// String describes the matcher's stacks, for debugging.
func (m *Matcher) String() string {
	s := ""
	for _, t := range m.tops {
		s += fmt.Sprintf("[rest %d]", m.w.rest(t))
		for t >= 0 {
			f := m.w.ar[t]
			s += fmt.Sprintf(" {n%d st%d a%d b%d c%d}", f.node, f.st, f.a, f.b, f.c)
			t = f.parent
		}
		s += "\n"
	}
	return s
}

// litTrie holds the texts of literal values (enum, const, true, ...).
type litTrie struct {
	kids   [][]litEdge
	term   []bool
	dist   []int32 // the fewest bytes to a whole text
	maxLen int
}

type litEdge struct {
	c    byte
	next int32
}

func newLitTrie(texts []string) *litTrie {
	t := &litTrie{kids: [][]litEdge{nil}, term: []bool{false}}
	for _, s := range texts {
		t.maxLen = max(t.maxLen, len(s))
		n := int32(0)
		for i := range len(s) {
			k := t.next(n, s[i])
			if k < 0 {
				k = int32(len(t.kids))
				t.kids = append(t.kids, nil)
				t.term = append(t.term, false)
				t.kids[n] = append(t.kids[n], litEdge{s[i], k})
			}
			n = k
		}
		t.term[n] = true
	}
	t.dist = make([]int32, len(t.kids))
	var d func(n int32) int32
	d = func(n int32) int32 {
		best := int32(1 << 30)
		if t.term[n] {
			best = 0
		}
		for _, e := range t.kids[n] {
			best = min(best, d(e.next)+1)
		}
		t.dist[n] = best
		return best
	}
	d(0)
	return t
}

func (t *litTrie) next(n int32, c byte) int32 {
	for _, e := range t.kids[n] {
		if e.c == c {
			return e.next
		}
	}
	return -1
}
