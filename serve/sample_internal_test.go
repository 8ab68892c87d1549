package serve

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// refCut is the top-k/top-p cut the selection replaces: every candidate
// sorted, most likely first, then cut.
func refCut(logits []float32, p sampling) (set []int, sum float64) {
	hi := math.Inf(-1)
	for _, x := range logits {
		hi = math.Max(hi, float64(x))
	}
	var cs []cand
	for i, x := range logits {
		if e := math.Exp((float64(x) - hi) / p.temperature); e > 0 {
			cs = append(cs, cand{i, e})
			sum += e
		}
	}
	sort.Slice(cs, func(i, j int) bool { return before(cs[i], cs[j]) })
	n := len(cs)
	if p.topK > 0 && p.topK < n {
		n = p.topK
	}
	if p.topP > 0 && p.topP < 1 {
		acc := 0.0
		for i := range n {
			acc += cs[i].p / sum
			if acc >= p.topP {
				n = i + 1
				break
			}
		}
	}
	for _, c := range cs[:n] {
		set = append(set, c.id)
	}
	slices.Sort(set)
	return set, sum
}

// TestSamplerCutBySelection: the top-k and top-p sets the selection
// (selectFirst, nucleus) finds are the sorted cut's, over vocabularies
// with many equal logits and very uneven ones, and every draw is in the
// set; equal seeds draw equal tokens.
func TestSamplerCutBySelection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		v := 1 + rng.IntN(3000)
		logits := make([]float32, v)
		for i := range logits {
			switch trial % 3 {
			case 0:
				logits[i] = float32(rng.IntN(5)) // many ties
			case 1:
				logits[i] = float32(rng.NormFloat64() * 4)
			default:
				logits[i] = float32(rng.ExpFloat64() * 10)
			}
		}
		p := sampling{temperature: 0.3 + rng.Float64()*1.5, seed: rng.Uint64()}
		switch rng.IntN(3) {
		case 0:
			p.topK = 1 + rng.IntN(v+5)
		case 1:
			p.topP = rng.Float64()
		default:
			p.topK, p.topP = 1+rng.IntN(v+5), rng.Float64()
		}
		want, _ := refCut(logits, p)
		s := newSampler(p)
		id := s.pick(slices.Clone(logits))
		// the set the pick drew from: the candidates before the cut
		n := len(s.cand)
		switch {
		case p.topK > 0 && p.topK < n:
			n = p.topK
			if p.topP > 0 && p.topP < 1 {
				_, sum := refCut(logits, sampling{temperature: p.temperature})
				acc := 0.0
				for i := range n {
					acc += s.cand[i].p / sum
					if acc >= p.topP {
						n = i + 1
						break
					}
				}
			}
		case p.topP > 0 && p.topP < 1:
			_, sum := refCut(logits, sampling{temperature: p.temperature})
			n = nucleus(slices.Clone(s.cand), p.topP*sum)
		}
		var got []int
		for _, c := range s.cand[:n] {
			got = append(got, c.id)
		}
		slices.Sort(got)
		// the nucleus's running sum may differ from the sorted one's in
		// the last bit: allow the boundary candidate either way
		if !slices.Equal(got, want) && !(p.topK == 0 && abs(len(got)-len(want)) == 1) {
			t.Fatalf("trial %d (v %d, %+v): selected %d candidates, the sorted cut %d", trial, v, p, len(got), len(want))
		}
		if _, ok := slices.BinarySearch(got, id); !ok {
			t.Fatalf("trial %d: drew %d, not in the cut", trial, id)
		}
		if again := newSampler(p).pick(slices.Clone(logits)); again != id {
			t.Fatalf("trial %d: the same seed drew %d, then %d", trial, id, again)
		}
	}
}

func abs(x int) int { return max(x, -x) }

// TestLogprobsTopAlternatives: logprobsOf's top n are the n largest
// logits, most likely first and equal ones by id, with their log
// probabilities.
func TestLogprobsTopAlternatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		v := 1 + rng.IntN(500)
		logits := make([]float32, v)
		for i := range logits {
			logits[i] = float32(rng.IntN(7)) - 3
		}
		n := rng.IntN(21)
		ids := make([]int, v)
		for i := range ids {
			ids[i] = i
		}
		sort.SliceStable(ids, func(a, b int) bool { return logits[ids[a]] > logits[ids[b]] })
		lp := logprobsOf(logits, 0, n, strconv.Itoa)
		if len(lp.top) != min(n, v) {
			t.Fatalf("trial %d: %d alternatives, want %d", trial, len(lp.top), min(n, v))
		}
		sum := 0.0
		for _, x := range logits {
			sum += math.Exp(float64(x))
		}
		for k, a := range lp.top {
			want := float64(logits[ids[k]]) - math.Log(sum)
			if math.Abs(a.logprob-want) > 1e-7 || a.text != strconv.Itoa(ids[k]) {
				t.Fatalf("trial %d: alternative %d is %s with logprob %v, want %d with %v", trial, k, a.text, a.logprob, ids[k], want)
			}
		}
	}
}

// TestArgmaxIsTheScan: argmax is the index the plain scan keeping the
// first strictly larger value finds, on random logits, ties, signed
// zeros, infinities and NaN (first, elsewhere, everywhere).
func TestArgmaxIsTheScan(t *testing.T) {
	scan := func(xs []float32) int {
		best := 0
		for i, x := range xs {
			if x > xs[best] {
				best = i
			}
		}
		return best
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	cases := [][]float32{
		{}, {1}, {nan}, {nan, 5, 6}, {1, nan, 3, nan, 3}, {nan, nan, nan, nan, nan},
		{negz, 0}, {-1, 0, negz}, {-1, negz, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 1},
		{-inf, -inf}, {-inf, inf, inf, 3}, {2, 2, 2, 2, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9},
		{9, 8, 7, 6, 5, 4, 3, 2, 1}, {1, 1, 1, 1, 1, 7, 1, 7, 7, 1, 7},
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 300 {
		xs := make([]float32, 1+rng.IntN(200))
		for i := range xs {
			xs[i] = float32(rng.IntN(7) - 3) // many ties
			if trial%3 == 0 {
				xs[i] = float32(rng.NormFloat64())
			}
			if rng.IntN(40) == 0 {
				xs[i] = nan
			}
		}
		cases = append(cases, xs)
	}
	for _, xs := range cases {
		if got, want := argmax(xs), scan(xs); got != want {
			t.Fatalf("argmax(%v) = %d, the scan %d", xs, got, want)
		}
	}
}

// BenchmarkSample152K: one token's sampling over a 151936-token
// vocabulary (Qwen2.5's) with random logits: greedy, temperature only,
// top_k 40, top_p 0.9 (selection; "sorted" is the full sort it replaced),
// and logprobs with 5 alternatives.
func BenchmarkSample152K(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	work := make([]float32, len(logits))
	for _, c := range []struct {
		name string
		p    sampling
	}{
		{"greedy", sampling{}},
		{"temperature", sampling{temperature: 0.8}},
		{"top_k=40", sampling{temperature: 0.8, topK: 40}},
		{"top_p=0.9", sampling{temperature: 0.8, topP: 0.9}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := newSampler(c.p)
			for range b.N {
				copy(work, logits)
				s.pick(work)
			}
		})
	}
	b.Run("top_p=0.9-sorted", func(b *testing.B) {
		for range b.N {
			refCut(logits, sampling{temperature: 0.8, topP: 0.9})
		}
	})
	b.Run("logprobs=5", func(b *testing.B) {
		for range b.N {
			logprobsOf(logits, 7, 5, strconv.Itoa)
		}
	})
}

// TestSumExp: sumExp agrees with math.Exp's sum to 1e-8 relative, over
// logits from far below the largest (underflowing) to equal to it.
func TestSumExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		xs := make([]float32, 1+rng.IntN(2000))
		hi := math.Inf(-1)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64() * float64(1+trial%40) * 10)
			hi = math.Max(hi, float64(xs[i]))
		}
		want := 0.0
		for _, x := range xs {
			want += math.Exp(float64(x) - hi)
		}
		if got := sumExp(xs, hi); math.Abs(got-want) > 1e-8*want {
			t.Fatalf("trial %d: sumExp %v, math.Exp's sum %v", trial, got, want)
		}
	}
}
