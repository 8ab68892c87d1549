package all_test

import (
	"reflect"
	"testing"

	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// TestEveryOpHasAKernel: with every kernel linked, the ops with a schema are
// exactly the ops with a reference kernel, and kernels.Lookup shows the
// schema core/ops holds; so the cpu backend's verdicts (kernels.CheckNode)
// and a schema-only backend's (ops.CheckNode) agree on what exists.
func TestEveryOpHasAKernel(t *testing.T) {
	schemas, ks := ops.All(), kernels.All()
	if len(schemas) != len(ks) {
		t.Fatalf("%d schemas, %d kernels", len(schemas), len(ks))
	}
	for i, s := range schemas {
		k := ks[i]
		if k.Domain != s.Domain || k.OpType != s.OpType || k.Kernel == nil {
			t.Fatalf("schema %s::%s vs kernel %s::%s", s.Domain, s.OpType, k.Domain, k.OpType)
		}
		joined := ops.Schema{Domain: k.Domain, OpType: k.OpType, MinOpset: k.MinOpset, MaxOpset: k.MaxOpset,
			MinInputs: k.MinInputs, MaxInputs: k.MaxInputs, MinOutputs: k.MinOutputs, MaxOutputs: k.MaxOutputs,
			TypeInput: k.TypeInput, Types: k.Types, InPlace: k.InPlace}
		plain := *s
		plain.Infer = nil
		if !reflect.DeepEqual(joined, plain) || (k.Infer == nil) != (s.Infer == nil) {
			t.Errorf("%s: kernels.Lookup shows %+v, core/ops holds %+v", s.OpType, joined, plain)
		}
	}
}
