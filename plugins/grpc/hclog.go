package grpcplugin

import (
	"context"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// slogAdapter is an hclog.Logger that writes into a log/slog logger, so
// go-plugin's messages and the plugin's own log lines (which go-plugin
// parses from the plugin's stderr) land in the host's slog.
type slogAdapter struct {
	l     *slog.Logger
	name  string
	level hclog.Level
	args  []any
}

func newSlogAdapter(l *slog.Logger, name string) hclog.Logger {
	return &slogAdapter{l: l, name: name, level: hclog.Info}
}

var _ hclog.Logger = (*slogAdapter)(nil)

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *slogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off || level < a.level && level != hclog.NoLevel {
		return
	}
	all := append([]any{"plugin", a.name}, a.args...)
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "timestamp" {
			continue // go-plugin's parse of the plugin's line; slog stamps its own
		}
		all = append(all, args[i], args[i+1])
	}
	a.l.Log(context.Background(), slogLevel(level), msg, all...)
}

func (a *slogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *slogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *slogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *slogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *slogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *slogAdapter) IsTrace() bool { return a.level <= hclog.Trace }
func (a *slogAdapter) IsDebug() bool { return a.level <= hclog.Debug }
func (a *slogAdapter) IsInfo() bool  { return a.level <= hclog.Info }
func (a *slogAdapter) IsWarn() bool  { return a.level <= hclog.Warn }
func (a *slogAdapter) IsError() bool { return a.level <= hclog.Error }

func (a *slogAdapter) ImpliedArgs() []any { return a.args }

func (a *slogAdapter) With(args ...any) hclog.Logger {
	c := *a
	c.args = append(append([]any{}, a.args...), args...)
	return &c
}

func (a *slogAdapter) Name() string { return a.name }

func (a *slogAdapter) Named(name string) hclog.Logger {
	c := *a
	if c.name != "" && !strings.HasSuffix(c.name, "."+name) && c.name != name {
		c.name += "." + name
	} else if c.name == "" {
		c.name = name
	}
	return &c
}

func (a *slogAdapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	return &c
}

func (a *slogAdapter) SetLevel(level hclog.Level) { a.level = level }
func (a *slogAdapter) GetLevel() hclog.Level      { return a.level }

func (a *slogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

func (a *slogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		a.Info(strings.TrimRight(string(p), "\n"))
		return len(p), nil
	})
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
