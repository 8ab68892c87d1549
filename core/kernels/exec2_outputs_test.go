package kernels

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestOutputSliceMany: OutputSlice for more entries than the context's
// own array returns n nil entries, the same storage on a later call (a
// partition's 49 outputs a decode step allocate nothing) with the earlier
// call's entries cleared; a larger n gets larger storage; no context
// gets a new slice.
func TestOutputSliceMany(t *testing.T) {
	var c Context
	n := len(c.outs) + 33
	a := c.OutputSlice(n)
	if len(a) != n || cap(a) != n {
		t.Fatalf("len %d cap %d, want %d", len(a), cap(a), n)
	}
	for i := range a {
		a[i] = &graph.Tensor{}
	}
	b := c.OutputSlice(n - 1)
	if len(b) != n-1 || &b[0] != &a[0] {
		t.Fatalf("a later call does not reuse the storage")
	}
	for i, x := range b {
		if x != nil {
			t.Fatalf("entry %d not cleared", i)
		}
	}
	if d := c.OutputSlice(2 * n); len(d) != 2*n || d[len(d)-1] != nil {
		t.Fatalf("a larger call: len %d", len(d))
	}
	if allocs := testing.AllocsPerRun(10, func() { c.OutputSlice(n) }); allocs != 0 {
		t.Fatalf("OutputSlice(%d) allocates %v times", n, allocs)
	}
	var nc *Context
	if s := nc.OutputSlice(n); len(s) != n {
		t.Fatalf("nil context: len %d", len(s))
	}
}
