package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// The doorbell is the fast path for Execute. The messages are the same
// protobuf ExecuteRequest/ExecuteResponse as the gRPC call (tensors stay in
// shared memory; only descriptors travel), framed on a private socket pair
// instead of an HTTP/2 stream: a gRPC round trip between two processes
// costs ~250 µs on a small machine, a socket round trip ~30 µs. Control
// calls (Compile, Supports, …) stay on gRPC. One call is on the doorbell
// at a time; concurrent Executes, and every call after a doorbell failure,
// take the gRPC path, so the doorbell is an optimisation, never a
// requirement: a plugin that does not serve it is simply called over gRPC.

// DoorbellFD is the descriptor number the plugin finds its end of the
// doorbell socket on (exec.Cmd.ExtraFiles[1]).
const DoorbellFD = 4

// EnvDoorbell tells the plugin which descriptor is the doorbell.
const EnvDoorbell = "SWITCHYARD_PLUGIN_DOORBELL"

const (
	frameExecute byte = 1
	framePing    byte = 2
	frameError   byte = 3 // payload: a gRPC status code byte, then the message
	// maxFrame bounds a frame: descriptors only, never tensor data.
	maxFrame = 16 << 20
)

// ErrDoorbellBusy means another call holds the doorbell; use gRPC.
var ErrDoorbellBusy = errors.New("doorbell busy")

// ErrDoorbellClosed means the doorbell is not usable (any more); use gRPC.
var ErrDoorbellClosed = errors.New("doorbell closed")

// DoorbellPair makes the socket pair: the host's end and the plugin's.
func DoorbellPair() (host *os.File, plugin *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wire: doorbell socket pair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "switchyard-doorbell-host"), os.NewFile(uintptr(fds[1]), "switchyard-doorbell-plugin"), nil
}

func writeFrame(w io.Writer, kind byte, payload []byte) error {
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.LittleEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("wire: doorbell frame of %d bytes (limit %d)", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}

// Doorbell is the host's end.
type Doorbell struct {
	mu     sync.Mutex // held for a whole call
	conn   net.Conn
	closed atomic.Bool
}

// NewDoorbell wraps the host's end of the pair and checks, within timeout,
// that the plugin answers on it; a plugin that does not is not an error:
// the returned doorbell is closed and every call takes gRPC.
func NewDoorbell(f *os.File, timeout time.Duration) *Doorbell {
	c, err := net.FileConn(f)
	f.Close()
	d := &Doorbell{conn: c}
	if err != nil {
		d.closed.Store(true)
		return d
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := writeFrame(c, framePing, nil); err != nil {
		d.Close()
		return d
	}
	if kind, _, err := readFrame(c); err != nil || kind != framePing {
		d.Close()
		return d
	}
	_ = c.SetDeadline(time.Time{})
	return d
}

// Usable reports whether calls may take the doorbell.
func (d *Doorbell) Usable() bool {
	return d != nil && !d.closed.Load()
}

// Execute sends req and waits for the response, honouring ctx. It returns
// ErrDoorbellBusy or ErrDoorbellClosed when the call should go over gRPC
// instead (nothing was sent). Any other error closes the doorbell (a late
// response could otherwise be read by the next call) and is a transport
// failure of this call.
func (d *Doorbell) Execute(ctx context.Context, req *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error) {
	if d == nil {
		return nil, ErrDoorbellClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err // as gRPC would: a call on a done context is not sent
	}
	if !d.mu.TryLock() {
		return nil, ErrDoorbellBusy
	}
	defer d.mu.Unlock()
	if d.closed.Load() {
		return nil, ErrDoorbellClosed
	}
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = d.conn.SetDeadline(dl)
	} else {
		_ = d.conn.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = d.conn.SetDeadline(time.Now()) })
	defer stop()
	fail := func(err error) (*halv1.ExecuteResponse, error) {
		d.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if err := writeFrame(d.conn, frameExecute, payload); err != nil {
		return fail(err)
	}
	kind, b, err := readFrame(d.conn)
	if err != nil {
		return fail(err)
	}
	if kind == frameError && len(b) > 0 {
		// the handler's own error, as the gRPC call would have returned it
		return nil, status.Error(codes.Code(b[0]), string(b[1:]))
	}
	if kind != frameExecute {
		return fail(fmt.Errorf("wire: doorbell answered with frame kind %d", kind))
	}
	resp := &halv1.ExecuteResponse{}
	if err := proto.Unmarshal(b, resp); err != nil {
		return fail(fmt.Errorf("wire: doorbell response: %w", err))
	}
	return resp, nil
}

// Close closes the host's end; the plugin's serving loop then ends.
func (d *Doorbell) Close() {
	if d == nil {
		return
	}
	if d.closed.Swap(true) {
		return
	}
	if d.conn != nil {
		_ = d.conn.Close()
	}
}

// ServeDoorbell is the plugin's loop: it answers pings and runs each
// execute frame through exec (the same handler as the gRPC Execute) until
// the host closes its end.
func ServeDoorbell(f *os.File, exec func(ctx context.Context, req *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error)) error {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	for {
		kind, b, err := readFrame(c)
		if err != nil {
			return err
		}
		switch kind {
		case framePing:
			if err := writeFrame(c, framePing, nil); err != nil {
				return err
			}
		case frameExecute:
			req := &halv1.ExecuteRequest{}
			if err := proto.Unmarshal(b, req); err != nil {
				return err
			}
			resp, err := exec(context.Background(), req)
			if err != nil {
				st, _ := status.FromError(err)
				msg := append([]byte{byte(st.Code())}, st.Message()...)
				if err := writeFrame(c, frameError, msg); err != nil {
					return err
				}
				continue
			}
			out, err := proto.Marshal(resp)
			if err != nil {
				return err
			}
			if err := writeFrame(c, frameExecute, out); err != nil {
				return err
			}
		default:
			return fmt.Errorf("wire: doorbell frame kind %d", kind)
		}
	}
}
