package main

// C-ABI delegates (plugins/cabi) in the CLI.
//
// SWITCHYARD_LIBRARIES lists shared libraries to register as backends of
// kind "library", separated like PATH (":" on Unix). Each entry is PATH or
// NAME=PATH; the name defaults to the file name without "lib" and the
// extension (libacme_npu.so -> acme_npu). Listing them loads nothing; they
// are opened when a command uses them (run, verify, bench, explain pick
// every available non-simulated backend by default, or name them in
// --backends), and `switchyard backends` shows each one as available or
// why not (missing file, no entry point, incompatible HAL version, …).
//
//	SWITCHYARD_LIBRARIES=$PWD/sdk/c/example/libswitchyard_example.so switchyard backends
//
// Plugin manifests of kind "library" (plugins/grpc manifests, found on
// SWITCHYARD_PLUGIN_PATH and the standard plugin directories) are
// registered here too: listed from the manifest without loading, the
// library's sha256 verified before it is opened, and the manifest's HAL
// range checked before anything is loaded.
//
// `switchyard library PATH...` loads libraries directly and reports what
// each one is, or exactly why it is refused: a vendor's first check.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cabi"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

// librariesEnv names the environment variable listing C delegates.
const librariesEnv = "SWITCHYARD_LIBRARIES"

func init() {
	registryHooks = append(registryHooks, registerLibraries)
	extraCommands = append(extraCommands, libraryCmd)
}

// libraryEntries parses SWITCHYARD_LIBRARIES into name → path pairs.
func libraryEntries(env string) ([][2]string, error) {
	var out [][2]string
	for _, e := range filepath.SplitList(env) {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		name, path := "", e
		if i := strings.Index(e, "="); i > 0 && !strings.ContainsRune(e[:i], '/') {
			name, path = e[:i], e[i+1:]
		}
		if path == "" {
			return nil, fmt.Errorf("%s: entry %q has no path", librariesEnv, e)
		}
		if name == "" {
			name = cabi.NameFromPath(path)
		}
		out = append(out, [2]string{name, path})
	}
	return out, nil
}

func registerLibraries(r *hal.Registry) {
	for _, m := range grpcplugin.Discover(grpcplugin.SearchPath()).Manifests {
		if m.Kind != grpcplugin.KindLibrary {
			continue
		}
		f := cabi.Factory(m.Path, cabi.Options{Name: m.Name, SHA256: m.SHA256})
		f.Info = grpcplugin.ManifestInfo(m)
		if m.Description == "" {
			f.Info.Description = "C delegate library " + m.Path
		}
		if err := r.Register(f); err != nil {
			fmt.Fprintf(os.Stderr, "switchyard: warning: library plugin %s (%s): %v\n", m.Name, m.File, err)
		}
	}
	entries, err := libraryEntries(os.Getenv(librariesEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchyard:", err)
		return
	}
	for _, e := range entries {
		if err := r.Register(cabi.Factory(e[1], cabi.Options{Name: e[0]})); err != nil {
			fmt.Fprintf(os.Stderr, "switchyard: %s: %v\n", librariesEnv, err)
		}
	}
}

func libraryCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "library PATH...",
		Short: "Load C-ABI delegate libraries and show what each is (info, HAL version, ops) or why it is refused",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			type report struct {
				Path         string            `json:"path"`
				Loaded       bool              `json:"loaded"`
				Error        string            `json:"error,omitempty"`
				Code         string            `json:"code,omitempty"`
				Info         *hal.Info         `json:"info,omitempty"`
				Negotiated   string            `json:"negotiated_hal,omitempty"`
				Capabilities *hal.Capabilities `json:"capabilities,omitempty"`
			}
			ctx := context.Background()
			var reports []report
			failed := 0
			for _, p := range args {
				r := report{Path: p}
				b, err := cabi.Open(ctx, p, cabi.Options{})
				if err == nil {
					info := b.Info()
					r.Loaded, r.Info, r.Negotiated = true, &info, b.HALVersion().String()
					caps, cerr := b.Capabilities(ctx)
					if cerr == nil {
						r.Capabilities = &caps
					} else {
						err = cerr
					}
					_ = b.Close()
				}
				if err != nil {
					failed++
					r.Error, r.Code = err.Error(), hal.CodeOf(err).String()
				}
				reports = append(reports, r)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(reports); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				for _, r := range reports {
					fmt.Fprintln(w, r.Path)
					if r.Info != nil {
						fmt.Fprintf(w, "  name %s, vendor %s, version %s, device %s\n", r.Info.Name, r.Info.Vendor, r.Info.Version, r.Info.Device)
						fmt.Fprintf(w, "  HAL %s (negotiated %s)\n", r.Info.HAL, r.Negotiated)
						fmt.Fprintf(w, "  %s\n", r.Info.Description)
					}
					if r.Capabilities != nil {
						var ops []string
						for _, op := range r.Capabilities.Ops {
							ops = append(ops, op.OpType)
						}
						fmt.Fprintf(w, "  ops: %s\n", strings.Join(ops, ", "))
					}
					if r.Error != "" {
						fmt.Fprintf(w, "  REFUSED (%s): %s\n", r.Code, r.Error)
					}
				}
			}
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON report")
	return cmd
}
