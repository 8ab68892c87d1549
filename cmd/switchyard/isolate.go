package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/switchyard-hal/switchyard/serve"
)

// serveIsolated is `serve --isolate`: this process listens on addr and
// forwards every request to a worker process (this binary's `serve` with
// the same models and flags, on a private Unix socket), restarting the
// worker whenever it dies.
func serveIsolated(ctx context.Context, cmd *cobra.Command, models []string, addr string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var flags []string
	visit := func(f *pflag.Flag) {
		switch f.Name {
		case "isolate", "addr", "unix":
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				flags = append(flags, "--"+f.Name+"="+v)
			}
			return
		}
		flags = append(flags, "--"+f.Name+"="+f.Value.String())
	}
	cmd.Flags().Visit(visit)
	cmd.InheritedFlags().Visit(visit)
	stderr := cmd.ErrOrStderr()
	iso, err := serve.NewIsolated(serve.IsolateOptions{
		Command: func(sock string) *exec.Cmd {
			args := append([]string{"serve"}, models...)
			args = append(append(args, flags...), "--unix="+sock)
			c := exec.Command(self, args...)
			c.Stdout, c.Stderr = stderr, stderr
			return c
		},
		Log: stderr,
	})
	if err != nil {
		return err
	}
	defer iso.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: iso, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "listening on http://%s; the models run in a worker process, restarted if it dies (/health answers 503 until it is ready)\n", ln.Addr())
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "shutting down")
	case <-iso.Failed():
		err = iso.Err()
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	return err
}
