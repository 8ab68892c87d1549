package serve

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/llm/grammar"
)

// sampling is one request's sampling parameters, checked.
type sampling struct {
	temperature float64 // 0: greedy
	topP        float64 // 0 or 1: all
	topK        int     // 0: all
	seed        uint64
	presence    float64
	frequency   float64
	bias        map[int]float64
}

// sampler picks tokens for one sequence: logit_bias, then the presence
// and frequency penalties over the tokens it generated so far (OpenAI's
// definition: logit[j] -= count[j]*frequency + (count[j] > 0)*presence),
// then greedy argmax at temperature 0 (the first of equal maxima, as
// llm.Generate picks), else softmax at the temperature restricted to the
// top k and the top-p nucleus, drawn with a seeded PCG.
type sampler struct {
	p      sampling
	rng    *rand.Rand
	counts map[int]int
	cand   []cand
	heap   []int // pickTopK's
	// con, when set, masks the logits to the tokens its grammar allows
	// (after the bias and penalties) and follows each pick
	con *constraint
}

type cand struct {
	id int
	p  float64
}

func newSampler(p sampling) *sampler {
	return &sampler{p: p, rng: rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15)), counts: map[int]int{}}
}

// next samples from logits (changed in place) and records the pick.
func (s *sampler) next(logits []float32) int {
	for id, b := range s.p.bias {
		if id >= 0 && id < len(logits) {
			logits[id] += float32(b)
		}
	}
	if s.p.presence != 0 || s.p.frequency != 0 {
		for id, c := range s.counts {
			if id < len(logits) {
				logits[id] -= float32(float64(c)*s.p.frequency + s.p.presence)
			}
		}
	}
	var id int
	if s.con == nil {
		id = s.pick(logits)
	} else if id = s.con.mask(logits); id < 0 {
		id = s.pick(logits)
	}
	if s.con != nil {
		s.con.advance(id)
	}
	s.counts[id]++
	return id
}

// constraint is grammar-constrained sampling for one sequence: before
// each pick every token whose text would leave the grammar (or leave a
// completion longer than the tokens left can write) gets logit -Inf;
// the end tokens are allowed only once the text is complete.
type constraint struct {
	m     *grammar.Matcher
	ix    *grammar.Index
	ends  []int
	allow []uint64
	left  int // tokens left to generate, this one included
	prev  int // the last token (for its successor's text)
	piece func(prev, id int) string
	isEnd func(id int) bool
	// broken: a token's actual text left the grammar (its text after
	// prev differed from the indexed one); only an end is allowed then
	broken bool
}

func newConstraint(g *grammar.Grammar, ix *grammar.Index, ends []int, maxNew, prev int, piece func(prev, id int) string, isEnd func(int) bool) *constraint {
	return &constraint{m: g.NewMatcher(), ix: ix, ends: ends, allow: make([]uint64, (ix.Size()+63)/64), left: maxNew, prev: prev, piece: piece, isEnd: isEnd}
}

// mask sets the logits of the tokens not allowed to -Inf. When one token
// alone is allowed (the end once the value is complete, say) it returns
// it: it is taken whatever the logits; else -1.
func (c *constraint) mask(logits []float32) int {
	n := 0
	if !c.broken {
		n = c.m.Mask(c.ix, c.left, c.allow)
	}
	if n == 0 { // nothing fits: end the text
		clear(c.allow)
		for _, e := range c.ends {
			c.allow[e>>6] |= 1 << (e & 63)
		}
	}
	only, count := -1, 0
	for i := range logits {
		if i < c.ix.Size() && c.allow[i>>6]&(1<<(i&63)) != 0 {
			only = i
			count++
		} else {
			logits[i] = float32(math.Inf(-1))
		}
	}
	if count == 1 {
		return only
	}
	if count == 0 && len(c.ends) > 0 {
		return c.ends[0]
	}
	return -1
}

// advance follows the picked token.
func (c *constraint) advance(id int) {
	c.left--
	if c.isEnd(id) {
		return
	}
	if !c.broken && !c.m.Advance([]byte(c.piece(c.prev, id))) {
		c.broken = true
	}
	c.prev = id
}

func (s *sampler) pick(logits []float32) int {
	if s.p.temperature <= 0 {
		return argmax(logits)
	}
	if k := s.p.topK; k > 0 && k <= maxHeapK && k < len(logits) && (s.p.topP <= 0 || s.p.topP >= 1) {
		return s.pickTopK(logits)
	}
	hi := math.Inf(-1)
	for _, x := range logits {
		hi = math.Max(hi, float64(x))
	}
	cs := s.cand[:0]
	sum := 0.0
	for i, x := range logits {
		e := math.Exp((float64(x) - hi) / s.p.temperature)
		if e > 0 {
			cs = append(cs, cand{i, e})
			sum += e
		}
	}
	s.cand = cs
	if len(cs) == 0 { // every logit -Inf but one NaN: nothing to draw from
		return 0
	}
	cutK := s.p.topK > 0 && s.p.topK < len(cs)
	cutP := s.p.topP > 0 && s.p.topP < 1
	n := len(cs)
	switch {
	case cutK:
		// the k most likely by selection, then only those sorted (a
		// 150k vocabulary's sort cost more than the rest of sampling)
		n = s.p.topK
		selectFirst(cs, n)
		sort.Slice(cs[:n], func(i, j int) bool { return before(cs[i], cs[j]) })
		if cutP {
			acc := 0.0
			for i := range n {
				acc += cs[i].p / sum
				if acc >= s.p.topP {
					n = i + 1
					break
				}
			}
		}
	case cutP:
		n = nucleus(cs, s.p.topP*sum)
	}
	// nothing cut: drawn in id order; cut: in the order the selection left
	// (the same for the same logits: draws stay reproducible)
	total := sum
	if n < len(cs) {
		total = 0
		for _, c := range cs[:n] {
			total += c.p
		}
	}
	r := s.rng.Float64() * total
	for _, c := range cs[:n] {
		if r -= c.p; r < 0 {
			return c.id
		}
	}
	return cs[n-1].id
}

// maxHeapK is the largest top_k taken by a heap over the logits.
const maxHeapK = 1024

// pickTopK is pick for top_k alone (k <= maxHeapK): the k largest logits
// by a heap in one pass, and the exponentials of those only (the others
// are cut whatever their weight: no sum over the vocabulary is needed).
// It draws what pick's general path draws: the same candidates in the
// same order.
func (s *sampler) pickTopK(logits []float32) int {
	k := s.p.topK
	h := s.heap[:0]
	// h is a min-heap of ids, the least likely kept at its root (a lower
	// logit, or an equal one of a higher id)
	worse := func(a, b int) bool { return logits[a] < logits[b] || logits[a] == logits[b] && a > b }
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && worse(h[l], h[m]) {
				m = l
			}
			if l+1 < len(h) && worse(h[l+1], h[m]) {
				m = l + 1
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i, x := range logits {
		if x != x { // NaN: never a candidate
			continue
		}
		if len(h) < k {
			h = append(h, i)
			for c := len(h) - 1; c > 0 && worse(h[c], h[(c-1)/2]); c = (c - 1) / 2 {
				h[c], h[(c-1)/2] = h[(c-1)/2], h[c]
			}
			continue
		}
		if x > logits[h[0]] { // ids come in order: an equal logit's id is higher
			h[0] = i
			down(0)
		}
	}
	s.heap = h
	hi := math.Inf(-1)
	for _, i := range h {
		hi = math.Max(hi, float64(logits[i]))
	}
	cs := s.cand[:0]
	for _, i := range h {
		if e := math.Exp((float64(logits[i]) - hi) / s.p.temperature); e > 0 {
			cs = append(cs, cand{i, e})
		}
	}
	s.cand = cs
	if len(cs) == 0 {
		return 0
	}
	sort.Slice(cs, func(i, j int) bool { return before(cs[i], cs[j]) })
	total := 0.0
	for _, c := range cs {
		total += c.p
	}
	r := s.rng.Float64() * total
	for _, c := range cs {
		if r -= c.p; r < 0 {
			return c.id
		}
	}
	return cs[len(cs)-1].id
}

// before orders candidates most likely first, equal ones by id.
func before(a, b cand) bool { return a.p > b.p || a.p == b.p && a.id < b.id }

// partition reorders cs (at least 2) around a pivot (the median of three)
// and returns its index: those before it in the order come first.
func partition(cs []cand) int {
	n := len(cs)
	a, b, c := 0, n/2, n-1
	if before(cs[b], cs[a]) {
		a, b = b, a
	}
	m := b
	if before(cs[c], cs[b]) {
		m = c
		if before(cs[c], cs[a]) {
			m = a
		}
	}
	cs[m], cs[n-1] = cs[n-1], cs[m]
	piv, i := cs[n-1], 0
	for j := range n - 1 {
		if before(cs[j], piv) {
			cs[i], cs[j] = cs[j], cs[i]
			i++
		}
	}
	cs[i], cs[n-1] = cs[n-1], cs[i]
	return i
}

// selectFirst reorders cs so that cs[:k] are its k first in the order
// (themselves in no order): a quickselect, linear on average.
func selectFirst(cs []cand, k int) {
	lo, hi := 0, len(cs)
	for hi-lo > 1 {
		q := lo + partition(cs[lo:hi])
		switch {
		case q == k || q+1 == k:
			return
		case q > k:
			hi = q
		default:
			lo = q + 1
		}
	}
}

// nucleus reorders cs so that cs[:n] are the fewest first candidates in
// the order whose weights sum to at least mass (top-p: the smallest set
// of the most likely holding that share), and returns n. A quickselect
// on the running mass: linear on average where a sort of the vocabulary
// is n log n; cs[:n] are left in no particular (but a deterministic)
// order.
func nucleus(cs []cand, mass float64) int {
	lo, hi := 0, len(cs)
	need := mass
	for hi-lo > 32 {
		q := lo + partition(cs[lo:hi])
		s := 0.0
		for _, c := range cs[lo:q] {
			s += c.p
		}
		if s >= need {
			hi = q // it ends before the pivot
			continue
		}
		need -= s + cs[q].p
		if need <= 0 {
			return q + 1
		}
		lo = q + 1
	}
	sort.Slice(cs[lo:hi], func(i, j int) bool { return before(cs[lo+i], cs[lo+j]) })
	for i := lo; i < hi; i++ {
		if need -= cs[i].p; need <= 0 {
			return i + 1
		}
	}
	return max(hi, 1) // rounding: every candidate
}

// argmax is the index a scan keeping the first strictly larger value
// finds: the first of the largest (NaN is never larger; a NaN first
// wins). llm's (eight running maxima), which greedy generate uses too.
func argmax(logits []float32) int { return llm.Argmax(logits) }
