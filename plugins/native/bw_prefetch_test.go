package native

import (
	"bytes"
	"testing"
)

// TestPrefetchPieces: the pieces a read-ahead's chunks cover are the
// parts' first limit bytes, each once, in order, across part boundaries.
func TestPrefetchPieces(t *testing.T) {
	parts := [][]byte{make([]byte, 5000), make([]byte, 100), nil, make([]byte, 9000)}
	var all []byte
	for i, p := range parts {
		for j := range p {
			p[j] = byte(i*7 + j)
		}
		all = append(all, p...)
	}
	for _, limit := range []int64{0, 64, 5000, 5100, 6000, 14100} {
		var got []byte
		for off := int64(0); off < limit; off += 1000 {
			pfEach(parts, off, min(off+1000, limit), func(b []byte) { got = append(got, b...) })
		}
		if !bytes.Equal(got, all[:limit]) {
			t.Fatalf("limit %d: got %d bytes, not the first %d", limit, len(got), limit)
		}
	}
}

// TestPrefetchChain: each product reads ahead the one built after it,
// the last the first, up to pfMax; an idle pool reads its chunks and then
// reports none left.
func TestPrefetchChain(t *testing.T) {
	a, b, c := make([]byte, 3*pfChunk), make([]byte, pfChunk), make([]byte, 2*pfChunk)
	var ch pfChain
	la := ch.link(0, a)
	lb := ch.link(0, b, c)
	if len(la.run.parts) != 2 || &la.run.parts[0][0] != &b[0] || la.run.limit != min(int64(3*pfChunk), pfMax) {
		t.Fatalf("a reads ahead %d parts, %d bytes", len(la.run.parts), la.run.limit)
	}
	if len(lb.run.parts) != 1 || &lb.run.parts[0][0] != &a[0] {
		t.Fatal("the last product does not read ahead the first")
	}
	p := &pool{workers: 1} // no worker goroutine reading chunks meanwhile
	p.prefetchNext(la)
	steps := 0
	for p.prefetchIdle() {
		steps++
	}
	if want := int((la.run.limit + pfChunk - 1) / pfChunk); steps != want {
		t.Fatalf("%d chunks read, want %d", steps, want)
	}
	p.prefetchNext(nil)
	if p.prefetchIdle() {
		t.Fatal("read ahead with nothing to read")
	}
}

// TestPrefetchWorkerLast: the last task's bytes come first, then the
// one's before, down to the first, each byte once, across part
// boundaries.
func TestPrefetchWorkerLast(t *testing.T) {
	parts := [][]byte{make([]byte, 300), make([]byte, 50), make([]byte, 700)}
	var all []byte
	for i, p := range parts {
		for j := range p {
			p[j] = byte(i*11 + j*3)
		}
		all = append(all, p...)
	}
	for _, task := range []int64{0, 100, 320, 600, 1050} {
		var got []byte
		for _, b := range workerLast(parts, task) {
			got = append(got, b...)
		}
		want := all
		if n := int64(len(all)); task > 0 && task < n {
			want = nil
			for k := (n - 1) / task; k >= 0; k-- {
				want = append(want, all[k*task:min((k+1)*task, n)]...)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("task %d: order wrong", task)
		}
	}
}
