package cabi

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
)

// The example C delegate (sdk/c/example), dlopen'd in process, against the
// conformance suite for the ops it declares (Add, Sub, Mul, Div, Relu,
// MatMul in float32); everything else is reported as not delegated.
func TestConformance(t *testing.T) {
	lib := exampleLib(t)
	conformance.Run(t, conformance.Harness{
		Binary: lib,
		Open: func(ctx context.Context) (*hal.Device, error) {
			b, err := Open(ctx, lib, Options{})
			if err != nil {
				return nil, err
			}
			return hal.NewDevice(b, hal.LoadLibrary)
		},
	})
}
