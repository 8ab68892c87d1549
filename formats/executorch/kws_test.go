package executorch_test

import (
	"encoding/json"
	"os"
	"sort"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestKWS runs the int8 Cortex-M keyword spotter on its four labelled
// recordings: the argmax of the 12 scores must be each one's label.
func TestKWS(t *testing.T) {
	raw, err := os.ReadFile(shared.Path(t, "testdata/executorch/kws/labels.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Labels []string
		Inputs map[string]struct {
			Label      string
			ClassIndex int `json:"class_index"`
		}
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(meta.Inputs))
	for n := range meta.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		want := meta.Inputs[name]
		x, err := tensorio.ReadFile(shared.Path(t, "testdata/executorch/kws/"+name))
		if err != nil {
			t.Fatal(err)
		}
		out := run(t, "kws/model.pte", "", nil, x)
		scores := out[0].Float64s()
		best := 0
		for i, s := range scores {
			if s > scores[best] {
				best = i
			}
		}
		t.Logf("%s: argmax %d (%s), want %d (%s); scores %.3f", name, best, meta.Labels[best], want.ClassIndex, want.Label, scores)
		if best != want.ClassIndex {
			t.Errorf("%s: argmax %d (%s), want %d (%s)", name, best, meta.Labels[best], want.ClassIndex, want.Label)
		}
	}
}
