package main

// `switchyard library PATH...` loads C-ABI delegate libraries
// (plugins/cabi) and reports what each one is, or exactly why it is
// refused: a vendor's first check. Registering libraries as backends
// (SWITCHYARD_LIBRARIES, manifests of kind "library") is discovery's
// (switchyard.Discover); listing them never loads one into this process:
// `switchyard backends` and the default backend selection of run, verify,
// bench and explain probe each library in a child process (this same
// binary, switchyard.ServeProbe), which reports what it found or how it
// died ("exit status 3 while loading the library"). A library named in
// --backends is opened in-process directly: it was asked for.
//
//	SWITCHYARD_LIBRARIES=$PWD/sdk/c/example/libswitchyard_example.so switchyard backends

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
)

func init() {
	// when this process is a library probe started by a parent's probe,
	// probe and exit before anything else runs
	switchyard.ServeProbe()
	extraCommands = append(extraCommands, libraryCmd)
}

func libraryCmd() *cobra.Command {
	var asJSON, inProcess bool
	cmd := &cobra.Command{
		Use:   "library PATH...",
		Short: "Load C-ABI delegate libraries (each in a child process) and show what each is (info, HAL version, ops) or why it is refused",
		Long: `Load C-ABI delegate libraries and show what each is (info, HAL version,
ops, sha256 of the bytes loaded) or exactly why it is refused.

Each library is loaded in a separate process (this binary), so a library
that calls exit() or crashes while loading is reported — with the exit
status and the step — instead of ending this command. --in-process loads
them into this process instead.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var reports []switchyard.LibraryReport
			failed := 0
			for _, p := range args {
				if inProcess {
					fmt.Fprintf(os.Stderr, "switchyard: loading C library %s in this process\n", p)
				}
				r := switchyard.InspectLibrary(ctx, p, inProcess)
				if r.Error != "" {
					failed++
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
					if r.SHA256 != "" {
						fmt.Fprintf(w, "  sha256 %s (of the sealed copy loaded)\n", r.SHA256)
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
	cmd.Flags().BoolVar(&inProcess, "in-process", false, "load the libraries into this process instead of a child process (a library that exits or crashes then ends this command)")
	return cmd
}
