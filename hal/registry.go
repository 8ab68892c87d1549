package hal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory registers a backend. Info and Kind are static and cheap: listing
// backends never loads a library or starts a process. Open does the
// expensive part and returns an *Error with CodeUnavailable (and the
// reason) when the library, device or binary is missing.
type Factory struct {
	Info Info
	Kind LoadKind
	Open func(ctx context.Context) (Backend, error)
	// OptIn keeps the backend out of default selections: it is listed and
	// opened when named (e.g. vulkan, whose lavapipe is a CPU device).
	OptIn bool
}

// Entry is what List shows about a registered backend.
type Entry struct {
	Info  Info
	Kind  LoadKind
	OptIn bool
}

// Registry holds backend factories. The zero value is not usable; call
// NewRegistry. Methods are safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Default is the process-wide registry linked-in backends register with.
var Default = NewRegistry()

// Register adds a factory. It refuses an empty name, a nil Open and a
// duplicate name (it never overwrites).
func (r *Registry) Register(f Factory) error {
	name := f.Info.Name
	if strings.TrimSpace(name) == "" {
		return &Error{Code: CodeInvalidArgument, Op: "register", Msg: "backend name is empty"}
	}
	if f.Open == nil {
		return &Error{Code: CodeInvalidArgument, Backend: name, Op: "register", Msg: fmt.Sprintf("backend %q has a nil Open function", name)}
	}
	if f.Kind == "" {
		f.Kind = LoadLinked
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		return &Error{Code: CodeInvalidArgument, Backend: name, Op: "register", Msg: fmt.Sprintf("backend %q is already registered", name)}
	}
	r.factories[name] = f
	return nil
}

// Register adds a factory to the Default registry.
func Register(f Factory) error { return Default.Register(f) }

// List returns every registered backend, sorted by name. It loads nothing.
func (r *Registry) List() []Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Entry, 0, len(r.factories))
	for _, f := range r.factories {
		out = append(out, Entry{Info: f.Info, Kind: f.Kind, OptIn: f.OptIn})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Info.Name < out[j].Info.Name })
	return out
}

// Names lists registered backend names, sorted.
func (r *Registry) Names() []string {
	var names []string
	for _, e := range r.List() {
		names = append(names, e.Info.Name)
	}
	return names
}

// Open opens a backend by name and negotiates the HAL version, first with
// the factory's declared range (before anything is loaded), then with what
// the opened backend reports. An incompatible backend is closed and refused
// with both versions named.
func (r *Registry) Open(ctx context.Context, name string) (*Device, error) {
	r.mu.RLock()
	f, ok := r.factories[name]
	r.mu.RUnlock()
	if !ok {
		known := r.Names()
		return nil, &Error{Code: CodeInvalidArgument, Backend: name, Op: "open", Msg: fmt.Sprintf("unknown backend %q (forgotten import or plugin manifest?); known: %s", name, strings.Join(known, ", "))}
	}
	if f.Info.HAL != (VersionRange{}) {
		if _, err := Negotiate(Current, f.Info.HAL); err != nil {
			return nil, wrap(name, "open", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(name, "open", err)
	}
	var b Backend
	err := guard(func() (err error) { b, err = f.Open(ctx); return })
	if err != nil {
		return nil, wrap(name, "open", err)
	}
	if b == nil {
		return nil, &Error{Code: CodeInternal, Backend: name, Op: "open", Msg: "factory returned a nil backend"}
	}
	d, err := NewDevice(b, f.Kind)
	if err != nil {
		return nil, wrap(name, "open", err)
	}
	if d.info.Name != name {
		_ = d.Close()
		return nil, &Error{Code: CodeInternal, Backend: name, Op: "open", Msg: fmt.Sprintf("backend registered as %q calls itself %q", name, d.info.Name)}
	}
	return d, nil
}

// Availability is the result of probing a backend.
type Availability struct {
	Entry
	Available  bool
	Reason     string   // why not, when unavailable
	HALVersion Version  // negotiated, when available
	Features   []string // optional interfaces
	// Devices are the devices the backend lists in its capabilities
	// (HAL 1.1), when available; empty for one device described by Info.
	Devices []DeviceDesc
}

// Probe opens and closes each backend to report whether it is available
// and why not. It is the expensive counterpart of List.
func (r *Registry) Probe(ctx context.Context) []Availability {
	var out []Availability
	for _, e := range r.List() {
		out = append(out, r.ProbeEntry(ctx, e))
	}
	return out
}

// ProbeEntry opens and closes the registered backend of entry e to report
// whether it is available and why not.
func (r *Registry) ProbeEntry(ctx context.Context, e Entry) Availability {
	a := Availability{Entry: e}
	d, err := r.Open(ctx, e.Info.Name)
	if err != nil {
		a.Reason = err.Error()
		return a
	}
	a.Available, a.HALVersion, a.Features = true, d.HALVersion(), d.Features()
	a.Info = d.Info()
	if caps, err := d.Capabilities(ctx); err == nil {
		a.Devices = caps.Devices
	}
	_ = d.Close()
	return a
}
