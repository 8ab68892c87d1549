package xnnpack

import (
	"context"
	"testing"
)

// TestCapabilitiesMatchSupports: Capabilities advertises exactly the ops
// check claims (one table), never one with a known gap.
func TestCapabilitiesMatchSupports(t *testing.T) {
	caps, err := (&Backend{}).Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[string]bool{}
	for _, c := range caps.Ops {
		if c.Domain != "" {
			continue
		}
		advertised[c.OpType] = true
		if !supportedOp(c.OpType) {
			t.Errorf("Capabilities advertises %s, which check declines", c.OpType)
		}
		if r, gap := knownGaps[c.OpType]; gap {
			t.Errorf("Capabilities advertises %s, a known gap: %s", c.OpType, r)
		}
	}
	for op := range mappedOps {
		if !advertised[op] {
			t.Errorf("check claims %s, which Capabilities hides", op)
		}
	}
	for _, op := range []string{"ConvTranspose", "Resize", "Split"} {
		if !advertised[op] {
			t.Errorf("%s is mapped but not advertised", op)
		}
	}
	if advertised["Tanh"] {
		t.Error("Tanh is advertised though declined")
	}
}
