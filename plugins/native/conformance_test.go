package native_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// The native backend against the conformance suite, with the reference
// kernels as the truth. Its declared gaps, with reasons, are in
// conformance/gaps/native.json.
func TestConformance(t *testing.T) {
	gaps, err := conformance.BuiltinGaps(native.Name)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Harness{
		Gaps: gaps,
		Open: func(ctx context.Context) (*hal.Device, error) {
			return hal.NewDevice(native.New(native.Options{Threads: 2}), hal.LoadLinked)
		},
	})
}
