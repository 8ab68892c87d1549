package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// Backend discovery is the library's (switchyard.Discover): linked-in
// backends, plugin manifests in SWITCHYARD_PLUGIN_PATH and the per-user and
// system plugin directories (kind "process" or "library"), and the C
// libraries of SWITCHYARD_LIBRARIES. The CLI adds the simulation backend
// and says on stderr everything discovery found wrong.
//
// Nothing is skipped silently: every command says which plugin's binary
// does not match its manifest's sha256 (both hashes named), which manifests
// were refused (bad field, or a manifest or binary other users can replace:
// world-writable, or in a world-writable directory without the sticky bit),
// and which were loaded anyway because
// SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1.

var (
	foundOnce sync.Once
	found     *switchyard.Backends
)

// backends is the CLI's backend set, discovered once: the linked-in
// backends of hal.Default, the plugins and C libraries found, plus the
// simulation backend (ops from SWITCHYARD_SIM_OPS, default
// Conv,Relu,Add,MatMul; or all its options as JSON in
// SWITCHYARD_SIM_OPTIONS, e.g. the device-memory double), which is listed
// as simulated and never chosen by default.
func backends() *switchyard.Backends {
	foundOnce.Do(func() {
		var extra []hal.Factory
		if simAsked(os.Args[1:]) {
			if f, ok := simFactory(); ok {
				extra = append(extra, f)
			}
		}
		// plugin processes log into the CLI's stderr, warnings and up
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		found = switchyard.Discover(&switchyard.DiscoverOptions{Extra: extra, Logger: logger})
		for _, w := range found.Warnings() {
			if w.Insecure {
				fmt.Fprintf(os.Stderr, "switchyard: WARNING: %s\n", w.Msg)
				continue
			}
			fmt.Fprintf(os.Stderr, "switchyard: warning: %s\n", w.Msg)
			if w.Backend != "" {
				// said once: not again as "backend skipped"
				markWarned(w.Backend)
			}
		}
	})
	return found
}

// simAsked says whether the simulation backend is asked for: by
// SWITCHYARD_SIM_OPS or SWITCHYARD_SIM_OPTIONS, or by a --backends (or
// conformance's --backend) value that names sim. Otherwise it is not
// registered at all, so listings and defaults never show a test double.
func simAsked(args []string) bool {
	if os.Getenv("SWITCHYARD_SIM_OPS") != "" || os.Getenv("SWITCHYARD_SIM_OPTIONS") != "" {
		return true
	}
	for i, a := range args {
		var v string
		switch {
		case a == "--backends" || a == "--backend":
			if i+1 < len(args) {
				v = args[i+1]
			}
		case strings.HasPrefix(a, "--backends="):
			v = strings.TrimPrefix(a, "--backends=")
		case strings.HasPrefix(a, "--backend="):
			v = strings.TrimPrefix(a, "--backend=")
		}
		for _, n := range strings.Split(v, ",") {
			if strings.TrimSpace(n) == "sim" {
				return true
			}
		}
	}
	return false
}

// simFactory is the simulation backend the environment asks for.
func simFactory() (hal.Factory, bool) {
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
			return hal.Factory{}, false
		}
	}
	so.Name = "sim"
	return sim.Factory(so), true
}

// backendFlags are the placement flags shared by run, verify, bench and explain.
type backendFlags struct {
	names         string
	strict        bool
	minSize       int
	onUnavailable string
	ignoreCosts   bool
	precision     string
	threads       int // generate's --threads (0: each backend's choice)
}

func (f *backendFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.names, "backends", "", "backends in priority order, comma-separated (default: every available non-simulated backend, then cpu)")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "fail instead of falling back to cpu for nodes the listed backends decline")
	cmd.Flags().IntVar(&f.minSize, "min-partition", 0, "leave delegated partitions with fewer nodes on cpu")
	cmd.Flags().BoolVar(&f.ignoreCosts, "ignore-costs", false, "place by node counts alone, ignoring the backends' cost estimates")
	cmd.Flags().StringVar(&f.precision, "precision", "float32", "the lowest precision backends may compute float32 values in: float32 (exact), or int8 (native quantizes BlockQuantMatMul's activations to int8 blocks for integer dot products; the plan shows the partitions that do)")
	cmd.Flags().StringVar(&f.onUnavailable, "on-unavailable", "fail", "when a backend becomes unavailable during a run: fail, or replace (re-place its partitions on cpu)")
}

// engine opens the requested backends (mf, when not nil, sets the memory
// budget); Close releases them and the models loaded.
func (f *backendFlags) engine(ctx context.Context, mf *memoryFlags) (*switchyard.Engine, error) {
	opts := &switchyard.OpenOptions{
		Discovered: backends(),
		Policy:     switchyard.Policy{Strict: f.strict, MinPartitionSize: f.minSize, IgnoreCosts: f.ignoreCosts},
		// a C library not asked for is probed in a child process before
		// it is loaded here, so one that exits or crashes while loading
		// is skipped (and said) instead of ending this command
		ProbeLibraries: true,
		// skipped backends are said below, once each
		Logger:  slog.New(slog.DiscardHandler),
		Threads: f.threads,
	}
	prec, err := hal.ParsePrecision(f.precision)
	if err != nil {
		return nil, fmt.Errorf("--precision: %w", err)
	}
	opts.Precision = switchyard.Precision(prec)
	for _, n := range strings.Split(f.names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			opts.Backends = append(opts.Backends, n)
		}
	}
	switch f.onUnavailable {
	case "", "fail":
	case "replace":
		opts.OnUnavailable = switchyard.ReplaceOnCPU
	default:
		return nil, fmt.Errorf("--on-unavailable %q: want fail or replace", f.onUnavailable)
	}
	if mf != nil {
		v, err := parseMemoryBudget(mf.budget)
		if err != nil {
			return nil, fmt.Errorf("--memory-budget %q: %w", mf.budget, err)
		}
		opts.MemoryBudget = v
	}
	e, err := switchyard.NewEngine(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, s := range e.Skipped() {
		// an unavailable backend (no device, no vendor library) is
		// normal when not asked for; a refused one (checksum mismatch,
		// incompatible HAL version, insecure path, a library that died
		// in its probe) is said
		if s.Notable {
			warnSkipped(s.Backend, s.Err.Error())
		}
	}
	return e, nil
}

func backendsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "backends",
		Short: "List every known backend: kind, version, HAL version, available or why not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			avail := backends().Probe(cmd.Context())
			if asJSON {
				type row struct {
					Name, Kind, Device, Version, HAL, Negotiated, Reason string
					Available                                            bool
					Features                                             []string
					Devices                                              []hal.DeviceDesc `json:",omitempty"`
				}
				var rows []row
				for _, a := range avail {
					rows = append(rows, row{a.Info.Name, string(a.Kind), string(a.Info.Device), a.Info.Version, a.Info.HAL.String(), a.HALVersion.String(), a.Reason, a.Available, a.Features, a.Devices})
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
				// HAL 1.1: each device the backend lists, on its own row
				for _, d := range a.Devices {
					fmt.Fprintf(w, "  #%d %s\t\t%s\t\t\t\t%s\n", d.Index, d.Name, d.Kind, deviceDetails(d))
				}
			}
			fmt.Fprintf(w, "(this binary speaks HAL %s)\n", hal.Current)
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// deviceDetails describes one device of a backend for the listing.
func deviceDetails(d hal.DeviceDesc) string {
	var parts []string
	if d.MemoryBytes > 0 {
		parts = append(parts, "memory "+byteSize(d.MemoryBytes))
	}
	if d.MaxBufferBytes > 0 {
		parts = append(parts, "largest buffer "+byteSize(d.MaxBufferBytes))
	}
	var kinds, precs []string
	for _, k := range d.MemoryKinds {
		kinds = append(kinds, k.String())
	}
	for _, p := range d.Precisions {
		precs = append(precs, string(p))
	}
	if len(kinds) > 0 {
		parts = append(parts, "memory kinds "+strings.Join(kinds, ", "))
	}
	if len(precs) > 0 {
		parts = append(parts, "precisions "+strings.Join(precs, ", "))
	}
	parts = append(parts, "cache key "+d.CacheKey.String())
	return strings.Join(parts, "; ")
}

// byteSize writes a byte count in binary units.
func byteSize(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
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
