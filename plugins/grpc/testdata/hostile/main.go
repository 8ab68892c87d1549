// Command hostile is a plugin process that attacks its host, for the
// hostile-plugin tests of plugins/grpc (which build it). It serves the
// simulation backend (Relu and Add) through sdk.Serve, as a vendor's
// plugin would, and misbehaves in Execute as SWITCHYARD_HOSTILE_MODE says:
//
//	good      behave
//	shrink    ftruncate every host region it can find (/proc/self/fd) to 0
//	          and try to grow and re-seal them; fail the call if any
//	          truncate succeeded (without touching the memory), else behave
//	dtype     return the right values as float64
//	rank      return the right values with an extra leading dim of 1
//	shape     return one element too many
//	huge      return SWITCHYARD_HOSTILE_HUGE_BYTES (default 1 GiB) of float32
//	fdflood   send SWITCHYARD_HOSTILE_FDS (default 5000) unsolicited
//	          descriptors over the host's descriptor channel (well-formed
//	          messages in both id ranges, messages with several descriptors,
//	          malformed ones), then behave
//	hang      block forever, ignoring the context
//	ctxprobe  wait for the context to end, write what ended it (and
//	          whether it had a deadline) to SWITCHYARD_HOSTILE_PROBE
//	panic     crash the process from a goroutine (an unrecoverable panic)
//	kill9     SIGKILL itself
//	logflood  write SWITCHYARD_HOSTILE_LOG_BYTES (default 16 MiB) of log
//	          lines to stderr (short JSON lines, 60 KiB records and 1 MiB
//	          lines), then behave
//	errflood  fail with a 64 MiB error message
//
// SWITCHYARD_HOSTILE_AFTER=n behaves for the first n calls of a process;
// SWITCHYARD_HOSTILE_ONCE=path attacks only while path does not exist
// (creating it), so a restarted process behaves. SWITCHYARD_HOSTILE_NO_DOORBELL=1
// closes the doorbell before serving, so every call takes gRPC.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/sdk"
)

func main() {
	h := &hostile{mode: os.Getenv("SWITCHYARD_HOSTILE_MODE"), fdch: -1}
	// keep a handle on the descriptor channel before the sdk takes it
	if s := os.Getenv(wire.EnvFDChannel); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			if fd, err := unix.Dup(n); err == nil {
				h.fdch = fd
			}
		}
	}
	if os.Getenv("SWITCHYARD_HOSTILE_NO_DOORBELL") == "1" {
		if s := os.Getenv(wire.EnvDoorbell); s != "" {
			if n, err := strconv.Atoi(s); err == nil {
				_ = unix.Close(n)
			}
			_ = os.Unsetenv(wire.EnvDoorbell)
		}
	}
	h.Backend = sim.New(sim.Options{Name: "hostile", Ops: []string{"Relu", "Add"}})
	sdk.Serve(h, nil)
}

type hostile struct {
	*sim.Backend
	mode string
	fdch int
}

func (h *hostile) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	e, err := h.Backend.Compile(ctx, sg, o)
	if err != nil {
		return nil, err
	}
	return &exe{Executable: e, h: h}, nil
}

type exe struct {
	hal.Executable
	h *hostile
}

var calls atomic.Int64

// attack reports whether this call attacks (SWITCHYARD_HOSTILE_AFTER,
// SWITCHYARD_HOSTILE_ONCE).
func attack() bool {
	after, _ := strconv.ParseInt(os.Getenv("SWITCHYARD_HOSTILE_AFTER"), 10, 64)
	if calls.Add(1) <= after {
		return false
	}
	p := os.Getenv("SWITCHYARD_HOSTILE_ONCE")
	if p == "" {
		return true
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func (e *exe) Execute(ctx context.Context, in, out []*graph.Tensor) error {
	mode := e.h.mode
	if mode == "" || mode == "good" || !attack() {
		return e.Executable.Execute(ctx, in, out)
	}
	switch mode {
	case "shrink":
		n, shrunk, err := shrinkHostRegions()
		if err != nil {
			return err
		}
		if n == 0 {
			return hal.Errorf(hal.CodeInternal, "hostile: found no host regions to shrink")
		}
		if shrunk > 0 {
			return hal.Errorf(hal.CodeInternal, "hostile: shrank %d of %d host regions", shrunk, n)
		}
		sdk.Logger().Info("hostile: every shrink was refused", "regions", n)
		return e.Executable.Execute(ctx, in, out)
	case "dtype", "rank", "shape":
		if err := e.Executable.Execute(ctx, in, out); err != nil {
			return err
		}
		for _, o := range out {
			switch mode {
			case "dtype":
				d := make([]float64, o.Len())
				for i := range d {
					d[i] = o.Float64At(i)
				}
				*o = graph.Tensor{DType: graph.Float64, Shape: o.Shape, Data: d}
			case "rank":
				*o = graph.Tensor{DType: o.DType, Shape: append([]int{1}, o.Shape...), Data: o.Data}
			case "shape":
				t, err := graph.New(o.DType, []int{o.Len() + 1})
				if err != nil {
					return err
				}
				*o = *t
			}
		}
		return nil
	case "huge":
		size := int64(1 << 30)
		if s := os.Getenv("SWITCHYARD_HOSTILE_HUGE_BYTES"); s != "" {
			size, _ = strconv.ParseInt(s, 10, 64)
		}
		for _, o := range out {
			*o = graph.Tensor{DType: graph.Float32, Shape: []int{int(size / 4)}, Data: make([]float32, size/4)}
		}
		return nil
	case "fdflood":
		n := 5000
		if s := os.Getenv("SWITCHYARD_HOSTILE_FDS"); s != "" {
			n, _ = strconv.Atoi(s)
		}
		if err := e.h.flood(n); err != nil {
			return hal.Errorf(hal.CodeInternal, "hostile: flooding: %v", err)
		}
		return e.Executable.Execute(ctx, in, out)
	case "hang":
		select {}
	case "ctxprobe":
		<-ctx.Done()
		_, has := ctx.Deadline()
		msg := fmt.Sprintf("deadline=%v err=%v", has, ctx.Err())
		if err := os.WriteFile(os.Getenv("SWITCHYARD_HOSTILE_PROBE"), []byte(msg), 0o600); err != nil {
			return err
		}
		return ctx.Err()
	case "panic":
		go func() { panic("hostile: crashing the plugin process") }()
		select {}
	case "kill9":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "logflood":
		total := 16 << 20
		if s := os.Getenv("SWITCHYARD_HOSTILE_LOG_BYTES"); s != "" {
			total, _ = strconv.Atoi(s)
		}
		logFlood(total)
		return e.Executable.Execute(ctx, in, out)
	case "errflood":
		return hal.Errorf(hal.CodeInternal, "hostile: %s", strings.Repeat("error flood ", (64<<20)/12))
	}
	return hal.Errorf(hal.CodeInternal, "hostile: unknown mode %q", mode)
}

// shrinkHostRegions finds the host's regions mapped in this process and
// tries to resize them.
func shrinkHostRegions() (found, shrunk int, err error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, "/memfd:switchyard-host") {
			continue
		}
		found++
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			continue
		}
		if unix.Ftruncate(fd, 0) == nil {
			shrunk++
			continue
		}
		if unix.Ftruncate(fd, st.Size*2) == nil {
			shrunk++
			continue
		}
		// sealing it against writes would break the host's next write
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_FUTURE_WRITE); err == nil {
			shrunk++
		}
	}
	return found, shrunk, nil
}

// flood sends n unsolicited descriptors over the descriptor channel.
func (h *hostile) flood(n int) error {
	if h.fdch < 0 {
		return fmt.Errorf("no descriptor channel")
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	fd := int(devnull.Fd())
	msg := make([]byte, 16)
	for i, sent := 0, 0; sent < n; i++ {
		var id uint64
		rights := unix.UnixRights(fd)
		data := msg
		sent++
		switch i % 4 {
		case 0: // well-formed, plugin range: as if a result region
			id = wire.PluginRegionBit | uint64(1)<<40 | uint64(i)
		case 1: // well-formed, host range
			id = uint64(i) + 1
		case 2: // several descriptors in one message
			id = wire.PluginRegionBit | uint64(2)<<40 | uint64(i)
			rights = unix.UnixRights(fd, fd, fd, fd, fd, fd, fd, fd)
			sent += 7
		case 3: // malformed data
			data = msg[:5]
		}
		for k := 0; k < 8; k++ {
			msg[k] = byte(id >> (8 * k))
		}
		for {
			err := unix.Sendmsg(h.fdch, data, rights, nil, 0)
			if err == nil {
				break
			}
			if err != unix.EAGAIN {
				return fmt.Errorf("message %d: %w", i, err)
			}
			// the channel is non-blocking (the sdk's copy shares it): wait
			// until the host has read some
			pfd := []unix.PollFd{{Fd: int32(h.fdch), Events: unix.POLLOUT}}
			if _, err := unix.Poll(pfd, 5000); err != nil && err != unix.EINTR {
				return fmt.Errorf("message %d: poll: %w", i, err)
			}
		}
	}
	return nil
}

// logFlood writes about total bytes of log lines to the original stderr.
func logFlood(total int) {
	log := sdk.Logger()
	big := strings.Repeat("x", 1<<20)
	long := strings.Repeat("y", 60<<10) // one JSON record under go-plugin's 64 KiB line buffer
	for written, i := 0, 0; written < total; i++ {
		if i%1000 == 500 {
			log.Error("hostile: a long record", "payload", long)
			written += len(long)
			continue
		}
		if i%1000 == 999 {
			_, _ = unix.Write(2, []byte(big+"\n"))
			written += len(big) + 1
			continue
		}
		log.Warn("hostile: log flood", "line", i, "at", time.Now().UnixNano())
		written += 80
	}
}
