package cpu_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// The cpu backend against the conformance suite (through the HAL, under
// the name "cpu-under-test", so its Compile and Execute are exercised).
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(cpu.New(), hal.LoadLinked) },
	})
}
