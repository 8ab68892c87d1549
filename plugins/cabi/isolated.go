package cabi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/switchyard-hal/switchyard/hal"
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
func OpenIsolated(ctx context.Context, libPath string, opts IsolatedOptions) (hal.Backend, error) {
	if opts.HostPath == "" {
		return nil, libErr(hal.CodeInvalidArgument, libPath, "isolated loading needs the path of the switchyard-cabi-host binary")
	}
	abs, err := filepath.Abs(libPath)
	if err != nil {
		return nil, libErr(hal.CodeInvalidArgument, libPath, "%v", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, libErr(hal.CodeUnavailable, libPath, "%v", err)
	}
	name := opts.Name
	if name == "" {
		name = NameFromPath(abs)
	}
	sum := opts.HostSHA256
	if sum == "" {
		if sum, err = fileSHA256(opts.HostPath); err != nil {
			return nil, libErr(hal.CodeUnavailable, libPath, "isolation host: %v", err)
		}
	}
	env := []string{"SWITCHYARD_CABI_LIBRARY=" + abs, "SWITCHYARD_CABI_NAME=" + name}
	if opts.SHA256 != "" {
		env = append(env, "SWITCHYARD_CABI_SHA256="+opts.SHA256)
	}
	return grpcplugin.Open(ctx, grpcplugin.Options{Name: name, Path: opts.HostPath, Env: env, SHA256: sum, Restart: opts.Restart, Logger: opts.Logger})
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
