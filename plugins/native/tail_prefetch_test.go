package native

import "testing"

// TestCallerHead: each product's run carries its successor's first
// bytes (the first task's, at most callerHeadBytes, within the first
// part), and a waiting caller reads them a chunk at a time, once, then
// reports none left; off, it reads nothing.
func TestCallerHead(t *testing.T) {
	a, b, c := make([]byte, 300<<10), make([]byte, 10<<10), make([]byte, 40<<10)
	var ch pfChain
	la := ch.link(100<<10, a)
	lb := ch.link(30<<10, b, c)
	if len(la.run.head) != len(b) || &la.run.head[0] != &b[0] {
		t.Fatalf("a's successor head: %d bytes, want b's %d", len(la.run.head), len(b))
	}
	if len(lb.run.head) != callerHeadBytes || &lb.run.head[0] != &a[0] {
		t.Fatalf("b's successor head: %d bytes, want a's first %d", len(lb.run.head), callerHeadBytes)
	}
	p := &pool{workers: 1} // no worker goroutine
	defer callerHeadOff.Store(false)
	for _, off := range []bool{false, true} {
		callerHeadOff.Store(off)
		p.prefetchNext(lb)
		steps := 0
		for p.prefetchHead() {
			steps++
		}
		want := callerHeadBytes / callerChunk
		if off {
			want = 0
		}
		if steps != want {
			t.Fatalf("off %v: %d chunks read, want %d", off, steps, want)
		}
	}
	if callerHead(nil, 10) != nil || callerHead([][]byte{a}, 0) != nil {
		t.Fatal("a head with no bytes or no task")
	}
}
