package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func explainCmd() *cobra.Command {
	var bf backendFlags
	var asJSON bool
	var htmlOut string
	cmd := &cobra.Command{
		Use:   "explain MODEL [--backends a,b] [--json] [--html FILE]",
		Short: "Show where every node runs and why: partitions and each backend's reasons for declining",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			eng, err := bf.engine(ctx, nil)
			if err != nil {
				return err
			}
			defer eng.Close()
			m, _, name, err := loadModel(ctx, eng, args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			plan := m.Plan()
			if htmlOut != "" {
				page, err := m.PlanHTML("switchyard explain: " + name)
				if err != nil {
					return err
				}
				if err := os.WriteFile(htmlOut, page, 0o644); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "wrote %s\n", htmlOut)
			}
			if asJSON {
				b, err := plan.JSON()
				if err != nil {
					return err
				}
				_, err = os.Stdout.Write(append(b, '\n'))
				return err
			}
			if htmlOut == "" {
				fmt.Printf("model %s\n%s", name, plan.Text())
			}
			return nil
		},
	}
	bf.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the placement report as JSON")
	cmd.Flags().StringVar(&htmlOut, "html", "", "write a self-contained HTML page with a picture of the placement")
	return cmd
}
