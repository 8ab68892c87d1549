package serve

import (
	"strings"
	"testing"
)

// TestTextStateDeltas: streamed deltas never hold part of a stop sequence
// or of a multi-byte character, and join to the whole reply, cut before
// the first stop.
func TestTextStateDeltas(t *testing.T) {
	for _, c := range []struct {
		pieces []string
		stops  []string
		want   string
		stop   bool
	}{
		{[]string{"Hello", " wor", "ld", "!"}, nil, "Hello world!", false},
		{[]string{"Hello", " E", "N", "D", " more"}, []string{"END"}, "Hello ", true},
		{[]string{"ab", "cE", "NxE", "ND"}, []string{"END"}, "abcENx", true},
		{[]string{"a", "\xc3", "\xa9", "b"}, nil, "aéb", false},             // é split over two tokens
		{[]string{"x", "\xe2\x82", "\xac", "!"}, []string{"!"}, "x€", true}, // € split, then a stop
		{[]string{"EN", "D"}, []string{"END", "NDX"}, "", true},
	} {
		ts := textState{stops: c.stops}
		var got strings.Builder
		stopped := false
		for _, p := range c.pieces {
			if ts.add(p) {
				stopped = true
				break
			}
			d := ts.delta(false)
			for _, st := range c.stops {
				for k := 1; k < len(st); k++ {
					if strings.HasSuffix(got.String()+d, st[:k]) && !strings.HasSuffix(c.want, st[:k]) {
						t.Errorf("%q: a delta ends with %q, the start of stop %q", c.pieces, st[:k], st)
					}
				}
			}
			if d != "" && !strings.HasPrefix(c.want, got.String()+d) {
				t.Errorf("%q: delta %q after %q", c.pieces, d, got.String())
			}
			if r := []rune(d); len(r) > 0 && r[len(r)-1] == '\uFFFD' {
				t.Errorf("%q: delta %q ends inside a character", c.pieces, d)
			}
			got.WriteString(d)
		}
		got.WriteString(ts.delta(true))
		if got.String() != c.want || stopped != c.stop {
			t.Errorf("%q stops %q: %q (stopped %v), want %q (%v)", c.pieces, c.stops, got.String(), stopped, c.want, c.stop)
		}
	}
}
