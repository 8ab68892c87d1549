package cabi

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/sealed"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

// IsolatedOptions configure OpenIsolated.
type IsolatedOptions struct {
	// Options (Name, SHA256) apply to the library, as for Open.
	Options
	// HostPath is the switchyard-cabi-host binary (go build ./sdk/c/host).
	HostPath string
	// HostSHA256 is the host binary's expected sha256; empty trusts the
	// binary as it is now (its hash is taken here and checked at every
	// start and restart).
	HostSHA256 string
	// Restart is the plugin supervision policy (default: restart with backoff).
	Restart grpcplugin.RestartPolicy
	// Logger receives the host process's logs (default slog.Default()).
	Logger *slog.Logger
}

// OpenIsolated loads a C delegate library inside its own process (the
// switchyard-cabi-host binary serving it over the plugin protocol) instead
// of the application's. A delegate that crashes — a NULL dereference in
// execute — then fails the calls in flight with Unavailable while the
// application keeps running; the runtime's OnUnavailable policy decides
// whether later Runs fail or re-place the partitions on cpu.
//
// What the host runs is what was verified: the host binary is started from
// a sealed copy (plugins/grpc), and the library is hashed here from a
// sealed copy and loaded by the host from its own sealed copy only when
// that hash matches (a file swapped in between is refused with a checksum
// mismatch, at start and at every restart).
func OpenIsolated(ctx context.Context, libPath string, opts IsolatedOptions) (hal.Backend, error) {
	if opts.HostPath == "" {
		return nil, libErr(hal.CodeInvalidArgument, libPath, "isolated loading needs the path of the switchyard-cabi-host binary")
	}
	abs, err := filepath.Abs(libPath)
	if err != nil {
		return nil, libErr(hal.CodeInvalidArgument, libPath, "%v", err)
	}
	// the library is verified here as Open would (permissions, sealed copy,
	// checksum) and the host is told the checksum of that copy: it loads
	// its own sealed copy only if the bytes are the same
	if err := sealed.CheckPath(abs); err != nil && !sealed.InsecureAllowed() {
		return nil, libErr(hal.CodeFailedPrecondition, libPath, "other users can replace it: %v; %s", err, sealed.Hint())
	}
	lib, err := sealed.Open(abs)
	if err != nil {
		return nil, libErr(hal.CodeUnavailable, libPath, "cannot load: %v", err)
	}
	libSum := lib.SHA256
	lib.Close()
	if opts.SHA256 != "" && !strings.EqualFold(opts.SHA256, libSum) {
		return nil, libErr(hal.CodeFailedPrecondition, libPath, "checksum mismatch: expected sha256 %s, the file has %s", strings.ToLower(opts.SHA256), libSum)
	}
	name := opts.Name
	if name == "" {
		name = NameFromPath(abs)
	}
	sum := opts.HostSHA256
	if sum == "" {
		if sum, err = sealed.HashFile(opts.HostPath, 0); err != nil {
			return nil, libErr(hal.CodeUnavailable, libPath, "isolation host: %v", err)
		}
	}
	env := []string{"SWITCHYARD_CABI_LIBRARY=" + abs, "SWITCHYARD_CABI_NAME=" + name, "SWITCHYARD_CABI_SHA256=" + libSum}
	b, err := grpcplugin.Open(ctx, grpcplugin.Options{Name: name, Path: opts.HostPath, Env: env, SHA256: sum, Restart: opts.Restart, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	// with device memory when the host serves it (a HAL 1.1 library)
	return b.HAL(), nil
}
