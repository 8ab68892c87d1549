package cabi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/switchyard-hal/switchyard/backends"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
)

// Probing a library in a separate process. Loading a C library runs its
// code before any of Switchyard's (ELF constructors), and that code may
// call exit(), crash or hang; listing the libraries a machine has must not
// end the listing tool. Probe starts a child process (by default this very
// executable), which loads the library with Open, reports what it found
// over a pipe and exits; a child that dies or hangs is reported with how it
// ended and at which step.

const (
	envProbe       = "SWITCHYARD_CABI_PROBE"
	envProbeName   = "SWITCHYARD_CABI_PROBE_NAME"
	envProbeSHA256 = "SWITCHYARD_CABI_PROBE_SHA256"
	probeFD        = 3 // the child's report pipe (cmd.ExtraFiles[0])

	maxProbeReport = 4 << 20
	maxProbeOutput = 2048
)

// ProbeOptions configure Probe.
type ProbeOptions struct {
	// Options (Name, SHA256) apply to the library, as for Open.
	Options
	// Command is the program (and arguments) that probes: a program that
	// calls ServeProbe first thing when started with the probe
	// environment. Default: this executable (/proc/self/exe on Linux),
	// which must then call ServeProbe — the switchyard command does, in an
	// init function.
	Command []string
	// Timeout bounds the whole probe (default 30 s): a library that hangs
	// while loading is killed and reported.
	Timeout time.Duration
}

// ProbeResult is what probing a library found: the report discovery
// shares with the app API (package backends).
type ProbeResult = backends.LibraryReport

// probeLine is one line of the child's report.
type probeLine struct {
	Step   string       `json:"step,omitempty"`
	Result *ProbeResult `json:"result,omitempty"`
	Code   hal.Code     `json:"code,omitempty"`
	Msg    string       `json:"msg,omitempty"`
}

// Probe loads the library at path in a separate process and reports what
// it is, or why it is refused, or how the process died trying. It never
// loads anything into this process.
func Probe(ctx context.Context, path string, opts ProbeOptions) ProbeResult {
	res := ProbeResult{Path: path}
	fail := func(code hal.Code, format string, args ...any) ProbeResult {
		err := libErr(code, path, format, args...).(*hal.Error)
		res.Error, res.Code, res.FailCode, res.FailMsg = err.Error(), code.String(), code, err.Msg
		return res
	}
	if !supported {
		_, err := dlopen(path)
		return fail(hal.CodeUnavailable, "%v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fail(hal.CodeInvalidArgument, "%v", err)
	}
	argv := opts.Command
	if len(argv) == 0 {
		exe := "/proc/self/exe" // this very binary, whatever its path now names
		if runtime.GOOS != "linux" {
			if exe, err = os.Executable(); err != nil {
				return fail(hal.CodeUnavailable, "cannot find this executable to probe the library with: %v", err)
			}
		}
		argv = []string{exe}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, w, err := os.Pipe()
	if err != nil {
		return fail(hal.CodeUnavailable, "probe pipe: %v", err)
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), envProbe+"="+abs, envProbeName+"="+opts.Name, envProbeSHA256+"="+opts.SHA256)
	cmd.ExtraFiles = []*os.File{w}
	out := &tailBuffer{max: maxProbeOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	cmd.SysProcAttr = probeProcAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		return fail(hal.CodeUnavailable, "starting the probe process %s: %v", argv[0], err)
	}
	w.Close()

	var (
		step   = "starting"
		result *ProbeResult
		line   probeLine
	)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxProbeReport)
		for sc.Scan() {
			line = probeLine{}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line.Step != "" {
				step = line.Step
			}
			if line.Result != nil {
				result = line.Result
				result.FailCode, result.FailMsg = line.Code, line.Msg
			}
		}
	}()
	werr := cmd.Wait()
	// a grandchild holding the pipe open must not keep us waiting
	_ = r.SetReadDeadline(time.Now().Add(time.Second))
	<-read
	if result != nil {
		result.Path = path
		return *result
	}
	died := "exited"
	if cmd.ProcessState != nil {
		died = cmd.ProcessState.String()
	}
	if ctx.Err() != nil {
		died = fmt.Sprintf("was killed after the %v probe timeout", timeout)
	} else if werr != nil && cmd.ProcessState == nil {
		died = werr.Error()
	}
	res.Died, res.Step, res.Output = died, step, out.String()
	msg := fmt.Sprintf("probed in a separate process, which ended (%s) while %s; the library is not usable", died, step)
	if res.Output != "" {
		msg += fmt.Sprintf(" (its last output: %q)", res.Output)
	}
	return fail(hal.CodeUnavailable, "%s", msg)
}

// ServeProbe runs the probe when this process was started by Probe (its
// environment names a library) and then exits; otherwise it returns at
// once. Call it first thing in main, or in an init function, of any
// program used as ProbeOptions.Command (the switchyard command does).
func ServeProbe() {
	lib := os.Getenv(envProbe)
	if lib == "" {
		return
	}
	report := os.NewFile(probeFD, "probe-report")
	if report == nil {
		fmt.Fprintln(os.Stderr, "cabi: probe: no report descriptor")
		os.Exit(2)
	}
	enc := json.NewEncoder(report)
	step := func(s string) { _ = enc.Encode(probeLine{Step: s}) }
	res := ProbeResult{Path: lib}
	ctx := context.Background()
	step("loading the library (dlopen runs its constructors) and calling " + entryPoint)
	b, err := Open(ctx, lib, Options{Name: os.Getenv(envProbeName), SHA256: os.Getenv(envProbeSHA256)})
	if err == nil {
		info := b.Info()
		res.Loaded, res.Info, res.Negotiated, res.SHA256 = true, &info, b.HALVersion().String(), b.SHA256()
		step("asking the library for its capabilities")
		if caps, cerr := b.Capabilities(ctx); cerr == nil {
			res.Capabilities = &caps
		} else {
			err = cerr
		}
		if d, derr := hal.NewDevice(b.HAL(), hal.LoadLibrary); derr == nil {
			res.Features = d.Features()
		}
		step("closing the library (its close function and destructors run)")
		_ = b.Close()
	}
	line := probeLine{Result: &res}
	if err != nil {
		res.Error = err.Error()
		line.Code = hal.CodeOf(err)
		res.Code = line.Code.String()
		var he *hal.Error
		if errors.As(err, &he) {
			line.Msg = he.Msg
			if he.Err != nil {
				line.Msg += ": " + he.Err.Error()
			}
		} else {
			line.Msg = err.Error()
		}
	}
	if err := enc.Encode(line); err != nil {
		os.Exit(2)
	}
	os.Exit(0)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
