package xnnpack_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

// The XNNPACK backend against the conformance suite (skips where the
// library is missing unless SWITCHYARD_REQUIRE_BACKENDS names xnnpack).
// Its declared gaps, with reasons, are in conformance/gaps/xnnpack.json.
func TestConformance(t *testing.T) {
	device(t, xnnpack.Options{Threads: 1}) // skip or fail early, with the reason
	gaps, err := conformance.BuiltinGaps("xnnpack")
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Harness{
		Gaps: gaps,
		Open: func(ctx context.Context) (*hal.Device, error) {
			b, err := xnnpack.New(ctx, xnnpack.Options{Threads: 1})
			if err != nil {
				return nil, err
			}
			return hal.NewDevice(b, hal.LoadLibrary)
		},
	})
}
