//go:build linux

package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// FDChannel carries shared-region file descriptors between host and
// plugin over one end of a SOCK_SEQPACKET socket pair. Each message is a
// region id and size with exactly one descriptor attached. A reader
// goroutine keeps arriving descriptors by id until Receive claims them.
// Done is closed when the peer's end closes, which is how each side learns
// that the other process died.
//
// A descriptor is kept only where the protocol expects one (see Side);
// every other descriptor — a message with several, or a truncated control
// message (MSG_CTRUNC), an id from the wrong range, one beyond the bound of
// pending descriptors — is closed the moment it arrives, so a peer that
// floods the channel cannot fill this process's descriptor table.
type FDChannel struct {
	conn   *net.UnixConn
	side   Side
	sendMu sync.Mutex

	mu      sync.Mutex
	pending map[uint64]pendingFD
	seq     uint64         // counts arrivals and window openings
	windows map[uint64]int // open Expect windows: opening seq -> size
	allow   int            // sum of open windows' sizes (host side)
	refused []uint64       // ids recently closed on arrival (bounded ring)
	dropped uint64
	changed chan struct{}
	err     error
	done    chan struct{}
	exited  chan struct{}
}

type pendingFD struct {
	f   *os.File
	seq uint64
}

// Side says which end of the channel this is, and so which descriptors it
// accepts.
type Side int

const (
	// HostSide accepts descriptors of plugin-created regions (ids with
	// PluginRegionBit) only while a call that may return one is in flight
	// (Expect), at most as many as those calls have outputs.
	HostSide Side = iota + 1
	// PluginSide accepts descriptors of host-created regions (ids without
	// PluginRegionBit): the host sends one just before the MapRegion call
	// that names it, so up to MaxPluginPending may wait to be claimed.
	PluginSide
)

// MaxPluginPending bounds the descriptors the plugin side holds unclaimed
// (the host sends a region's descriptor just before the MapRegion call
// that claims it, so this many calls may map new regions at once).
const MaxPluginPending = 256

// maxRefused is how many refused ids are remembered, so that a Receive of
// one fails at once instead of waiting for a descriptor that is gone.
const maxRefused = 64

// SocketPair makes a connected SOCK_SEQPACKET pair: the first end stays in
// this process, the second is handed to the child (exec.Cmd.ExtraFiles).
func SocketPair() (local, remote *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "switchyard-fdchan-host"), os.NewFile(uintptr(fds[1]), "switchyard-fdchan-plugin"), nil
}

// DoorbellPair makes the doorbell's socket pair: the host's end and the
// plugin's.
func DoorbellPair() (host *os.File, plugin *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: doorbell socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "switchyard-doorbell-host"), os.NewFile(uintptr(fds[1]), "switchyard-doorbell-plugin"), nil
}

// NewFDChannel takes ownership of f (one end of SocketPair) and starts
// reading from it as side.
func NewFDChannel(f *os.File, side Side) (*FDChannel, error) {
	if side != HostSide && side != PluginSide {
		f.Close()
		return nil, fmt.Errorf("wire: descriptor channel side %d", side)
	}
	c, err := net.FileConn(f)
	f.Close() // FileConn dup'ed it
	if err != nil {
		return nil, fmt.Errorf("wire: descriptor channel: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("wire: descriptor channel is a %T, not a unix socket", c)
	}
	ch := &FDChannel{conn: uc, side: side, pending: map[uint64]pendingFD{}, windows: map[uint64]int{},
		changed: make(chan struct{}), done: make(chan struct{}), exited: make(chan struct{})}
	go ch.read()
	return ch, nil
}

// fdMessageSize is the data part of a message: region id and size.
const fdMessageSize = 16

// parseFDMessage checks one received message: exactly fdMessageSize bytes
// of data, untruncated, with exactly one descriptor. It returns the
// message's id and descriptor, and every descriptor the message carried
// that must be closed.
func parseFDMessage(data []byte, oob []byte, flags int) (id uint64, fd int, extra []int, ok bool) {
	fd = -1
	if msgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range msgs {
			if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_RIGHTS {
				continue
			}
			fds, _ := unix.ParseUnixRights(&m)
			extra = append(extra, fds...)
		}
	}
	if len(data) != fdMessageSize || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 || len(extra) != 1 {
		return 0, -1, extra, false
	}
	return binary.LittleEndian.Uint64(data), extra[0], nil, true
}

func (c *FDChannel) read() {
	defer close(c.exited)
	buf := make([]byte, fdMessageSize+1) // one more byte tells an oversized message
	// room for a few descriptors: a message with more is truncated by the
	// kernel (MSG_CTRUNC), which closes what did not fit
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := c.conn.ReadMsgUnix(buf, oob)
		if err == nil && n == 0 && oobn == 0 {
			err = errors.New("peer closed the descriptor channel")
		}
		if err != nil {
			c.mu.Lock()
			c.err = err
			close(c.done)
			close(c.changed)
			c.mu.Unlock()
			return
		}
		id, fd, extra, ok := parseFDMessage(buf[:n], oob[:oobn], flags)
		for _, x := range extra {
			_ = unix.Close(x)
		}
		if !ok {
			c.mu.Lock()
			c.dropped += uint64(len(extra))
			c.mu.Unlock()
			continue // malformed message: nobody waits for it
		}
		c.keep(id, os.NewFile(uintptr(fd), "switchyard-region"))
	}
}

// accepts reports whether id is in the range this side takes.
func (c *FDChannel) accepts(id uint64) bool {
	if c.side == HostSide {
		return id&PluginRegionBit != 0
	}
	return id&PluginRegionBit == 0
}

// keep stores an arriving descriptor or closes it.
func (c *FDChannel) keep(id uint64, f *os.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := MaxPluginPending
	if c.side == HostSide {
		limit = c.allow
	}
	if !c.accepts(id) || limit == 0 {
		c.refuse(id, f)
		return
	}
	if old, ok := c.pending[id]; ok {
		delete(c.pending, id)
		if c.side == HostSide {
			// the same id twice: the plugin is confused or lying; neither
			// copy is trusted
			c.refuse(id, old.f)
			c.refuse(id, f)
			c.notify()
			return
		}
		// the host sent a region again (its first MapRegion call never
		// came): the newer descriptor replaces the older
		_ = old.f.Close()
	}
	for len(c.pending) >= limit {
		// over the bound: the oldest descriptor goes (an honest peer's
		// descriptor is claimed right after it arrives, so the oldest is
		// the one nobody is waiting for)
		var oldID uint64
		var old pendingFD
		first := true
		for k, p := range c.pending {
			if first || p.seq < old.seq {
				oldID, old, first = k, p, false
			}
		}
		delete(c.pending, oldID)
		c.refuse(oldID, old.f)
	}
	c.seq++
	c.pending[id] = pendingFD{f: f, seq: c.seq}
	c.notify()
}

// refuse closes f and remembers id as refused. c.mu is held.
func (c *FDChannel) refuse(id uint64, f *os.File) {
	_ = f.Close()
	c.dropped++
	if len(c.refused) >= maxRefused {
		c.refused = c.refused[1:]
	}
	c.refused = append(c.refused, id)
}

func (c *FDChannel) wasRefused(id uint64) bool {
	for _, r := range c.refused {
		if r == id {
			return true
		}
	}
	return false
}

// notify wakes every Receive. c.mu is held.
func (c *FDChannel) notify() {
	if c.err == nil {
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// Expect opens a window in which up to n descriptors from the peer may
// arrive (the host calls it around a call with n outputs, each of which
// may come back in a region the plugin creates). The returned function
// closes the window; descriptors that no open window can still be waiting
// for are then closed. On the plugin side Expect does nothing.
func (c *FDChannel) Expect(n int) (done func()) {
	if c.side != HostSide || n <= 0 {
		return func() {}
	}
	c.mu.Lock()
	c.seq++
	key := c.seq
	c.windows[key] = n
	c.allow += n
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			delete(c.windows, key)
			c.allow -= n
			oldest := uint64(0) // opening seq of the oldest window still open
			for k := range c.windows {
				if oldest == 0 || k < oldest {
					oldest = k
				}
			}
			for id, p := range c.pending {
				// arrived before every open window opened (or none is
				// open): no call in flight can be waiting for it
				if oldest == 0 || p.seq < oldest {
					delete(c.pending, id)
					_ = p.f.Close()
				}
			}
		})
	}
}

// Discard closes the pending descriptor tagged id, if any (a call that
// refused the region its descriptor names, before mapping it).
func (c *FDChannel) Discard(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pending[id]; ok {
		delete(c.pending, id)
		_ = p.f.Close()
	}
}

// Dropped counts descriptors closed on arrival (unexpected, malformed,
// out of range or over the bound).
func (c *FDChannel) Dropped() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// Pending counts descriptors held, waiting for their Receive.
func (c *FDChannel) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Send passes f's descriptor tagged with id. f stays open in this process.
func (c *FDChannel) Send(id uint64, f *os.File) error {
	var buf [fdMessageSize]byte
	binary.LittleEndian.PutUint64(buf[:], id)
	st, err := f.Stat()
	if err == nil {
		binary.LittleEndian.PutUint64(buf[8:], uint64(st.Size()))
	}
	rights := unix.UnixRights(int(f.Fd()))
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if _, _, err := c.conn.WriteMsgUnix(buf[:], rights, nil); err != nil {
		return fmt.Errorf("wire: passing region %d: %w", id, err)
	}
	return nil
}

// Receive waits for the descriptor tagged id, the context, or the
// channel's end. A descriptor that was refused on arrival (see FDChannel)
// fails at once.
func (c *FDChannel) Receive(ctx context.Context, id uint64) (*os.File, error) {
	for {
		c.mu.Lock()
		if p, ok := c.pending[id]; ok {
			delete(c.pending, id)
			c.mu.Unlock()
			return p.f, nil
		}
		if c.wasRefused(id) {
			c.mu.Unlock()
			return nil, fmt.Errorf("wire: the descriptor of region %d was refused on arrival (unexpected, duplicated or over the bound of %s)", id, c.boundText())
		}
		if c.err != nil {
			err := c.err
			c.mu.Unlock()
			return nil, fmt.Errorf("wire: waiting for region %d: %w", id, err)
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("wire: waiting for region %d: %w", id, ctx.Err())
		}
	}
}

func (c *FDChannel) boundText() string {
	if c.side == HostSide {
		return "one per output of the calls in flight"
	}
	return fmt.Sprintf("%d pending", MaxPluginPending)
}

// Done is closed when the peer's end of the channel closes.
func (c *FDChannel) Done() <-chan struct{} { return c.done }

// Close closes the channel and any descriptors not yet received, and waits
// for the reader goroutine to end.
func (c *FDChannel) Close() error {
	err := c.conn.Close()
	<-c.exited
	c.mu.Lock()
	for id, p := range c.pending {
		p.f.Close()
		delete(c.pending, id)
	}
	c.mu.Unlock()
	return err
}
