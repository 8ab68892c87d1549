//go:build linux

package wire_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// A region can be neither shrunk nor grown nor sealed further by the
// process it is passed to, so its mapping can never fault.
func TestRegionIsSealed(t *testing.T) {
	r, err := wire.NewRegion(1, "switchyard-test", 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// what the other process gets: a dup of the descriptor
	fd, err := unix.Dup(int(r.File.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrinking: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1<<20); !errors.Is(err, unix.EPERM) {
		t.Errorf("growing: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE); !errors.Is(err, unix.EPERM) {
		t.Errorf("sealing against writes: %v, want EPERM", err)
	}
	r.Mem[4095] = 1 // still writable, nothing faults
}

// A region from the other side that is not sealed, or not a memfd, or
// smaller than claimed, is refused before it is mapped.
func TestMapRegionRefusesUnsealed(t *testing.T) {
	unsealed, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.Ftruncate(unsealed, 8192)
	shrinkOnly, _ := unix.MemfdCreate("shrink-only", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	_ = unix.Ftruncate(shrinkOnly, 8192)
	_, _ = unix.FcntlInt(uintptr(shrinkOnly), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK)
	noSealing, _ := unix.MemfdCreate("no-sealing", unix.MFD_CLOEXEC)
	_ = unix.Ftruncate(noSealing, 8192)
	plain, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	_ = plain.Truncate(8192)
	small, err := wire.NewRegion(9, "small", 4096)
	if err != nil {
		t.Fatal(err)
	}
	smallFD, _ := unix.Dup(int(small.File.Fd()))
	small.Close()
	for _, tc := range []struct {
		name string
		f    *os.File
		size int
		want string
	}{
		{"unsealed memfd", os.NewFile(uintptr(unsealed), "unsealed"), 8192, "not sealed"},
		{"memfd sealed against shrinking only", os.NewFile(uintptr(shrinkOnly), "shrink-only"), 8192, "not sealed"},
		{"memfd without sealing", os.NewFile(uintptr(noSealing), "no-sealing"), 8192, "not sealed"},
		{"regular file", plain, 8192, "not a sealable memfd"},
		{"sealed but smaller than claimed", os.NewFile(uintptr(smallFD), "small"), 8192, "does not fit"},
	} {
		before := fdCount(t)
		r, err := wire.MapRegion(7, tc.f, tc.size)
		if err == nil {
			r.Close()
			t.Errorf("%s: mapped", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if after := fdCount(t); after != before-1 {
			t.Errorf("%s: refused descriptor not closed (%d -> %d)", tc.name, before, after)
		}
	}
	good, err := wire.NewRegion(3, "good", 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	dup, _ := unix.Dup(int(good.File.Fd()))
	m, err := wire.MapRegion(3, os.NewFile(uintptr(dup), "good"), 8192)
	if err != nil {
		t.Fatalf("a sealed region was refused: %v", err)
	}
	m.Close()
}

// channelPair is a host-side FDChannel and the raw descriptor of the
// plugin's end.
func channelPair(t *testing.T, side wire.Side) (*wire.FDChannel, int) {
	t.Helper()
	local, remote, err := wire.SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	ch, err := wire.NewFDChannel(local, side)
	if err != nil {
		t.Fatal(err)
	}
	fd, _ := unix.Dup(int(remote.Fd()))
	remote.Close()
	t.Cleanup(func() { ch.Close(); unix.Close(fd) })
	return ch, fd
}

func sendFDs(t *testing.T, sock int, id uint64, data int, fds ...int) {
	t.Helper()
	msg := make([]byte, data)
	if data >= 8 {
		binary.LittleEndian.PutUint64(msg, id)
	}
	for {
		err := unix.Sendmsg(sock, msg, unix.UnixRights(fds...), nil, 0)
		if err == nil {
			return
		}
		if err != unix.EAGAIN {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// settleFDs waits until the reader has consumed everything sent.
func settleFDs(t *testing.T, ch *wire.FDChannel, dropped uint64) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ch.Dropped() < dropped; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d descriptors dropped, want %d", ch.Dropped(), dropped)
		}
	}
}

// Descriptors are accepted only where the protocol expects one; every
// other one is closed on arrival, so a flood leaves the descriptor table
// as it was.
func TestFDChannelFlood(t *testing.T) {
	ch, peer := channelPair(t, wire.HostSide)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	dn := int(devnull.Fd())
	before := fdCount(t)
	const n = 4000
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0: // plugin range, but no call in flight
			sendFDs(t, peer, wire.PluginRegionBit|uint64(i), 16, dn)
		case 1: // host range: never accepted from the plugin
			sendFDs(t, peer, uint64(i), 16, dn)
		case 2: // several descriptors in one message (4 fit the buffer, the kernel drops the rest)
			sendFDs(t, peer, wire.PluginRegionBit|uint64(i), 16, dn, dn, dn, dn, dn, dn, dn, dn)
		case 3: // malformed
			sendFDs(t, peer, 0, 5, dn)
		}
	}
	settleFDs(t, ch, n/4*(1+1+4+1))
	if after := fdCount(t); after > before {
		t.Fatalf("descriptors %d -> %d after a flood of %d messages", before, after, n)
	}
	if ch.Pending() != 0 {
		t.Fatalf("%d descriptors pending", ch.Pending())
	}

	// within a call's window: the expected descriptor is received, a flood
	// during the call is bounded to the window, the window's end closes
	// whatever is left
	done := ch.Expect(1)
	for i := 0; i < 1000; i++ {
		sendFDs(t, peer, wire.PluginRegionBit|1<<40|uint64(i), 16, dn)
	}
	want := wire.PluginRegionBit | 77
	sendFDs(t, peer, want, 16, dn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := ch.Receive(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if p := ch.Pending(); p > 1 {
		t.Fatalf("%d descriptors pending in a window of 1", p)
	}
	// an evicted one fails at once
	if _, err := ch.Receive(ctx, wire.PluginRegionBit|1<<40|998); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("evicted descriptor: %v", err)
	}
	done()
	if p := ch.Pending(); p != 0 {
		t.Fatalf("%d descriptors pending after the window closed", p)
	}
	if after := fdCount(t); after > before {
		t.Fatalf("descriptors %d -> %d after the window", before, after)
	}

	// the same id twice in a window: neither is trusted
	done = ch.Expect(2)
	defer done()
	d0 := ch.Dropped()
	sendFDs(t, peer, wire.PluginRegionBit|5, 16, dn)
	sendFDs(t, peer, wire.PluginRegionBit|5, 16, dn)
	// both copies are refused when the second arrives; wait for that, or
	// a Receive could claim the first before the second is read
	settleFDs(t, ch, d0+2)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		_, err := ch.Receive(ctx, wire.PluginRegionBit|5)
		if err != nil && strings.Contains(err.Error(), "refused") {
			break
		}
		if err == nil || time.Now().After(end) {
			t.Fatalf("duplicated id: %v", err)
		}
	}
}

// The plugin's side keeps a bounded number of the host's descriptors, and
// a region sent again replaces the first.
func TestFDChannelPluginSideBound(t *testing.T) {
	ch, peer := channelPair(t, wire.PluginSide)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	before := fdCount(t)
	for i := 0; i < 3*wire.MaxPluginPending; i++ {
		sendFDs(t, peer, uint64(i+1), 16, int(devnull.Fd()))
	}
	sendFDs(t, peer, wire.PluginRegionBit|1, 16, int(devnull.Fd())) // the plugin's own range: refused
	settleFDs(t, ch, 2*wire.MaxPluginPending+1)
	if p := ch.Pending(); p != wire.MaxPluginPending {
		t.Fatalf("%d pending, want %d", p, wire.MaxPluginPending)
	}
	if after := fdCount(t); after > before+wire.MaxPluginPending {
		t.Fatalf("descriptors %d -> %d", before, after)
	}
	last := uint64(3 * wire.MaxPluginPending)
	sendFDs(t, peer, last, 16, int(devnull.Fd()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := ch.Receive(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// doorbellPair runs serveDoorbell with exec on one end of a socket pair
// and returns the host's Doorbell on the other.
func doorbellPair(t *testing.T, exec wire.ExecuteFunc) *wire.Doorbell {
	t.Helper()
	host, plugin := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- wire.ServeDoorbellConn(plugin, exec); plugin.Close() }()
	d := wire.NewDoorbellConn(host, nil, 2*time.Second)
	t.Cleanup(func() {
		d.Close()
		host.Close()
		<-served
	})
	if !d.Usable() {
		t.Fatal("doorbell not usable")
	}
	return d
}

// A call on the doorbell carries the caller's deadline, and giving up on
// it (the host closes its end) cancels the plugin's handler.
func TestDoorbellDeadlineAndCancel(t *testing.T) {
	seen := make(chan string, 1)
	d := doorbellPair(t, func(ctx context.Context, req *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error) {
		dl, ok := ctx.Deadline()
		if req.Executable == 1 {
			if !ok || time.Until(dl) > 10*time.Second || time.Until(dl) < time.Second {
				seen <- "bad deadline"
			} else {
				seen <- "deadline"
			}
			return &halv1.ExecuteResponse{}, nil
		}
		<-ctx.Done()
		seen <- ctx.Err().Error()
		return nil, ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.Execute(ctx, &halv1.ExecuteRequest{Executable: 1}); err != nil {
		t.Fatal(err)
	}
	if s := <-seen; s != "deadline" {
		t.Fatal(s)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, ccancel)
	if _, err := d.Execute(cctx, &halv1.ExecuteRequest{Executable: 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case s := <-seen:
		if s != context.Canceled.Error() {
			t.Fatalf("the handler saw %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancellation did not reach the handler")
	}
	if d.Usable() {
		t.Error("the doorbell is still used after a call was abandoned on it")
	}
}

// A plugin whose doorbell predates deadlines (it answers the ping without
// a version) is called over gRPC only.
func TestDoorbellWithoutDeadlinesIsNotUsed(t *testing.T) {
	host, plugin := net.Pipe()
	defer host.Close()
	go func() {
		defer plugin.Close()
		if kind, _, _, err := wire.ReadFrame(plugin); err == nil && kind == wire.FramePing {
			_ = wire.WriteFrame(plugin, wire.FramePing, nil)
		}
	}()
	if d := wire.NewDoorbellConn(host, nil, 2*time.Second); d.Usable() {
		t.Fatal("a version-1 doorbell is used")
	}
}

// An error frame of any length up to the frame limit arrives truncated to
// MaxErrorMessage with a note, and the doorbell stays in step.
func TestDoorbellErrorFrameBounded(t *testing.T) {
	host, plugin := net.Pipe()
	defer host.Close()
	go func() {
		defer plugin.Close()
		if _, _, _, err := wire.ReadFrame(plugin); err != nil {
			return
		}
		_ = wire.WriteFrame(plugin, wire.FramePing, []byte{wire.DoorbellVersion})
		for i := 0; ; i++ {
			if _, _, _, err := wire.ReadFrame(plugin); err != nil {
				return
			}
			if i == 0 {
				msg := append([]byte{13}, strings.Repeat("e", wire.MaxFrame-1)...)
				_ = wire.WriteFrame(plugin, wire.FrameError, msg)
			} else {
				_ = wire.WriteFrame(plugin, wire.FrameExecute, nil)
			}
		}
	}()
	d := wire.NewDoorbellConn(host, nil, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := d.Execute(ctx, &halv1.ExecuteRequest{})
	if err == nil || len(err.Error()) > wire.MaxErrorMessage+200 || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("error of %d bytes", len(err.Error()))
	}
	if _, err := d.Execute(ctx, &halv1.ExecuteRequest{}); err != nil {
		t.Fatalf("the doorbell lost step after a long error frame: %v", err)
	}
}
