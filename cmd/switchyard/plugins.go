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
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

// Plugin discovery: manifests in SWITCHYARD_PLUGIN_PATH and the per-user
// and system plugin directories become registry entries (kind "process"),
// so `switchyard backends` lists them (opening one verifies its sha256 and
// HAL version, and the details say whether it was verified or why not);
// `switchyard plugins` lists the manifests themselves.

var (
	pluginsMu         sync.Mutex
	pluginsFound      []grpcplugin.Registered
	pluginsDiscovered bool
)

func init() {
	registryHooks = append(registryHooks, func(r *hal.Registry) {
		// plugin processes log into the CLI's stderr, warnings and up
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		regs, problems := grpcplugin.Register(r, nil, grpcplugin.Options{Logger: logger})
		pluginsMu.Lock()
		pluginsFound, pluginsDiscovered = regs, true
		pluginsMu.Unlock()
		for _, p := range problems {
			fmt.Fprintf(os.Stderr, "switchyard: warning: %v\n", p)
		}
		for _, reg := range regs {
			if reg.Err != nil {
				fmt.Fprintf(os.Stderr, "switchyard: warning: plugin %s (%s): %v\n", reg.Manifest.Name, reg.Manifest.File, reg.Err)
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
			regs, discovered := pluginsFound, pluginsDiscovered
			pluginsMu.Unlock()
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "NAME\tKIND\tVERSION\tHAL\tVERIFIED\tPATH\tMANIFEST\n")
			for _, r := range regs {
				m := r.Manifest
				status := r.Verification.String()
				if r.Err != nil {
					status += "; not registered: " + r.Err.Error()
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Kind, m.Version, m.Range, status, m.Path, m.File)
			}
			fmt.Fprintf(w, "(searched: %s)\n", strings.Join(grpcplugin.SearchPath(), ":"))
			if !discovered {
				fmt.Fprintln(w, "(discovery did not run)")
			}
			return w.Flush()
		},
	}
}
