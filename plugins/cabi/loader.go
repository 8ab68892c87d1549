package cabi

import (
	"context"
	"errors"

	"github.com/switchyard-hal/switchyard/backends"
	"github.com/switchyard-hal/switchyard/hal"
)

// The C-library loader of discovery (package backends): linking this
// package lets the app API register SWITCHYARD_LIBRARIES entries and
// plugin manifests of kind "library".
func init() { backends.RegisterLibraryLoader(loader{}) }

type loader struct{}

func (loader) Factory(path, name, sha256 string) hal.Factory {
	return Factory(path, Options{Name: name, SHA256: sha256})
}

func (loader) Probe(ctx context.Context, path, name, sha256 string) backends.LibraryReport {
	return Probe(ctx, path, ProbeOptions{Options: Options{Name: name, SHA256: sha256}})
}

func (loader) Inspect(ctx context.Context, path string) backends.LibraryReport {
	r := ProbeResult{Path: path}
	b, err := Open(ctx, path, Options{})
	if err == nil {
		info := b.Info()
		r.Loaded, r.Info, r.Negotiated, r.SHA256 = true, &info, b.HALVersion().String(), b.SHA256()
		caps, cerr := b.Capabilities(ctx)
		if cerr == nil {
			r.Capabilities = &caps
		} else {
			err = cerr
		}
		_ = b.Close()
	}
	if err != nil {
		r.Error, r.Code, r.FailCode = err.Error(), hal.CodeOf(err).String(), hal.CodeOf(err)
		var he *hal.Error
		if errors.As(err, &he) {
			r.FailMsg = he.Msg
		}
	}
	return r
}

func (loader) ServeProbe() { ServeProbe() }
