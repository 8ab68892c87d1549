package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime/calibrate"
)

func init() { extraCommands = append(extraCommands, calibrateCmd) }

func calibrateCmd() *cobra.Command {
	var backends, families, models []string
	var out, refit string
	var runs, passes int
	var asJSON, dryRun, networks bool
	cmd := &cobra.Command{
		Use:   "calibrate [--backends native,xnnpack,cpu] [--profile-file FILE]",
		Short: "Measure this machine's kernel families per backend and store the cost profile placement reads",
		Long: `Times each kernel family (dense, 1x1 and depthwise convolution, matrix
products, element-wise ops, transposes, pools, softmax) at a few sizes on
each backend, at one thread, as chains of one and of several nodes placed
whole on the backend (CPU time, the least of repeated calls), fits a time
per node (fixed + per FLOP and/or per byte) per family, and writes the
profile as JSON. Placement reads it from then on, instead of the built-in
rates, for the families it holds.

Default file: ` + "$" + opcost.ProfileEnv + ` when set, else <user cache dir>/switchyard/cost-profile.json.
` + opcost.ProfileEnv + `=off makes placement ignore any profile.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if out == "" {
				out = opcost.ProfilePath()
			}
			if out == "" && !dryRun {
				return fmt.Errorf("no place for the profile (no user cache directory, or %s=off): give --profile-file", opcost.ProfileEnv)
			}
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
			// the estimates printed beside the measurements are the
			// built-in ones
			prev := opcost.CurrentProfile()
			opcost.SetProfile(nil)
			defer opcost.SetProfile(prev)
			devs := map[string]*hal.Device{}
			var order []string
			for _, name := range backends {
				d, err := hal.Default.Open(ctx, name)
				if err != nil {
					if errors.Is(err, hal.ErrUnavailable) {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s: not available here (%v): not measured\n", name, err)
						continue
					}
					return fmt.Errorf("%s: %w", name, err)
				}
				defer d.Close()
				devs[name] = d
				order = append(order, name)
			}
			opts := calibrate.Options{Runs: runs, Passes: passes, Networks: networks}
			if len(families) > 0 {
				opts.Families = map[string]bool{}
				for _, f := range families {
					opts.Families[f] = true
				}
			}
			if !asJSON {
				opts.Progress = func(s string) { fmt.Fprintln(cmd.OutOrStdout(), s) }
			}
			if len(models) > 0 {
				// the models' own nodes, each measured and priced alone:
				// where an estimate misses, and by how much
				for _, file := range models {
					ir, err := formats.LoadFile(file, formats.Options{})
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s:\n", file)
					if _, err := calibrate.RunCases(ctx, devs, order, calibrate.NodeCases(ir, opts.Families), opts); err != nil {
						return err
					}
				}
				return nil
			}
			var samples []calibrate.Sample
			var models []calibrate.ModelSample
			var p *opcost.Profile
			if refit != "" {
				// fit again the samples of an earlier --json run
				b, err := os.ReadFile(refit)
				if err != nil {
					return err
				}
				var in struct {
					Samples []calibrate.Sample      `json:"samples"`
					Models  []calibrate.ModelSample `json:"models"`
				}
				if err := json.Unmarshal(b, &in); err != nil {
					return fmt.Errorf("%s: %w", refit, err)
				}
				samples, models, p = in.Samples, in.Models, calibrate.Fit(in.Samples)
				// the in-model term is fitted against this profile's
				// estimates of the networks (asked of the backends again)
				if networks {
					calibrate.FitInModel(ctx, devs, calibrate.ModelCases(), models, p)
				}
			} else {
				var err error
				if samples, models, p, err = calibrate.RunWithModels(ctx, devs, order, opts); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Samples []calibrate.Sample      `json:"samples"`
					Models  []calibrate.ModelSample `json:"models,omitempty"`
					Profile *opcost.Profile         `json:"profile"`
				}{samples, models, p}); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				for _, m := range models {
					if m.Skipped == "" {
						fmt.Fprintf(w, "%-8s %-22s whole %8.3f ms, estimated %8.3f ms, with the in-model term %8.3f ms\n", m.Backend, m.Name,
							float64(m.Time)/1e6, float64(m.Estimate)/1e6, float64(m.InModel)/1e6)
					}
				}
				fmt.Fprintf(w, "\nfitted (%s):\n", p.Machine)
				for _, be := range order {
					for _, f := range p.Families(be) {
						r := p.Rates[be][f]
						if f == opcost.InModelFamily {
							fmt.Fprintf(w, "  %-8s %-10s fixed %8.0f ns a node  %.4g ns per weight byte  %.4g ns per activation byte beyond %.0f KiB  (%d networks, median error %.0f%%, worst %.0f%%)\n",
								be, f, r.Fixed, r.PerParamByte, r.PerByte, r.CacheBytes/1024, r.Samples, 100*r.TypicalError, 100*r.MaxError)
							continue
						}
						fmt.Fprintf(w, "  %-8s %-10s fixed %8.0f ns  %.4g ns/FLOP  %.4g ns/byte  %.4g ns/output  %.4g ns/input  %.4g ns/weight byte  (%d sizes, median error %.0f%%, worst %.0f%%)\n",
							be, f, r.Fixed, r.PerFLOP, r.PerByte, r.PerElem, r.PerInElem, r.PerParamByte, r.Samples, 100*r.TypicalError, 100*r.MaxError)
					}
				}
			}
			if dryRun {
				return nil
			}
			if err := p.Save(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "profile written to %s (%s)\n", out, strings.Join(order, ", "))
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&backends, "backends", []string{"native", "xnnpack", "cpu"}, "backends to measure")
	cmd.Flags().StringSliceVar(&families, "families", nil, "only these families (conv, conv1x1, dwconv, gemm, Relu, Sigmoid, Tanh, Clip, Add, Mul, Transpose, MaxPool, Softmax)")
	cmd.Flags().StringVar(&refit, "refit", "", "measure nothing: fit the samples of an earlier --json run (its output file) again")
	cmd.Flags().StringSliceVar(&models, "model", nil, "instead, measure each node of these models alone (those of --families) beside its estimate; fits and writes nothing")
	cmd.Flags().StringVar(&out, "profile-file", "", "the profile file to write (default: where placement reads it, or $SWITCHYARD_COST_PROFILE)")
	cmd.Flags().IntVar(&runs, "runs", 15, "timed calls per chain (the least counts)")
	cmd.Flags().IntVar(&passes, "passes", 2, "passes over all the cases (the least time of each counts)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the samples and the profile as JSON")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "measure and print, write nothing")
	cmd.Flags().BoolVar(&networks, "networks", false, "also time whole networks on each backend beside their estimates and fit the in-model term (per node, per weight byte, per activation byte beyond a cache size) to what the node rates miss; with --families in-model, the networks alone against the profile in use")
	return cmd
}
