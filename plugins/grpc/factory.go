package grpcplugin

import (
	"context"
	"fmt"
	"log/slog"
	"sort"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
)

// Factory makes a registry factory for a process manifest. Open verifies
// the binary and starts it; base supplies logging, deadlines and restart
// policy (its Name, Path, Args, Env and SHA256 come from the manifest).
func Factory(m *manifest.Manifest, base Options) (hal.Factory, error) {
	if m.Kind != manifest.KindProcess {
		return hal.Factory{}, &manifest.ManifestError{File: m.File, Field: "kind", Msg: fmt.Sprintf("%q plugins are loaded by the C-ABI loader, not as processes", m.Kind)}
	}
	o := base
	o.Name, o.Path, o.Args, o.SHA256, o.AllowUnverified = m.Name, m.Path, m.Args, m.SHA256, false
	o.Env = append([]string{}, base.Env...)
	keys := make([]string, 0, len(m.Env))
	for k := range m.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.Env = append(o.Env, k+"="+m.Env[k])
	}
	return hal.Factory{Info: m.Info(), Kind: hal.LoadProcess, Open: func(ctx context.Context) (hal.Backend, error) {
		b, err := Open(ctx, o)
		if err != nil {
			return nil, err
		}
		return b.HAL(), nil
	}}, nil
}

// Registered is one discovered manifest and what became of it.
type Registered struct {
	Manifest     *manifest.Manifest
	Verification manifest.Verification
	// Err is why it was not registered (nil when it was).
	Err error
}

// Register discovers manifests in dirs (manifest.SearchPath() when nil), verifies
// each binary's checksum and registers every process plugin with r. Bad
// manifests, library plugins and registration conflicts are reported, never
// fatal. A plugin whose checksum does not match is still registered, so
// that opening it fails with both hashes named and tools can show why.
func Register(r *hal.Registry, dirs []string, base Options) ([]Registered, []error) {
	if dirs == nil {
		dirs = manifest.SearchPath()
	}
	if base.Logger == nil {
		base.Logger = slog.Default()
	}
	d := manifest.Discover(dirs)
	var out []Registered
	for _, m := range d.Manifests {
		if m.Kind == manifest.KindLibrary {
			continue // C-ABI libraries are registered by their own loader (plugins/cabi)
		}
		reg := Registered{Manifest: m, Verification: m.Verify()}
		f, err := Factory(m, base)
		if err == nil {
			err = r.Register(f)
		}
		reg.Err = err
		out = append(out, reg)
	}
	return out, d.Problems
}
