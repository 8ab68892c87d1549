package llm_test

import (
	"context"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/llm"
)

// TestPrefillLastRowOnly: a formats/llama decoder computes the classifier
// for the rows asked (logits_rows) and nothing else: a prompt's prefill
// asks one row, and that row is bit for bit the last of every row's.
func TestPrefillLastRowOnly(t *testing.T) {
	d, _, done := openStories(t)
	defer done()
	ctx := context.Background()
	ids := []int{1, 403, 407, 261, 378, 16, 2, 9}
	all, n, err := llm.StepRows(ctx, d, ids, 0)
	if err != nil || n != len(ids) {
		t.Fatalf("every row: %d rows, %v", n, err)
	}
	v := len(all) / n
	for _, rows := range []int{1, 3} {
		got, n, err := llm.StepRows(ctx, d, ids, rows)
		if err != nil || n != rows {
			t.Fatalf("rows %d: %d rows, %v", rows, n, err)
		}
		want := all[(len(ids)-rows)*v:]
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("rows %d: logit %d is %v, every row's run gives %v", rows, i, got[i], want[i])
			}
		}
	}
}
