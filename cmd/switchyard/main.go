// Command switchyard runs, verifies, inspects and benchmarks models on the
// Switchyard runtime.
//
//	switchyard run [MODEL] [--input NAME=FILE]... [--output-dir DIR] [--json]
//	switchyard verify [--rtol R] [--atol A] [--json] DIR...
//	switchyard inspect MODEL
//	switchyard bench MODEL [--runs N] [--warmup W] [--json]
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	_ "github.com/switchyard-hal/switchyard/backends/all" // every in-tree backend and the plugin and C-library loaders
)

// extraCommands lets each command file register itself in an init func
// (append(extraCommands, fooCmd)), so features live in their own files.
var extraCommands []func() *cobra.Command

// exitError carries an exit status without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	root := &cobra.Command{
		Use:           "switchyard",
		Short:         "Switchyard: an on-device inference engine",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addLoadFlags(root)
	root.AddCommand(runCmd(), verifyCmd(), inspectCmd(), benchCmd(), backendsCmd(), explainCmd(), generateCmd())
	for _, c := range extraCommands {
		root.AddCommand(c())
	}
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		// the Go API's errors carry the package name already
		fmt.Fprintln(os.Stderr, "switchyard:", strings.TrimPrefix(err.Error(), "switchyard: "))
		os.Exit(2)
	}
}
