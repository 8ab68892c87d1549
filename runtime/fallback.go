package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/switchyard-hal/switchyard/hal"
)

// fallback is the backend that takes what no other backend does, and
// partitions moved off their backend at run time (device loss, declines).
// It is an ordinary *hal.Device: Options.Fallback, else the device of
// Options.Backends named by Policy.Fallback (default "cpu"), else the
// backend of that name registered with hal.Default, opened on first use
// and kept open for the process (importing plugins/cpu registers "cpu").
type fallback struct {
	name  string
	given *hal.Device

	mu  sync.Mutex
	dev *hal.Device
}

func newFallback(opts *Options) *fallback {
	f := &fallback{name: opts.Policy.Fallback}
	if opts.Fallback != nil {
		f.given = opts.Fallback
		f.name = opts.Fallback.Name()
	}
	if f.name == "" {
		f.name = CPU
	}
	if f.given == nil {
		for _, d := range opts.Backends {
			if d != nil && d.Name() == f.name {
				f.given = d
			}
		}
	}
	return f
}

// device resolves the fallback device (opening the registered one once).
func (f *fallback) device(ctx context.Context) (*hal.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dev != nil {
		return f.dev, nil
	}
	if f.given != nil {
		f.dev = f.given
		return f.dev, nil
	}
	d, err := openRegistered(ctx, f.name)
	if err != nil {
		return nil, err
	}
	f.dev = d
	return d, nil
}

// resolved is the fallback device if it has been resolved.
func (f *fallback) resolved() *hal.Device {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dev
}

// registered fallbacks are opened once per process and shared by every
// model (the reference kernels hold no resources).
var registered struct {
	mu   sync.Mutex
	devs map[string]*hal.Device
}

func openRegistered(ctx context.Context, name string) (*hal.Device, error) {
	registered.mu.Lock()
	defer registered.mu.Unlock()
	if d := registered.devs[name]; d != nil {
		return d, nil
	}
	if !slices.Contains(hal.Default.Names(), name) {
		return nil, fmt.Errorf("runtime: no fallback backend %q registered (forgotten import of plugins/cpu?): %w", name, hal.ErrUnavailable)
	}
	d, err := hal.Default.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("runtime: opening the fallback backend %q: %w", name, err)
	}
	if registered.devs == nil {
		registered.devs = map[string]*hal.Device{}
	}
	registered.devs[name] = d
	return d, nil
}
