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
// `switchyard library PATH...` loads libraries and reports what each one
// is, or exactly why it is refused: a vendor's first check.
//
// Loading a C library runs its code (constructors) before any check can,
// and that code may exit() or crash. So listing never loads a library into
// the CLI's own process: `switchyard backends`, `switchyard library` (unless
// --in-process) and the default backend selection of run, verify, bench and
// explain probe each library in a child process (this same binary,
// cabi.Probe / cabi.ServeProbe), which reports what it found or how it died
// ("exit status 3 while loading the library"). A library named in
// --backends is opened in-process directly: it was asked for.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
	"github.com/switchyard-hal/switchyard/plugins/cabi"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

// librariesEnv names the environment variable listing C delegates.
const librariesEnv = "SWITCHYARD_LIBRARIES"

func init() {
	// when this process is a library probe started by cabi.Probe, probe
	// and exit before anything else runs
	cabi.ServeProbe()
	registryHooks = append(registryHooks, registerLibraries)
	extraCommands = append(extraCommands, libraryCmd)
}

// libraryEntry is a registered C library: where it is and how to open it.
type libraryEntry struct {
	path string
	opts cabi.Options
}

var (
	librariesMu sync.Mutex
	libraries   = map[string]libraryEntry{} // by registry name
)

// libraryFor returns the registered C library of that registry name.
func libraryFor(name string) (libraryEntry, bool) {
	librariesMu.Lock()
	defer librariesMu.Unlock()
	e, ok := libraries[name]
	return e, ok
}

// probeLibrary probes a registered library in a child process and turns
// the result into the registry's availability record.
func probeLibrary(ctx context.Context, e hal.Entry, lib libraryEntry) hal.Availability {
	a := hal.Availability{Entry: e}
	if e.Info.HAL != (hal.VersionRange{}) {
		if _, err := hal.Negotiate(hal.Current, e.Info.HAL); err != nil {
			a.Reason = err.Error()
			return a
		}
	}
	r := cabi.Probe(ctx, lib.path, cabi.ProbeOptions{Options: lib.opts})
	if err := r.Err(); err != nil {
		a.Reason = (&hal.Error{Code: hal.CodeOf(err), Backend: e.Info.Name, Op: "open", Msg: r.Error}).Error()
		if he, ok := err.(*hal.Error); ok {
			a.Reason = (&hal.Error{Code: he.Code, Backend: e.Info.Name, Op: "open", Msg: he.Msg}).Error()
		}
		return a
	}
	a.Available, a.Features = true, r.Features
	if r.Info != nil {
		a.Info = *r.Info
	}
	if v, ok := parseHALVersion(r.Negotiated); ok {
		a.HALVersion = v
	}
	return a
}

func parseHALVersion(s string) (hal.Version, bool) {
	var v hal.Version
	if _, err := fmt.Sscanf(s, "%d.%d", &v.Major, &v.Minor); err != nil {
		return hal.Version{}, false
	}
	return v, true
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
		opts := cabi.Options{Name: m.Name, SHA256: m.SHA256}
		f := cabi.Factory(m.Path, opts)
		f.Info = grpcplugin.ManifestInfo(m)
		if m.Description == "" {
			f.Info.Description = "C delegate library " + m.Path
		}
		if err := r.Register(f); err != nil {
			fmt.Fprintf(os.Stderr, "switchyard: warning: library plugin %s (%s): %v\n", m.Name, m.File, err)
			continue
		}
		for _, why := range m.Insecure {
			fmt.Fprintf(os.Stderr, "switchyard: WARNING: library plugin %s (%s) can be replaced by other users (%s), loaded anyway because %s is set\n", m.Name, m.File, why, sealed.EnvAllowInsecure)
		}
		librariesMu.Lock()
		libraries[m.Name] = libraryEntry{path: m.Path, opts: opts}
		librariesMu.Unlock()
	}
	entries, err := libraryEntries(os.Getenv(librariesEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchyard:", err)
		return
	}
	for _, e := range entries {
		opts := cabi.Options{Name: e[0]}
		if err := r.Register(cabi.Factory(e[1], opts)); err != nil {
			fmt.Fprintf(os.Stderr, "switchyard: %s: %v\n", librariesEnv, err)
			continue
		}
		librariesMu.Lock()
		libraries[e[0]] = libraryEntry{path: e[1], opts: opts}
		librariesMu.Unlock()
	}
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
			ctx := context.Background()
			var reports []cabi.ProbeResult
			failed := 0
			for _, p := range args {
				var r cabi.ProbeResult
				if inProcess {
					r = loadInProcess(ctx, p)
				} else {
					r = cabi.Probe(ctx, p, cabi.ProbeOptions{})
				}
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

// loadInProcess loads a library into this process and describes it as a
// probe would.
func loadInProcess(ctx context.Context, path string) cabi.ProbeResult {
	r := cabi.ProbeResult{Path: path}
	fmt.Fprintf(os.Stderr, "switchyard: loading C library %s in this process\n", path)
	b, err := cabi.Open(ctx, path, cabi.Options{})
	if err == nil {
		info := b.Info()
		r.Loaded, r.Info, r.Negotiated, r.SHA256 = true, &info, b.HALVersion().String(), b.SHA256()
		caps, cerr := b.Capabilities(ctx)
		if cerr == nil {
			r.Capabilities = &caps
		} else {
			err = cerr
		}
		_ = b.Close()
	}
	if err != nil {
		r.Error, r.Code = err.Error(), hal.CodeOf(err).String()
	}
	return r
}
