// Package backends is where the loaders of backends that live outside the
// binary join discovery: the plugin-process loader (plugins/grpc) and the
// C-library loader (plugins/cabi) register themselves here when linked, as
// database/sql drivers do, and the app API (package switchyard) asks for
// them at discovery. Linked-in backends register with hal.Default instead.
//
// An app links the backends it wants with one import:
//
//	import _ "github.com/switchyard-hal/switchyard/backends/all"
//
// which links every in-tree backend and both loaders. Without it, the app
// API links only the reference kernels (cpu), and plugin manifests or
// SWITCHYARD_LIBRARIES entries are reported as needing a loader that is
// not linked.
package backends

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
)

// ProcessPlugin is one manifest of kind "process" a ProcessLoader found,
// and what became of it.
type ProcessPlugin struct {
	Manifest     *manifest.Manifest
	Verification manifest.Verification
	// Err is why it was not registered (nil when it was).
	Err error
}

// ProcessLoader registers the plugin processes whose manifests are found
// in dirs with a registry (plugins/grpc implements it).
type ProcessLoader interface {
	RegisterProcesses(r *hal.Registry, dirs []string, logger *slog.Logger) ([]ProcessPlugin, []error)
}

// LibraryReport is what a LibraryLoader learns of a C delegate library:
// its info, the HAL version negotiated, its capabilities and the sha256 of
// the bytes loaded, or exactly why it is refused.
type LibraryReport struct {
	Path   string `json:"path"`
	Loaded bool   `json:"loaded"`
	// Error is why the library is not usable; Code its hal code name.
	Error string `json:"error,omitempty"`
	Code  string `json:"code,omitempty"`
	// Died says how the probe process ended when it did not report (exit
	// status, signal or timeout) and Step what it was doing then; Output
	// is the end of what it wrote.
	Died   string `json:"died,omitempty"`
	Step   string `json:"step,omitempty"`
	Output string `json:"output,omitempty"`

	Info         *hal.Info         `json:"info,omitempty"`
	Negotiated   string            `json:"negotiated_hal,omitempty"`
	Features     []string          `json:"features,omitempty"`
	SHA256       string            `json:"sha256,omitempty"`
	Capabilities *hal.Capabilities `json:"capabilities,omitempty"`

	// FailCode and FailMsg are the failure's HAL code and message, as the
	// loader classified it (Err builds the *hal.Error from them).
	FailCode hal.Code `json:"-"`
	FailMsg  string   `json:"-"`
}

// Err is the failure as a *hal.Error (nil when the library loaded).
func (r *LibraryReport) Err() error {
	if r.Loaded && r.Error == "" {
		return nil
	}
	code, msg := r.FailCode, r.FailMsg
	if code == 0 {
		code = hal.CodeUnavailable
	}
	if msg == "" {
		msg = r.Error
	}
	return &hal.Error{Code: code, Op: "open", Msg: msg}
}

// LibraryLoader opens C delegate libraries (plugins/cabi implements it).
type LibraryLoader interface {
	// Factory is the registry entry of the library at path, registered
	// as name; sha256, when set, must match the library's bytes.
	Factory(path, name, sha256 string) hal.Factory
	// Probe loads the library in a child process (this executable, which
	// must call ServeProbe first) and reports what it is.
	Probe(ctx context.Context, path, name, sha256 string) LibraryReport
	// Inspect loads the library into this process, reports, and closes it.
	Inspect(ctx context.Context, path string) LibraryReport
	// ServeProbe makes this process a probe when Probe started it (it then
	// probes and exits); otherwise it returns at once.
	ServeProbe()
}

var (
	mu      sync.RWMutex
	process ProcessLoader
	library LibraryLoader
)

// RegisterProcessLoader makes l the plugin-process loader (called from the
// loader package's init).
func RegisterProcessLoader(l ProcessLoader) {
	mu.Lock()
	defer mu.Unlock()
	process = l
}

// RegisterLibraryLoader makes l the C-library loader (called from the
// loader package's init).
func RegisterLibraryLoader(l LibraryLoader) {
	mu.Lock()
	defer mu.Unlock()
	library = l
}

// Processes is the linked plugin-process loader, nil when none is linked.
func Processes() ProcessLoader {
	mu.RLock()
	defer mu.RUnlock()
	return process
}

// Libraries is the linked C-library loader, nil when none is linked.
func Libraries() LibraryLoader {
	mu.RLock()
	defer mu.RUnlock()
	return library
}

// LibraryName is the registry name of a C library by default: the file
// name without "lib" and the extension (libacme_npu.so.1 → acme_npu).
func LibraryName(path string) string {
	base := filepath.Base(path)
	base = strings.TrimPrefix(base, "lib")
	if i := strings.Index(base, ".so"); i > 0 {
		base = base[:i]
	}
	base = strings.TrimSuffix(base, ".dylib")
	base = strings.TrimSuffix(base, ".dll")
	return base
}
