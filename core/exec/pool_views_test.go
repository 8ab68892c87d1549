package exec

import "testing"

// TestBufViewsBounded: a buffer handed out at many lengths (a server's
// prompts of every length) keeps at most maxViews views, each of the
// length asked for.
func TestBufViewsBounded(t *testing.T) {
	b := &freeBuf{data: make([]float32, 1000), n: 1000}
	for round := 0; round < 2; round++ {
		for count := 1; count <= 200; count++ {
			d, ok := b.at(count).([]float32)
			if !ok || len(d) != count {
				t.Fatalf("at(%d): %T of %d elements", count, b.at(count), len(d))
			}
		}
	}
	if b.v == nil || len(b.v.n) > maxViews || len(b.v.n) != len(b.v.data) {
		t.Fatalf("views %+v, want at most %d", b.v, maxViews)
	}
	if d := b.at(1000).([]float32); len(d) != 1000 {
		t.Fatalf("the buffer's own length: %d", len(d))
	}
}
