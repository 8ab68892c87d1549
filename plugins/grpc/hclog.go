package grpcplugin

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/switchyard-hal/switchyard/hal/wire"
)

// slogAdapter is an hclog.Logger that writes into a log/slog logger, so
// go-plugin's messages and the plugin's own log lines (which go-plugin
// parses from the plugin's stderr) land in the host's slog. What a plugin
// logs is bounded: each message and value is cut at wire.MaxErrorMessage,
// and records beyond a rate (logBurst, then logRate per second) are
// dropped and counted; the count is logged with the next record that
// passes.
type slogAdapter struct {
	l     *slog.Logger
	name  string
	level hclog.Level
	args  []any
	limit *logLimiter // shared by every copy (With, Named)
}

func newSlogAdapter(l *slog.Logger, name string) hclog.Logger {
	return &slogAdapter{l: l, name: name, level: hclog.Info, limit: &logLimiter{tokens: logBurst}}
}

const (
	logBurst = 2000 // records a plugin may log at once
	logRate  = 500  // records per second after the burst
)

// logLimiter is a token bucket over a plugin's log records.
type logLimiter struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int64
}

// take reports whether a record may pass and how many were dropped since
// the last one that did.
func (l *logLimiter) take() (ok bool, dropped int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(logBurst, l.tokens+now.Sub(l.last).Seconds()*logRate)
	}
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return false, 0
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// bound cuts a logged value to wire.MaxErrorMessage.
func bound(v any) any {
	switch x := v.(type) {
	case nil, bool, int, int64, uint64, float64, time.Duration, time.Time:
		return v
	case string:
		return wire.TruncateMessage(x)
	case error:
		return wire.TruncateMessage(x.Error())
	}
	return wire.TruncateMessage(fmt.Sprint(v))
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
	if level == hclog.Off || level < a.level && level != hclog.NoLevel || !a.l.Enabled(context.Background(), slogLevel(level)) {
		return
	}
	ok, dropped := a.limit.take()
	if !ok {
		return
	}
	if dropped > 0 {
		a.l.Warn("plugin log records dropped (over the rate limit)", "plugin", a.name, "dropped", dropped, "burst", logBurst, "per_second", logRate)
	}
	all := append([]any{"plugin", a.name}, a.args...)
	for i := 0; i+1 < len(args); i += 2 {
		k, _ := args[i].(string)
		if k == "timestamp" {
			continue // go-plugin's parse of the plugin's line; slog stamps its own
		}
		all = append(all, wire.TruncateMessage(k), bound(args[i+1]))
	}
	a.l.Log(context.Background(), slogLevel(level), wire.TruncateMessage(msg), all...)
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
