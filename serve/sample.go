package serve

import (
	"math"
	"math/rand/v2"
	"sort"

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
		best := 0
		for i, x := range logits {
			if x > logits[best] {
				best = i
			}
		}
		return best
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
	sort.Slice(cs, func(i, j int) bool { return cs[i].p > cs[j].p || cs[i].p == cs[j].p && cs[i].id < cs[j].id })
	n := len(cs)
	if s.p.topK > 0 && s.p.topK < n {
		n = s.p.topK
	}
	if s.p.topP > 0 && s.p.topP < 1 {
		acc := 0.0
		for i := range n {
			acc += cs[i].p / sum
			if acc >= s.p.topP {
				n = i + 1
				break
			}
		}
	}
	total := 0.0
	for _, c := range cs[:n] {
		total += c.p
	}
	r := s.rng.Float64() * total
	for _, c := range cs[:n] {
		if r -= c.p; r < 0 {
			return c.id
		}
	}
	return cs[n-1].id
}
