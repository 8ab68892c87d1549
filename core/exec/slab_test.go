package exec

import "testing"

// TestShapeSlabBounded: a run that allocates without end (a Loop whose
// trip count is 2^62) carves shapes from slabs of bounded size; the slab
// doubled without a cap before, growing memory outside the budget every
// iteration (issue #32).
func TestShapeSlabBounded(t *testing.T) {
	a := &arena{}
	shape := []int{1, 2, 3, 4}
	for range 1 << 20 {
		a.shapeOf(shape)
		if len(a.shapes) > 1<<14 {
			t.Fatalf("shape slab of %d ints after a run of many allocations", len(a.shapes))
		}
	}
}
