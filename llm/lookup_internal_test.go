package llm

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestNgramIndex: every draft the index gives continues an earlier
// occurrence of the sequence's last n tokens (longest n first), and,
// where the tables keep every n-gram, the most recent one, as a scan of
// the whole sequence finds it; small tables (n-grams giving way to newer
// ones) lose matches, never give a wrong one.
func TestNgramIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ vocab, positions, minN, maxN int }{{4, 400, 2, 3}, {12, 400, 1, 4}, {3, 1, 2, 4}, {40, 300, 2, 2}} {
		ix := newNgramIndex(c.minN, c.maxN, c.positions)
		var seq []int
		same, found := 0, 0
		for i := 0; i < 400; i++ {
			id := rng.IntN(c.vocab)
			if i%50 > 30 && i > 40 { // stretches copied from earlier on
				id = seq[len(seq)-37]
			}
			ix.add(id)
			seq = append(seq, id)
			got, n := ix.draft(nil, 5)
			// the scan: longest n with an earlier occurrence, its most recent
			var want []int
			wantN := 0
			for m := min(c.maxN, len(seq)-1); m >= c.minN && wantN == 0; m-- {
				for at := len(seq) - m - 1; at >= 0; at-- {
					if slices.Equal(seq[at:at+m], seq[len(seq)-m:]) {
						wantN = m
						for k := 0; k < 5; k++ {
							if j := at + m + k; j < len(seq) {
								want = append(want, seq[j])
							} else {
								want = append(want, want[j-len(seq)])
							}
						}
						break
					}
				}
			}
			if n == 0 {
				if len(got) != 0 {
					t.Fatalf("%+v at %d: a draft %v and no n", c, i, got)
				}
				if wantN > 0 && c.positions > 1 {
					t.Errorf("%+v at %d: no draft, an earlier %d-gram continues %v", c, i, wantN, want)
				}
				continue
			}
			found++
			// valid: some earlier occurrence of the last n tokens continues so
			valid := false
			for at := len(seq) - n - 1; at >= 0 && !valid; at-- {
				if slices.Equal(seq[at:at+n], seq[len(seq)-n:]) {
					ok := true
					for k := 0; k < 5 && ok; k++ {
						j := at + n + k
						w := 0
						if j < len(seq) {
							w = seq[j]
						} else {
							w = got[j-len(seq)]
						}
						ok = got[k] == w
					}
					valid = ok
				}
			}
			if !valid || len(got) != 5 {
				t.Fatalf("%+v at %d: draft %v after a %d-gram continues no earlier occurrence of it (seq %v)", c, i, got, n, seq)
			}
			if n == wantN && slices.Equal(got, want) {
				same++
			}
		}
		t.Logf("%+v: %d drafts, %d as the scan's", c, found, same)
		if c.positions > 1 && same < found*99/100 {
			t.Errorf("%+v: %d of %d drafts as the scan's", c, same, found)
		}
	}
}

// TestLookupGovernor: the drafting policy on simulated rounds (a step
// of 1+k tokens costs 1 + extra(k) plain steps, the plain step after it
// 1 + after; each token emitted is the drafted one with chance p): where
// drafts are seldom accepted, or a step of 1+k tokens costs about k+1
// plain steps, it costs at most a few tenths of a percent over plain
// decoding (the shadow drafts measure acceptance without drafting; the
// costs are measured by a few drafting rounds); where drafts are mostly
// accepted it is faster, the more so the cheaper a drafted token.
func TestLookupGovernor(t *testing.T) {
	linear := func(s float64) func(int) float64 { return func(k int) float64 { return s * float64(k) } }
	// Qwen2.5-0.5B Q4_0 here: a few rows take the one-row kernels, 8 the tiles
	qwen := func(k int) float64 { return map[int]float64{1: 1.06, 2: 2.0, 4: 2.4, 8: 3.15}[k] }
	// Qwen2.5-0.5B Q4_K_M here, two threads (BenchmarkLookupStepCost)
	qwenK := func(k int) float64 { return map[int]float64{1: 0.41, 2: 0.55, 4: 1.18, 8: 2.96}[k] }
	for _, c := range []struct {
		name   string
		p      float64
		extra  func(int) float64
		after  float64
		tokens int
		atMost float64 // time ÷ plain decoding's
		runs   int     // > 0: bursty, runs of about this many tokens copied (p 0.97) and as many not (p 0)
		spikes bool    // every tenth step (at random) takes three times as long: another process holds the core
	}{
		{"loaded", 0.9, qwenK, 0.03, 1024, 0.75, 0, true}, {"loaded bursty", 0, qwenK, 0.03, 1024, 0.9, 12, true},
		{"loaded never", 0, qwenK, 0.03, 1024, 1.001, 0, true},
		{"bursty", 0, qwenK, 0.03, 1024, 0.9, 12, false}, {"bursty", 0, qwenK, 0.03, 1024, 1.0, 4, false},
		{"bursty", 0, linear(0.45), 0.14, 1024, 1.0, 6, false}, {"bursty", 0, qwen, 0.05, 1024, 0.95, 16, false},
		{"never", 0, linear(0.6), 0.1, 256, 1.001, 0, false}, {"never", 0, linear(0.05), 0, 256, 1.001, 0, false},
		{"seldom", 0.3, linear(0.45), 0.14, 256, 1.005, 0, false}, {"half", 0.5, linear(0.45), 0.14, 1024, 1.01, 0, false},
		{"often", 0.8, qwen, 0.05, 256, 1.015, 0, false}, {"often", 0.8, qwen, 0.05, 4096, 1.005, 0, false},
		{"mostly", 0.9, linear(0.6), 0.1, 256, 0.9, 0, false}, {"mostly", 0.9, linear(0.05), 0, 256, 0.4, 0, false},
		{"mostly", 0.9, qwen, 0.05, 256, 0.81, 0, false}, {"often", 0.7, linear(0.05), 0, 256, 0.65, 0, false},
	} {
		rng := rand.New(rand.NewPCG(3, 4))
		const plain = 100 * time.Microsecond
		stream := make([]int, c.tokens+64) // the tokens emitted: 7 (as drafted) with chance p
		copying := true
		for i := range stream {
			p := c.p
			if c.runs > 0 {
				if rng.IntN(c.runs) == 0 {
					copying = !copying
				}
				if p = 0; copying {
					p = 0.97
				}
			}
			if stream[i] = 7; rng.Float64() >= p {
				stream[i] = rng.IntN(7)
			}
		}
		draft := []int{7, 7, 7, 7, 7, 7, 7, 7}
		g := newLookupGovernor(Lookup{Draft: 8, MinNgram: 2, MaxNgram: 3})
		var spent time.Duration
		emitted, drafted, prevK := 0, 0, 0
		for emitted < c.tokens {
			g.shadow(draft)
			k := g.length(8)
			a := 0
			for a < k && stream[emitted+a] == 7 {
				a++
			}
			cost := 1.0
			switch {
			case k > 0:
				cost += c.extra(k)
			case prevK > 0:
				cost += c.after
			}
			prevK = k
			dur := time.Duration(float64(plain) * cost)
			if c.spikes && rng.IntN(10) == 0 {
				dur *= 3
			}
			g.record(k, dur)
			spent += time.Duration(float64(plain) * cost) // what the step costs unslowed
			for _, id := range stream[emitted : emitted+a+1] {
				g.observe(id)
			}
			emitted += a + 1
			if k > 0 {
				drafted++
			}
		}
		ratio := float64(spent) / float64(time.Duration(emitted)*plain)
		t.Logf("%s p %.2f, %d tokens: %.4f of plain decoding's time, %d drafting rounds", c.name, c.p, emitted, ratio, drafted)
		if ratio > c.atMost {
			t.Errorf("%s p %.2f, %d tokens: %.4f of plain decoding's time, want at most %.3f", c.name, c.p, emitted, ratio, c.atMost)
		}
	}
}

// BenchmarkLookupBookkeeping: what prompt lookup adds to a plain step
// where it drafts nothing — the n-gram index, the draft looked up, the
// shadow draft opened and checked — per token, on 256 tokens of text
// that seldom repeats (a vocabulary of 32000, every 50th token copied
// from 37 back); a decode step costs 90 µs on stories260K here, 14 ms on
// Qwen2.5-0.5B Q4_0.
func BenchmarkLookupBookkeeping(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	seq := make([]int, 256)
	for i := range seq {
		seq[i] = rng.IntN(32000)
		if i%50 == 49 {
			seq[i] = seq[i-37]
		}
	}
	lk, _ := Lookup{}.withDefaults()
	var draft []int
	b.ResetTimer()
	for range b.N {
		ix := newNgramIndex(lk.MinNgram, lk.MaxNgram, len(seq))
		g := newLookupGovernor(lk)
		for _, id := range seq {
			draft, n := ix.draft(draft[:0], lk.Draft)
			if n > 0 {
				g.shadow(draft)
				_ = g.length(len(draft))
			}
			g.record(0, 90*time.Microsecond)
			ix.add(id)
			g.observe(id)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seq)), "ns/token")
}
