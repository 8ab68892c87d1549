package switchyard_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	"github.com/switchyard-hal/switchyard/plugins/cabi"
)

// TestOneErrorVocabulary: the sentinels are defined once (core/graph) and
// errors.Is holds across the reference kernels, the schemas, the
// importers, the HAL, the plugin-process wire and the C ABI, and the app
// API's values are the same.
func TestOneErrorVocabulary(t *testing.T) {
	same := []struct {
		name string
		vals []error
	}{
		{"unsupported", []error{graph.ErrUnsupported, ops.ErrUnsupported, kernels.ErrUnsupported, executorch.ErrUnsupported, hal.ErrUnsupported, switchyard.ErrUnsupported}},
		{"unavailable", []error{graph.ErrUnavailable, hal.ErrUnavailable, switchyard.ErrUnavailable}},
		{"invalid", []error{graph.ErrInvalid, ops.ErrInvalid, kernels.ErrInvalid, hal.ErrInvalidArgument, switchyard.ErrInvalid}},
		{"resource exhausted", []error{graph.ErrResourceExhausted, kernels.ErrResourceExhausted, hal.ErrResourceExhausted, switchyard.ErrResourceExhausted}},
	}
	for _, s := range same {
		for i, v := range s.vals {
			if v != s.vals[0] {
				t.Errorf("%s: value %d (%v) is not the one sentinel", s.name, i, v)
			}
		}
	}
	// a kernel's error, wrapped by the HAL's portable layer, and across
	// the plugin process's wire (status code and back)
	kernelErr := fmt.Errorf("Foo: %w", kernels.ErrUnsupported)
	halErr := &hal.Error{Code: hal.CodeOf(kernelErr), Backend: "x", Op: "compile", Err: kernelErr}
	overWire := wire.ErrorOf(wire.StatusOf(halErr))
	for name, err := range map[string]error{"kernel": kernelErr, "hal": halErr, "wire": overWire, "hal.Errorf": hal.Errorf(hal.CodeUnsupported, "no")} {
		for _, target := range []error{graph.ErrUnsupported, kernels.ErrUnsupported, hal.ErrUnsupported, switchyard.ErrUnsupported, executorch.ErrUnsupported} {
			if !errors.Is(err, target) {
				t.Errorf("%s error %v: errors.Is(%v) is false", name, err, target)
			}
		}
		if errors.Is(err, switchyard.ErrUnavailable) {
			t.Errorf("%s error %v matches ErrUnavailable", name, err)
		}
	}
	if !errors.Is(graph.ErrTooLarge, switchyard.ErrResourceExhausted) || hal.CodeOf(graph.ErrTooLarge) != hal.CodeResourceExhausted {
		t.Error("graph.ErrTooLarge is not a resource-exhausted error")
	}
	// the C ABI's loader: a library that is not there is Unavailable,
	// directly and through the app API
	missing := filepath.Join(t.TempDir(), "libnothere.so")
	_, err := cabi.Open(context.Background(), missing, cabi.Options{})
	if !errors.Is(err, switchyard.ErrUnavailable) || !errors.Is(err, graph.ErrUnavailable) {
		t.Errorf("cabi.Open of a missing library: %v, want unavailable", err)
	}
	libs := "nothere=" + missing
	b := switchyard.Discover(&switchyard.DiscoverOptions{Registry: hal.NewRegistry(), PluginPath: []string{}, Libraries: &libs})
	_, err = switchyard.NewEngine(context.Background(), &switchyard.OpenOptions{Discovered: b, Backends: []string{"nothere"}})
	var be *switchyard.BackendError
	if !errors.Is(err, switchyard.ErrUnavailable) || !errors.As(err, &be) || be.Backend != "nothere" {
		t.Errorf("engine on a missing C library: %v, want a BackendError wrapping ErrUnavailable", err)
	}
}

// TestNilContextRefused: every call that takes a context refuses nil with
// an invalid-argument error instead of running without one.
func TestNilContextRefused(t *testing.T) {
	var nilCtx context.Context
	if _, err := switchyard.NewEngine(nilCtx, nil); !errors.Is(err, switchyard.ErrInvalid) {
		t.Errorf("NewEngine(nil ctx): %v", err)
	}
	m := openDemo(t, nil)
	in := m.ExampleInputs()
	if _, err := m.Run(nilCtx, in); !errors.Is(err, switchyard.ErrInvalid) {
		t.Errorf("Run(nil ctx): %v", err)
	}
	if _, _, err := m.RunWithStats(nilCtx, in, nil); !errors.Is(err, switchyard.ErrInvalid) {
		t.Errorf("RunWithStats(nil ctx): %v", err)
	}
	if err := m.RunInto(nilCtx, in, switchyard.Tensors{}); !errors.Is(err, switchyard.ErrInvalid) {
		t.Errorf("RunInto(nil ctx): %v", err)
	}
	if _, err := m.NewSession(nilCtx, nil, nil); !errors.Is(err, switchyard.ErrInvalid) {
		t.Errorf("NewSession(nil ctx): %v", err)
	}
}
