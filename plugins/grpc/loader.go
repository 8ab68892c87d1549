package grpcplugin

import (
	"log/slog"

	"github.com/switchyard-hal/switchyard/backends"
	"github.com/switchyard-hal/switchyard/hal"
)

// The plugin-process loader of discovery (package backends): linking this
// package lets the app API start the plugins of kind "process" found on
// the plugin path.
func init() { backends.RegisterProcessLoader(loader{}) }

type loader struct{}

func (loader) RegisterProcesses(r *hal.Registry, dirs []string, logger *slog.Logger) ([]backends.ProcessPlugin, []error) {
	regs, problems := Register(r, dirs, Options{Logger: logger})
	out := make([]backends.ProcessPlugin, len(regs))
	for i, g := range regs {
		out[i] = backends.ProcessPlugin{Manifest: g.Manifest, Verification: g.Verification, Err: g.Err}
	}
	return out, problems
}
