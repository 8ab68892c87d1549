package llm

import (
	"math/rand/v2"
	"slices"
	"testing"
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
