package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

// Plugin discovery: manifests in SWITCHYARD_PLUGIN_PATH and the per-user
// and system plugin directories become registry entries (kind "process"),
// so `switchyard backends` lists them (opening one verifies its sha256 and
// HAL version, and the details say whether it was verified or why not);
// `switchyard plugins` lists the manifests themselves, and the ones
// refused.
//
// Nothing is skipped silently: every command says on stderr which plugin's
// binary does not match its manifest's sha256 (both hashes named), which
// manifests were refused (bad field, or a manifest or binary other users
// can replace: world-writable, or in a world-writable directory without
// the sticky bit), and which were loaded anyway because
// SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1.

var (
	pluginsMu         sync.Mutex
	pluginsFound      []grpcplugin.Registered
	pluginsProblems   []error
	pluginsDiscovered bool
)

func init() {
	registryHooks = append(registryHooks, func(r *hal.Registry) {
		// plugin processes log into the CLI's stderr, warnings and up
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		regs, problems := grpcplugin.Register(r, nil, grpcplugin.Options{Logger: logger})
		pluginsMu.Lock()
		pluginsFound, pluginsProblems, pluginsDiscovered = regs, problems, true
		pluginsMu.Unlock()
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "switchyard: warning: %v\n", p)
		}
		for _, reg := range regs {
			m := reg.Manifest
			switch {
			case reg.Err != nil:
				fmt.Fprintf(os.Stderr, "switchyard: warning: plugin %s (%s): %v\n", m.Name, m.File, reg.Err)
			case !reg.Verification.OK:
				// registered, so that `backends` shows why, but it will
				// never start: say so on every command
				fmt.Fprintf(os.Stderr, "switchyard: warning: plugin %s (%s) will not be started: %s\n", m.Name, m.File, reg.Verification.Reason)
				markWarned(m.Name)
			}
			for _, why := range m.Insecure {
				fmt.Fprintf(os.Stderr, "switchyard: WARNING: plugin %s (%s) can be replaced by other users (%s), loaded anyway because %s is set\n", m.Name, m.File, why, sealed.EnvAllowInsecure)
			}
		}
	})
	extraCommands = append(extraCommands, pluginsCmd)
}

func pluginsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plugins",
		Short: "List plugin manifests found on the plugin path and whether each binary matches its sha256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			registry()
			pluginsMu.Lock()
			regs, problems, discovered := pluginsFound, pluginsProblems, pluginsDiscovered
			pluginsMu.Unlock()
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "NAME\tKIND\tVERSION\tHAL\tVERIFIED\tPATH\tMANIFEST\n")
			for _, r := range regs {
				m := r.Manifest
				status := r.Verification.String()
				if r.Err != nil {
					status += "; not registered: " + r.Err.Error()
				}
				for _, why := range m.Insecure {
					status += "; INSECURE (loaded because " + sealed.EnvAllowInsecure + " is set): " + why
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Kind, m.Version, m.Range, status, m.Path, m.File)
			}
			for _, p := range problems {
				fmt.Fprintf(w, "REFUSED\t\t\t\t%s\n", p)
			}
			fmt.Fprintf(w, "(searched: %s)\n", strings.Join(grpcplugin.SearchPath(), ":"))
			if !discovered {
				fmt.Fprintln(w, "(discovery did not run)")
			}
			return w.Flush()
		},
	}
}
