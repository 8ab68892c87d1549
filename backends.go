package switchyard

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/backends"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/internal/sealed"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the reference kernels, the default fallback
)

// nativeBackend is the portable Go backend's registry name: DefaultOrder
// puts it behind every vendor backend.
const nativeBackend = "native"

// LibrariesEnv names the environment variable listing C-ABI delegate
// libraries to register, separated like PATH; each entry is PATH or
// NAME=PATH (the name defaults to the file name without "lib" and the
// extension: libacme_npu.so → acme_npu).
const LibrariesEnv = "SWITCHYARD_LIBRARIES"

// Backends is the set of backends found at startup: the linked-in ones
// (cpu, and every package that registers with hal.Default: import
// backends/all for native, xnnpack, vulkan and the loaders), plugin
// manifests on the plugin path (kind "process" or "library") and the C
// libraries of SWITCHYARD_LIBRARIES (these two need the loaders that
// backends/all links). Finding them
// loads nothing; a backend is opened when a model uses it. Its methods are
// safe for concurrent use.
type Backends struct {
	reg       *hal.Registry
	plugins   []Plugin
	problems  []error
	warnings  []Warning
	libraries map[string]library // by registry name
}

// Plugin is one plugin manifest found on the plugin path and what became
// of it.
type Plugin struct {
	Name, Kind, Version string
	HAL                 string // the manifest's HAL range
	Path                string // the binary or library
	Manifest            string // the manifest file
	SHA256              string // the binary's sha256 the manifest claims
	// Verified says the binary matches the manifest's sha256; otherwise
	// Verification says why not.
	Verified     bool
	Verification string
	// Err is why it was not registered (nil when it was).
	Err error
	// Insecure lists why other users could replace the manifest or its
	// binary, when it was loaded anyway (SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1).
	Insecure []string
}

// Warning is a problem discovery found that does not stop it: a plugin
// whose binary does not match its manifest, one loaded from an insecure
// path, a bad SWITCHYARD_LIBRARIES entry.
type Warning struct {
	Backend string // the backend concerned, "" when none
	// Insecure marks a plugin other users can replace, loaded anyway.
	Insecure bool
	Msg      string
}

func (w Warning) String() string { return w.Msg }

type library struct {
	path, name, sha256 string
}

// DiscoverOptions says where Discover looks. The zero value is the
// default: hal.Default, the standard plugin search path and
// SWITCHYARD_LIBRARIES.
type DiscoverOptions struct {
	// Registry receives the discovered backends (default hal.Default,
	// which holds the linked-in ones).
	Registry *hal.Registry
	// PluginPath are the directories searched for manifests (default
	// SWITCHYARD_PLUGIN_PATH, then the user and system plugin
	// directories). An empty non-nil slice searches nothing.
	PluginPath []string
	// Libraries lists C libraries as SWITCHYARD_LIBRARIES does (default:
	// that variable's value).
	Libraries *string
	// Extra factories to register first (e.g. a simulation backend).
	Extra []hal.Factory
	// Logger receives the logs of plugin processes (default: warnings and
	// up to stderr).
	Logger *slog.Logger
}

var (
	defaultOnce     sync.Once
	defaultBackends *Backends
)

// DefaultBackends discovers, once per process, the backends of hal.Default
// with the default DiscoverOptions, and returns that same set on every
// later call. Open and NewEngine use it unless OpenOptions.Backends is set.
func DefaultBackends() *Backends {
	defaultOnce.Do(func() { defaultBackends = Discover(nil) })
	return defaultBackends
}

// Discover registers the plugin manifests and C libraries found with the
// registry and returns the set, with every manifest refused and every
// problem said. A registry should be discovered once: registering the
// same plugin twice is refused (a Warning).
func Discover(opts *DiscoverOptions) *Backends {
	var o DiscoverOptions
	if opts != nil {
		o = *opts
	}
	if o.Registry == nil {
		o.Registry = hal.Default
	}
	if o.PluginPath == nil {
		o.PluginPath = manifest.SearchPath()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	b := &Backends{reg: o.Registry, libraries: map[string]library{}}
	for _, f := range o.Extra {
		if err := b.reg.Register(f); err != nil {
			b.warn(Warning{Backend: f.Info.Name, Msg: err.Error()})
		}
	}
	b.discoverPlugins(o)
	b.discoverLibraryPlugins(o)
	env := os.Getenv(LibrariesEnv)
	if o.Libraries != nil {
		env = *o.Libraries
	}
	b.registerLibraries(env)
	return b
}

func (b *Backends) warn(w Warning) { b.warnings = append(b.warnings, w) }

// discoverPlugins registers the process plugins (kind "process").
func (b *Backends) discoverPlugins(o DiscoverOptions) {
	loader := backends.Processes()
	if loader == nil {
		for _, m := range manifest.Discover(o.PluginPath).Manifests {
			if m.Kind != manifest.KindLibrary {
				err := fmt.Errorf("plugin %s (%s): no plugin-process loader is linked (import github.com/switchyard-hal/switchyard/backends/all)", m.Name, m.File)
				b.problems = append(b.problems, err)
				b.warn(Warning{Backend: m.Name, Msg: err.Error()})
			}
		}
		return
	}
	regs, problems := loader.RegisterProcesses(b.reg, o.PluginPath, o.Logger)
	b.problems = append(b.problems, problems...)
	for _, p := range problems {
		b.warn(Warning{Msg: p.Error()})
	}
	for _, r := range regs {
		m := r.Manifest
		b.plugins = append(b.plugins, Plugin{Name: m.Name, Kind: m.Kind, Version: m.Version, HAL: m.Range.String(), Path: m.Path, Manifest: m.File, SHA256: m.SHA256,
			Verified: r.Verification.OK, Verification: r.Verification.String(), Err: r.Err, Insecure: m.Insecure})
		switch {
		case r.Err != nil:
			b.warn(Warning{Backend: m.Name, Msg: fmt.Sprintf("plugin %s (%s): %v", m.Name, m.File, r.Err)})
		case !r.Verification.OK:
			// registered, so that listings show why, but it will never start
			b.warn(Warning{Backend: m.Name, Msg: fmt.Sprintf("plugin %s (%s) will not be started: %s", m.Name, m.File, r.Verification.Reason)})
		}
		for _, why := range m.Insecure {
			b.warn(Warning{Backend: m.Name, Insecure: true, Msg: fmt.Sprintf("plugin %s (%s) can be replaced by other users (%s), loaded anyway because %s is set", m.Name, m.File, why, sealed.EnvAllowInsecure)})
		}
	}
}

// discoverLibraryPlugins registers the manifests of kind "library": listed
// from the manifest without loading, the library's sha256 verified before
// it is opened, the HAL range checked before anything is loaded.
func (b *Backends) discoverLibraryPlugins(o DiscoverOptions) {
	loader := backends.Libraries()
	for _, m := range manifest.Discover(o.PluginPath).Manifests {
		if m.Kind != manifest.KindLibrary {
			continue
		}
		if loader == nil {
			err := fmt.Errorf("library plugin %s (%s): %w", m.Name, m.File, errNoLibraryLoader)
			b.problems = append(b.problems, err)
			b.warn(Warning{Backend: m.Name, Msg: err.Error()})
			continue
		}
		f := loader.Factory(m.Path, m.Name, m.SHA256)
		f.Info = m.Info()
		if err := b.reg.Register(f); err != nil {
			b.warn(Warning{Backend: m.Name, Msg: fmt.Sprintf("library plugin %s (%s): %v", m.Name, m.File, err)})
			continue
		}
		for _, why := range m.Insecure {
			b.warn(Warning{Backend: m.Name, Insecure: true, Msg: fmt.Sprintf("library plugin %s (%s) can be replaced by other users (%s), loaded anyway because %s is set", m.Name, m.File, why, sealed.EnvAllowInsecure)})
		}
		b.libraries[m.Name] = library{path: m.Path, name: m.Name, sha256: m.SHA256}
	}
}

// ParseLibraries parses a SWITCHYARD_LIBRARIES value into name → path
// pairs.
func ParseLibraries(env string) ([][2]string, error) {
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
			return nil, fmt.Errorf("%s: entry %q has no path", LibrariesEnv, e)
		}
		if name == "" {
			name = backends.LibraryName(path)
		}
		out = append(out, [2]string{name, path})
	}
	return out, nil
}

func (b *Backends) registerLibraries(env string) {
	entries, err := ParseLibraries(env)
	if err != nil {
		b.problems = append(b.problems, err)
		b.warn(Warning{Msg: err.Error()})
		return
	}
	loader := backends.Libraries()
	if loader == nil && len(entries) > 0 {
		err := fmt.Errorf("%s: %w", LibrariesEnv, errNoLibraryLoader)
		b.problems = append(b.problems, err)
		b.warn(Warning{Msg: err.Error()})
		return
	}
	for _, e := range entries {
		if err := b.reg.Register(loader.Factory(e[1], e[0], "")); err != nil {
			err = fmt.Errorf("%s: %w", LibrariesEnv, err)
			b.problems = append(b.problems, err)
			b.warn(Warning{Backend: e[0], Msg: err.Error()})
			continue
		}
		b.libraries[e[0]] = library{path: e[1], name: e[0]}
	}
}

// Registry is the registry the backends were registered with.
func (b *Backends) Registry() *hal.Registry { return b.reg }

// Plugins lists the plugin manifests of kind "process" found, and what
// became of each.
func (b *Backends) Plugins() []Plugin { return append([]Plugin(nil), b.plugins...) }

// Problems lists the manifests refused (a bad field, a path other users
// can replace) and the C library entries that could not be registered.
func (b *Backends) Problems() []error { return append([]error(nil), b.problems...) }

// Warnings lists everything discovery has to say: Problems, plugins that
// will not start, plugins loaded from insecure paths.
func (b *Backends) Warnings() []Warning { return append([]Warning(nil), b.warnings...) }

// SearchPath is the plugin search path used by default: the directories of
// SWITCHYARD_PLUGIN_PATH, then the user and system plugin directories.
func SearchPath() []string { return manifest.SearchPath() }

// IsLibrary says whether name is a registered C library (opened in this
// process by dlopen, and probed in a child process by Probe).
func (b *Backends) IsLibrary(name string) bool {
	_, ok := b.libraries[name]
	return ok
}

// DefaultOrder is the backend selection when none is named: every
// registered non-simulated backend except cpu and the opt-in ones
// (hal.Factory.OptIn, e.g. vulkan), by name,
// with native (the portable Go kernels) behind every vendor backend.
// The fallback (cpu) takes the rest.
func (b *Backends) DefaultOrder() []string {
	var names []string
	for _, e := range b.reg.List() {
		if e.Info.Device != hal.DeviceSimulated && e.Info.Name != CPU && !e.OptIn {
			names = append(names, e.Info.Name)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return names[i] != nativeBackend && names[j] == nativeBackend })
	return names
}

// Probe opens every registered backend in turn and says which are
// available, and why not. C libraries are probed in a child process
// (cabi.Probe), so a library whose constructor exits or crashes is listed
// with how its process ended and the listing goes on. The program must
// call ServeProbe at the start of main (or in an init func) for that.
func (b *Backends) Probe(ctx context.Context) []hal.Availability {
	var out []hal.Availability
	for _, e := range b.reg.List() {
		if lib, ok := b.libraries[e.Info.Name]; ok {
			out = append(out, probeLibrary(ctx, e, lib))
			continue
		}
		out = append(out, b.reg.ProbeEntry(ctx, e))
	}
	return out
}

// probeOne probes the registered C library of that name in a child
// process.
func (b *Backends) probeOne(ctx context.Context, name string) hal.Availability {
	for _, e := range b.reg.List() {
		if e.Info.Name == name {
			if lib, ok := b.libraries[name]; ok {
				return probeLibrary(ctx, e, lib)
			}
		}
	}
	return hal.Availability{Reason: fmt.Sprintf("%s is not a registered C library", name)}
}

// ServeProbe makes this process a library probe when it was started as
// one by Probe (it then probes and exits); otherwise it returns at once.
// Call it first thing in main, or in an init func, of a program that
// probes C libraries.
func ServeProbe() {
	if l := backends.Libraries(); l != nil {
		l.ServeProbe()
	}
}

var errNoLibraryLoader = fmt.Errorf("%w: no C-library loader is linked (import github.com/switchyard-hal/switchyard/backends/all)", ErrUnavailable)

// probeLibrary probes a registered library in a child process and turns
// the result into the registry's availability record.
func probeLibrary(ctx context.Context, e hal.Entry, lib library) hal.Availability {
	a := hal.Availability{Entry: e}
	if e.Info.HAL != (hal.VersionRange{}) {
		if _, err := hal.Negotiate(hal.Current, e.Info.HAL); err != nil {
			a.Reason = err.Error()
			return a
		}
	}
	loader := backends.Libraries()
	if loader == nil {
		a.Reason = errNoLibraryLoader.Error()
		return a
	}
	r := loader.Probe(ctx, lib.path, lib.name, lib.sha256)
	if err := r.Err(); err != nil {
		a.Reason = (&hal.Error{Code: hal.CodeOf(err), Backend: e.Info.Name, Op: "open", Msg: r.Error}).Error()
		if he, ok := err.(*hal.Error); ok {
			a.Reason = (&hal.Error{Code: he.Code, Backend: e.Info.Name, Op: "open", Msg: he.Msg}).Error()
		}
		return a
	}
	a.Available, a.Features = true, r.Features
	if r.Capabilities != nil {
		a.Devices = r.Capabilities.Devices
	}
	if r.Info != nil {
		a.Info = *r.Info
	}
	var v hal.Version
	if _, err := fmt.Sscanf(r.Negotiated, "%d.%d", &v.Major, &v.Minor); err == nil {
		a.HALVersion = v
	}
	return a
}

// LibraryReport is what InspectLibrary learns of a C delegate library:
// its info, the HAL version negotiated, its capabilities and the sha256 of
// the bytes loaded, or exactly why it is refused (and, for a library that
// exits or crashes while loading in a child process, how and at which
// step). Its fields are those of the loaders' report (package backends).
type LibraryReport struct {
	backends.LibraryReport
}

// InspectLibrary loads the C delegate library at path and describes it.
// By default it loads it in a child process (this program, which must call
// ServeProbe first thing in main), so a library that calls exit() or
// crashes is reported instead of ending the program; inProcess loads it
// into this process instead. The library is closed before it returns. It
// needs the C-library loader (backends/all links it).
func InspectLibrary(ctx context.Context, path string, inProcess bool) LibraryReport {
	loader := backends.Libraries()
	if loader == nil {
		return LibraryReport{backends.LibraryReport{Path: path, Error: errNoLibraryLoader.Error(), Code: hal.CodeUnavailable.String()}}
	}
	if inProcess {
		return LibraryReport{loader.Inspect(ctx, path)}
	}
	return LibraryReport{loader.Probe(ctx, path, "", "")}
}
