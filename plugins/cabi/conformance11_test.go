package cabi

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
)

// The example C delegate built with the HAL 1.1 table (device memory,
// fences, enqueue, profiles) and two devices, dlopen'd in process, against
// the suite with its HAL 1.1 cases. A library cannot be made to lose its
// device from outside, so contract/devmem/device-lost is skipped.
func TestConformanceDeviceMemory(t *testing.T) {
	lib := exampleLib2(t)
	conformance.Run(t, conformance.Harness{
		Binary: lib,
		Open: func(ctx context.Context) (*hal.Device, error) {
			b, err := Open(ctx, lib, Options{})
			if err != nil {
				return nil, err
			}
			return hal.NewDevice(b.HAL(), hal.LoadLibrary)
		},
	})
}
