package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/sealed"
)

// `switchyard plugins` lists the plugin manifests that discovery
// (switchyard.Discover) found, whether each binary matches its sha256, and
// the manifests refused.

func init() {
	extraCommands = append(extraCommands, pluginsCmd)
}

func pluginsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plugins",
		Short: "List plugin manifests found on the plugin path and whether each binary matches its sha256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b := backends()
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "NAME\tKIND\tVERSION\tHAL\tVERIFIED\tPATH\tMANIFEST\n")
			for _, p := range b.Plugins() {
				status := p.Verification
				if p.Err != nil {
					status += "; not registered: " + p.Err.Error()
				}
				for _, why := range p.Insecure {
					status += "; INSECURE (loaded because " + sealed.EnvAllowInsecure + " is set): " + why
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Kind, p.Version, p.HAL, status, p.Path, p.Manifest)
			}
			for _, p := range b.Problems() {
				fmt.Fprintf(w, "REFUSED\t\t\t\t%s\n", p)
			}
			fmt.Fprintf(w, "(searched: %s)\n", strings.Join(switchyard.SearchPath(), ":"))
			return w.Flush()
		},
	}
}
