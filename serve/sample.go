package serve

import (
	"math"
	"math/rand/v2"
	"sort"
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
	id := s.pick(logits)
	s.counts[id]++
	return id
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
