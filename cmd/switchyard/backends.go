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
// default Conv,Relu,Add,MatMul; or all its options as JSON in
// SWITCHYARD_SIM_OPTIONS, e.g. the device-memory double), which is listed
// as simulated and never chosen by default.
func registry() *hal.Registry {
	simOnce.Do(func() {
		for _, hook := range registryHooks {
			hook(hal.Default)
		}
		ops := []string{"Conv", "Relu", "Add", "MatMul"}
		if s := os.Getenv("SWITCHYARD_SIM_OPS"); s != "" {
			ops = strings.Split(s, ",")
		}
		so := sim.Options{Ops: ops}
		if s := os.Getenv("SWITCHYARD_SIM_OPTIONS"); s != "" {
			// a JSON sim.Options: e.g. {"ops":[...],"device_memory":true}
			// for the device-memory double
			if err := json.Unmarshal([]byte(s), &so); err != nil {
				fmt.Fprintf(os.Stderr, "switchyard: SWITCHYARD_SIM_OPTIONS: %v (the sim backend is not registered)\n", err)
				return
			}
		}
		so.Name = "sim"
		_ = hal.Register(sim.Factory(so))
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
	ignoreCosts   bool
}

func (f *backendFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.names, "backends", "", "backends in priority order, comma-separated (default: every available non-simulated backend, then cpu)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail instead of falling back to cpu for nodes the listed backends decline")
	cmd.Flags().IntVar(&f.minSize, "min-partition", 0, "leave delegated partitions with fewer nodes on cpu")
	cmd.Flags().BoolVar(&f.ignoreCosts, "ignore-costs", false, "place by node counts alone, ignoring the backends' cost estimates")
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
	entries := map[string]hal.Entry{}
	for _, e := range r.List() {
		entries[e.Info.Name] = e
	}
	for _, n := range names {
		if lib, ok := libraryFor(n); ok && !explicit {
			// not asked for: a C library is probed in a child process
			// before it is loaded here, so one that exits or crashes
			// while loading is skipped (and said) instead of ending this
			// command
			if a := probeLibrary(ctx, entries[n], lib); !a.Available {
				warnSkipped(n, a.Reason)
				continue
			}
		}
		d, err := r.Open(ctx, n)
		if err != nil {
			if explicit {
				closeAll()
				return nil, nil, err
			}
			// an unavailable backend (no device, no vendor library) is
			// normal when not asked for; a refused one (checksum
			// mismatch, incompatible HAL version, insecure path) is said
			if hal.CodeOf(err) != hal.CodeUnavailable {
				warnSkipped(n, err.Error())
			}
			continue
		}
		devs = append(devs, d)
	}
	pol := partitioner.Policy{Strict: f.strict, MinPartitionSize: f.minSize, IgnoreCosts: f.ignoreCosts}
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
			avail := probeAll(context.Background(), registry())
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

// warned holds the backends a warning was printed for, so that one problem
// is said once per command.
var (
	warnedMu sync.Mutex
	warned   = map[string]bool{}
)

// warnSkipped says on stderr that a backend the default selection would
// have used is skipped, and why.
func warnSkipped(name, why string) {
	warnedMu.Lock()
	defer warnedMu.Unlock()
	if warned[name] {
		return
	}
	warned[name] = true
	fmt.Fprintf(os.Stderr, "switchyard: warning: backend %s skipped: %s\n", name, why)
}

// markWarned records that a warning about name was already printed.
func markWarned(name string) {
	warnedMu.Lock()
	warned[name] = true
	warnedMu.Unlock()
}

// probeAll is Registry.Probe, except that C libraries are probed in a
// child process (cabi.Probe): a library whose constructor exits or crashes
// is listed as unavailable with how its process ended, and the listing
// goes on.
func probeAll(ctx context.Context, r *hal.Registry) []hal.Availability {
	var out []hal.Availability
	for _, e := range r.List() {
		if lib, ok := libraryFor(e.Info.Name); ok {
			out = append(out, probeLibrary(ctx, e, lib))
			continue
		}
		a := hal.Availability{Entry: e}
		d, err := r.Open(ctx, e.Info.Name)
		if err != nil {
			a.Reason = err.Error()
		} else {
			a.Available, a.HALVersion, a.Features = true, d.HALVersion(), d.Features()
			a.Info = d.Info()
			_ = d.Close()
		}
		out = append(out, a)
	}
	return out
}
