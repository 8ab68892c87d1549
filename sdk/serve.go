// Package sdk is what a vendor uses to ship a Go hal.Backend as a
// Switchyard plugin process: one call in main,
//
//	func main() { sdk.Serve(mybackend.New(), nil) }
//
// builds a binary that a Switchyard host starts, verifies (sha256 from the
// plugin's manifest), negotiates with (go-plugin protocol version and HAL
// version), talks to over gRPC with mutual TLS, and shares tensors with
// through shared memory. Write a manifest next to the binary (see
// hal/manifest.Manifest) and put its directory on SWITCHYARD_PLUGIN_PATH.
//
// Contracts Serve keeps for the vendor:
//   - The backend sees plain hal calls with tensors in its own address
//     space (inputs are read-only views of shared memory valid for the
//     duration of Execute; outputs it fills are copied out by the host).
//   - A backend panic becomes an Internal error for that call; the process
//     keeps serving.
//   - The process exits when the host goes away (its descriptor channel
//     closes), so a crashed host never leaves a plugin behind.
//   - Logs written to Logger() reach the host's log/slog, tagged with the
//     plugin's name.
//
// sdk/skeleton is a backend to start from; sdk/examples/simplugin serves
// the simulation backend and is the worked example.
package sdk

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
)

// Options tune Serve. A nil *Options means defaults.
type Options struct {
	// Logger receives the SDK's own messages; default Logger().
	Logger *slog.Logger
}

var (
	stderrOnce sync.Once
	stderr     io.Writer
	logger     *slog.Logger
)

// Logger returns a logger whose records reach the host's log/slog (as
// hclog JSON lines on the plugin's original stderr, which go-plugin
// forwards). Call it before or after Serve; it is safe for concurrent use.
func Logger() *slog.Logger {
	stderrOnce.Do(func() {
		stderr = os.Stderr // captured before go-plugin redirects os.Stderr
		logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{
			Level: slog.LevelDebug,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if len(groups) > 0 {
					return a
				}
				switch a.Key {
				case slog.TimeKey:
					return slog.Attr{} // the host stamps its own time
				case slog.MessageKey:
					a.Key = "@message"
				case slog.LevelKey:
					a.Key = "@level"
					lv, _ := a.Value.Any().(slog.Level)
					switch {
					case lv < slog.LevelInfo:
						a.Value = slog.StringValue("debug")
					case lv < slog.LevelWarn:
						a.Value = slog.StringValue("info")
					case lv < slog.LevelError:
						a.Value = slog.StringValue("warn")
					default:
						a.Value = slog.StringValue("error")
					}
				}
				return a
			},
		}))
	})
	return logger
}

// Serve serves b as a plugin process and does not return: the process
// exits when the host disconnects or goes away. It must be the only thing
// main does after constructing the backend. Run by hand (not by a
// Switchyard host), it prints what the binary is and exits with status 1.
func Serve(b hal.Backend, opts *Options) {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = Logger() // also captures the original stderr
	} else {
		Logger()
	}
	if b == nil {
		fmt.Fprintln(os.Stderr, "sdk: Serve was given a nil backend")
		os.Exit(1)
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) != wire.Handshake.MagicCookieValue {
		info := b.Info()
		fmt.Fprintf(os.Stderr, "This is the Switchyard plugin %q (%s %s, HAL %s).\nIt is started by a Switchyard host through its manifest, not run directly.\n", info.Name, info.Vendor, info.Version, info.HAL)
		os.Exit(1)
	}
	var fds *wire.FDChannel
	if s := os.Getenv(wire.EnvFDChannel); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 3 {
			fmt.Fprintf(os.Stderr, "sdk: %s=%q is not a descriptor number\n", wire.EnvFDChannel, s)
			os.Exit(1)
		}
		fds, err = wire.NewFDChannel(os.NewFile(uintptr(n), "switchyard-fdchan"), wire.PluginSide)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sdk: %v\n", err)
			os.Exit(1)
		}
		go func() {
			<-fds.Done()
			log.Warn("host went away; plugin exiting")
			os.Exit(0)
		}()
	} else {
		log.Warn("no descriptor channel from the host: shared-memory calls will fail")
	}
	srv := newServer(b, fds, log)
	if s := os.Getenv(wire.EnvDoorbell); s != "" {
		// the fast path for Execute (see wire.Doorbell); when it ends the
		// host uses gRPC
		if n, err := strconv.Atoi(s); err == nil && n > 2 {
			go func() {
				if err := wire.ServeDoorbell(os.NewFile(uintptr(n), "switchyard-doorbell"), srv.Execute); err != nil && !errors.Is(err, io.EOF) {
					log.Debug("doorbell closed", "err", err)
				}
			}()
		}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(srv),
		GRPCServer: func(o []grpc.ServerOption) *grpc.Server {
			o = append(o, grpc.MaxRecvMsgSize(wire.MaxMessageBytes), grpc.MaxSendMsgSize(wire.MaxMessageBytes))
			return grpc.NewServer(o...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: strings.TrimSpace(b.Info().Name), Output: stderr, Level: hclog.Info, JSONFormat: true}),
	})
	srv.close()
	_ = b.Close()
	os.Exit(0)
}
