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
// goroutine stashes arriving descriptors by id; Receive waits for one.
// Done is closed when the peer's end closes, which is how each side learns
// that the other process died.
type FDChannel struct {
	conn   *net.UnixConn
	sendMu sync.Mutex

	mu      sync.Mutex
	stash   map[uint64]*os.File
	changed chan struct{}
	err     error
	done    chan struct{}
	exited  chan struct{}
}

// SocketPair makes a connected SOCK_SEQPACKET pair: the first end stays in
// this process, the second is handed to the child (exec.Cmd.ExtraFiles).
func SocketPair() (local, remote *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "switchyard-fdchan-host"), os.NewFile(uintptr(fds[1]), "switchyard-fdchan-plugin"), nil
}

// NewFDChannel takes ownership of f (one end of SocketPair) and starts
// reading from it.
func NewFDChannel(f *os.File) (*FDChannel, error) {
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
	ch := &FDChannel{conn: uc, stash: map[uint64]*os.File{}, changed: make(chan struct{}), done: make(chan struct{}), exited: make(chan struct{})}
	go ch.read()
	return ch, nil
}

func (c *FDChannel) read() {
	defer close(c.exited)
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
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
		var files []*os.File
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				fds, _ := unix.ParseUnixRights(&m)
				for _, fd := range fds {
					files = append(files, os.NewFile(uintptr(fd), "switchyard-region"))
				}
			}
		}
		if n != 16 || len(files) != 1 {
			for _, f := range files {
				f.Close()
			}
			continue // malformed message: ignore it, the matching Receive times out
		}
		id := binary.LittleEndian.Uint64(buf)
		c.mu.Lock()
		if old := c.stash[id]; old != nil {
			old.Close()
		}
		c.stash[id] = files[0]
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
	}
}

// Send passes f's descriptor tagged with id. f stays open in this process.
func (c *FDChannel) Send(id uint64, f *os.File) error {
	var buf [16]byte
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

// Receive waits for the descriptor tagged id, the context, or the channel's end.
func (c *FDChannel) Receive(ctx context.Context, id uint64) (*os.File, error) {
	for {
		c.mu.Lock()
		if f := c.stash[id]; f != nil {
			delete(c.stash, id)
			c.mu.Unlock()
			return f, nil
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

// Done is closed when the peer's end of the channel closes.
func (c *FDChannel) Done() <-chan struct{} { return c.done }

// Close closes the channel and any descriptors not yet received, and waits
// for the reader goroutine to end.
func (c *FDChannel) Close() error {
	err := c.conn.Close()
	<-c.exited
	c.mu.Lock()
	for id, f := range c.stash {
		f.Close()
		delete(c.stash, id)
	}
	c.mu.Unlock()
	return err
}
