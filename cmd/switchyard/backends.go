package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/core/runtime"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// registry is the CLI's backend registry: the linked-in backends of
// hal.Default plus the simulation backend (ops from SWITCHYARD_SIM_OPS,
// default Conv,Relu,Add,MatMul), which is listed as simulated and never
// chosen by default.
func registry() *hal.Registry {
	simOnce.Do(func() {
		for _, hook := range registryHooks {
			hook(hal.Default)
		}
		ops := []string{"Conv", "Relu", "Add", "MatMul"}
		if s := os.Getenv("SWITCHYARD_SIM_OPS"); s != "" {
			ops = strings.Split(s, ",")
		}
		_ = hal.Register(sim.Factory(sim.Options{Name: "sim", Ops: ops}))
	})
	return hal.Default
}

var simOnce sync.Once

// registryHooks run once, before the registry is first used: features in
// their own files (plugin discovery, C libraries) register backends here.
var registryHooks []func(r *hal.Registry)

var _ = cpu.Name // the cpu backend registers itself with hal.Default

// backendFlags are the placement flags shared by run, verify, bench and explain.
type backendFlags struct {
	names         string
	strict        bool
	minSize       int
	onUnavailable string
}

func (f *backendFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.names, "backends", "", "backends in priority order, comma-separated (default: every available non-simulated backend, then cpu)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail instead of falling back to cpu for nodes the listed backends decline")
	cmd.Flags().IntVar(&f.minSize, "min-partition", 0, "leave delegated partitions with fewer nodes on cpu")
	cmd.Flags().StringVar(&f.onUnavailable, "on-unavailable", "fail", "when a backend becomes unavailable during a run: fail, or replace (re-place its partitions on cpu)")
}

// options opens the requested backends; close releases them.
func (f *backendFlags) options(ctx context.Context) (opts *runtime.Options, closeAll func(), err error) {
	r := registry()
	var names []string
	explicit := strings.TrimSpace(f.names) != ""
	if explicit {
		for _, n := range strings.Split(f.names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	} else {
		for _, e := range r.List() {
			if e.Info.Device != hal.DeviceSimulated && e.Info.Name != runtime.CPU {
				names = append(names, e.Info.Name)
			}
		}
		// the portable native kernels go behind any vendor library, before cpu
		sort.SliceStable(names, func(i, j int) bool { return names[i] != native.Name && names[j] == native.Name })
	}
	var devs []*hal.Device
	closeAll = func() {
		for _, d := range devs {
			_ = d.Close()
		}
	}
	for _, n := range names {
		d, err := r.Open(ctx, n)
		if err != nil {
			if explicit {
				closeAll()
				return nil, nil, err
			}
			continue // an unavailable backend is normal when not asked for
		}
		devs = append(devs, d)
	}
	pol := partitioner.Policy{Strict: f.strict, MinPartitionSize: f.minSize}
	ro := &runtime.Options{Backends: devs, Policy: pol}
	switch f.onUnavailable {
	case "", "fail":
	case "replace":
		ro.OnUnavailable = runtime.ReplaceOnCPU
	default:
		closeAll()
		return nil, nil, fmt.Errorf("--on-unavailable %q: want fail or replace", f.onUnavailable)
	}
	return ro, closeAll, nil
}

func backendsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "List every known backend: kind, version, HAL version, available or why not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			avail := registry().Probe(context.Background())
			if asJSON {
				type row struct {
					Name, Kind, Device, Version, HAL, Negotiated, Reason string
					Available                                            bool
					Features                                             []string
				}
				var rows []row
				for _, a := range avail {
					rows = append(rows, row{a.Info.Name, string(a.Kind), string(a.Info.Device), a.Info.Version, a.Info.HAL.String(), a.HALVersion.String(), a.Reason, a.Available, a.Features})
				}
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "NAME\tKIND\tDEVICE\tVERSION\tHAL\tAVAILABLE\tDETAILS\n")
			for _, a := range avail {
				yes := "yes"
				details := a.Info.Description
				if !a.Available {
					yes, details = "no", a.Reason
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Info.Name, a.Kind, a.Info.Device, a.Info.Version, a.Info.HAL, yes, details)
			}
			fmt.Fprintf(w, "(this binary speaks HAL %s)\n", hal.Current)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
