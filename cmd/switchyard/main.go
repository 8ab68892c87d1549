// Command switchyard runs, verifies, inspects and benchmarks models on the
// Switchyard runtime.
//
//	switchyard run [MODEL] [--input NAME=FILE]... [--output-dir DIR] [--json]
//	switchyard verify [--rtol R] [--atol A] [--json] DIR...
//	switchyard inspect MODEL
//	switchyard bench MODEL [--runs N] [--warmup W] [--json]
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	_ "github.com/switchyard-hal/switchyard/backends/all" // every in-tree backend and the plugin and C-library loaders
)

// extraCommands lets each command file register itself in an init func
// (append(extraCommands, fooCmd)), so features live in their own files.
var extraCommands []func() *cobra.Command

// exitError carries an exit status without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// newRoot is the command tree.
func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "switchyard",
		Short:         "Switchyard: an on-device inference engine",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.AddCommand(runCmd(), verifyCmd(), inspectCmd(), benchCmd(), backendsCmd(), explainCmd(), generateCmd())
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	for _, c := range root.Commands() {
		if loadingCommands[c.Name()] {
			addLoadFlags(c)
		}
	}
	return root
}

func main() {
	root := newRoot()
	// Ctrl-C (or SIGTERM) cancels the command's context: every command
	// runs under cmd.Context(), so a run, a benchmark, a generation or a
	// conformance run stops at its next check and cleans up.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		// the Go API's errors carry the package name already
		fmt.Fprintln(os.Stderr, "switchyard:", strings.TrimPrefix(err.Error(), "switchyard: "))
		os.Exit(2)
	}
}

// version is the module version this binary was built from (with the VCS
// revision when the build recorded one), for --version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v += " " + s.Value
		case "vcs.modified":
			if s.Value == "true" {
				v += " (modified)"
			}
		}
	}
	return v + " " + bi.GoVersion
}
