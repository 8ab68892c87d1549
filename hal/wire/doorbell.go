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
//
// A call on the doorbell carries the caller's context as a gRPC call does:
// the request frame holds the time left until the caller's deadline, and
// the plugin's handler runs under a context with that deadline which is
// also cancelled when the host gives up on the call (the host closes its
// end, the plugin's loop reads EOF). Hosts and plugins agree on this in
// the ping that opens the doorbell (DoorbellVersion); a plugin whose
// doorbell predates it is called over gRPC only.
//
// Frames: a kind byte, a little-endian uint32 payload length, the payload.
//   - ping (2): payload the sender's doorbell version (one byte; empty
//     means 1). The plugin answers with the version both speak.
//   - call (4): host → plugin: an int64 little-endian timeout in
//     nanoseconds (0: none), then an ExecuteRequest.
//   - execute (1): plugin → host: an ExecuteResponse. (Host → plugin, the
//     version-1 request without a timeout, still served for old hosts.)
//   - error (3): plugin → host: a gRPC status code byte, then the message.

// DoorbellFD is the descriptor number the plugin finds its end of the
// doorbell socket on (exec.Cmd.ExtraFiles[1]).
const DoorbellFD = 4

// EnvDoorbell tells the plugin which descriptor is the doorbell.
const EnvDoorbell = "SWITCHYARD_PLUGIN_DOORBELL"

// DoorbellVersion is the doorbell protocol this package speaks: 2 carries
// deadlines and cancellation.
const DoorbellVersion = 2

const (
	frameExecute byte = 1
	framePing    byte = 2
	frameError   byte = 3
	frameCall    byte = 4
	// maxFrame bounds a frame: descriptors only, never tensor data.
	maxFrame = 16 << 20
	// maxErrorFrame bounds what is kept of an error frame; the rest of a
	// longer one is read and discarded (its message is truncated).
	maxErrorFrame = 1 + MaxErrorMessage
)

// ErrDoorbellBusy means another call holds the doorbell; use gRPC.
var ErrDoorbellBusy = errors.New("doorbell busy")

// ErrDoorbellClosed means the doorbell is not usable (any more); use gRPC.
var ErrDoorbellClosed = errors.New("doorbell closed")

func writeFrame(w io.Writer, kind byte, payload []byte) error {
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.LittleEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame. It returns the frame's kind, its payload and
// the payload's length as sent: for an error frame longer than
// maxErrorFrame only the first maxErrorFrame bytes are kept (the rest is
// read and dropped), so size > len(payload).
func readFrame(r io.Reader) (kind byte, payload []byte, size int, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, 0, err
	}
	n := int(binary.LittleEndian.Uint32(hdr[1:]))
	if n > maxFrame {
		return 0, nil, 0, fmt.Errorf("wire: doorbell frame of %d bytes (limit %d)", n, maxFrame)
	}
	keep := n
	if hdr[0] == frameError && keep > maxErrorFrame {
		keep = maxErrorFrame
	}
	b := make([]byte, keep)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, 0, err
	}
	if keep < n {
		if _, err := io.CopyN(io.Discard, r, int64(n-keep)); err != nil {
			return 0, nil, 0, err
		}
	}
	return hdr[0], b, n, nil
}

// encodeCall is the host's request frame payload.
func encodeCall(timeout time.Duration, req *halv1.ExecuteRequest) ([]byte, error) {
	if timeout < 0 {
		timeout = 0
	}
	b := make([]byte, 8, 8+proto.Size(req))
	binary.LittleEndian.PutUint64(b, uint64(timeout))
	return proto.MarshalOptions{}.MarshalAppend(b, req)
}

// decodeRequest decodes a request frame on the plugin side: the timeout
// (0: none) and the request.
func decodeRequest(kind byte, b []byte) (time.Duration, *halv1.ExecuteRequest, error) {
	var timeout time.Duration
	switch kind {
	case frameExecute:
	case frameCall:
		if len(b) < 8 {
			return 0, nil, fmt.Errorf("wire: doorbell call frame of %d bytes has no timeout", len(b))
		}
		t := int64(binary.LittleEndian.Uint64(b))
		if t < 0 {
			return 0, nil, fmt.Errorf("wire: doorbell call with timeout %d", t)
		}
		timeout, b = time.Duration(t), b[8:]
	default:
		return 0, nil, fmt.Errorf("wire: doorbell frame kind %d is not a request", kind)
	}
	req := &halv1.ExecuteRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return 0, nil, fmt.Errorf("wire: doorbell request: %w", err)
	}
	return timeout, req, nil
}

// errBadResponse marks a response frame that breaks the protocol (the
// doorbell is then closed) as opposed to the handler's own error.
type errBadResponse struct{ error }

// decodeResponse decodes the plugin's answer on the host side: the
// response, or the handler's error (a gRPC status, its message bounded by
// MaxErrorMessage), or an errBadResponse.
func decodeResponse(kind byte, b []byte, size int) (*halv1.ExecuteResponse, error) {
	switch kind {
	case frameError:
		if len(b) == 0 || codes.Code(b[0]) == codes.OK {
			// an "error" with code OK would read as a call that succeeded
			// without a response
			return nil, errBadResponse{errors.New("wire: doorbell error frame without an error code")}
		}
		// the handler's own error, as the gRPC call would have returned it
		return nil, status.Error(codes.Code(b[0]), truncateTo(string(b[1:]), size-1))
	case frameExecute:
		resp := &halv1.ExecuteResponse{}
		if err := proto.Unmarshal(b, resp); err != nil {
			return nil, errBadResponse{fmt.Errorf("wire: doorbell response: %w", err)}
		}
		return resp, nil
	}
	return nil, errBadResponse{fmt.Errorf("wire: doorbell answered with frame kind %d", kind)}
}

// Doorbell is the host's end.
type Doorbell struct {
	mu     sync.Mutex // held for a whole call
	conn   net.Conn
	closed atomic.Bool
}

// NewDoorbell wraps the host's end of the pair and checks, within timeout,
// that the plugin answers on it and speaks DoorbellVersion; a plugin that
// does not is not an error: the returned doorbell is closed and every call
// takes gRPC.
func NewDoorbell(f *os.File, timeout time.Duration) *Doorbell {
	c, err := net.FileConn(f)
	f.Close()
	return newDoorbell(c, err, timeout)
}

func newDoorbell(c net.Conn, err error, timeout time.Duration) *Doorbell {
	d := &Doorbell{conn: c}
	if err != nil {
		d.closed.Store(true)
		return d
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	if err := writeFrame(c, framePing, []byte{DoorbellVersion}); err != nil {
		d.Close()
		return d
	}
	kind, b, _, err := readFrame(c)
	if err != nil || kind != framePing || len(b) != 1 || b[0] != DoorbellVersion {
		// no doorbell, or one that cannot carry deadlines: gRPC does
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

// Execute sends req with ctx's deadline and waits for the response,
// honouring ctx. It returns ErrDoorbellBusy or ErrDoorbellClosed when the
// call should go over gRPC instead (nothing was sent). Any other error
// closes the doorbell (a late response could otherwise be read by the next
// call; closing is also what cancels the call in the plugin) and is a
// transport failure of this call.
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
	var timeout time.Duration
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
		_ = d.conn.SetDeadline(dl)
	} else {
		_ = d.conn.SetDeadline(time.Time{})
	}
	payload, err := encodeCall(timeout, req)
	if err != nil {
		return nil, err
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
	if err := writeFrame(d.conn, frameCall, payload); err != nil {
		return fail(err)
	}
	kind, b, size, err := readFrame(d.conn)
	if err != nil {
		return fail(err)
	}
	resp, err := decodeResponse(kind, b, size)
	var bad errBadResponse
	if errors.As(err, &bad) {
		return fail(bad.error)
	}
	return resp, err
}

// Close closes the host's end; the plugin's serving loop then ends, and
// cancels the call it is running.
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

// ExecuteFunc is the plugin's Execute handler (the same as the gRPC one).
type ExecuteFunc func(ctx context.Context, req *halv1.ExecuteRequest) (*halv1.ExecuteResponse, error)

// ServeDoorbell is the plugin's loop: it answers pings and runs each
// request through exec (the same handler as the gRPC Execute) under a
// context that carries the host's deadline and is cancelled when the host
// closes its end, until the host closes its end. It returns once the call
// in flight, if any, has returned.
func ServeDoorbell(f *os.File, exec ExecuteFunc) error {
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return err
	}
	defer c.Close()
	return serveDoorbell(c, exec)
}

func serveDoorbell(c io.ReadWriter, exec ExecuteFunc) error {
	var wmu sync.Mutex
	write := func(kind byte, payload []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(c, kind, payload)
	}
	var (
		cancel context.CancelFunc = func() {}
		done   chan struct{}
	)
	defer func() {
		cancel() // the host went away or gave up: the call in flight ends
		if done != nil {
			<-done
		}
	}()
	for {
		kind, b, _, err := readFrame(c)
		if err != nil {
			return err
		}
		switch kind {
		case framePing:
			v := byte(1)
			if len(b) > 0 {
				v = b[0]
			}
			if err := write(framePing, []byte{min(v, DoorbellVersion)}); err != nil {
				return err
			}
		case frameExecute, frameCall:
			if done != nil {
				// the host sends the next request only after the answer to
				// the previous one; done closes right after that answer
				<-done
			}
			timeout, req, err := decodeRequest(kind, b)
			if err != nil {
				return err
			}
			var ctx context.Context
			if timeout > 0 {
				ctx, cancel = context.WithTimeout(context.Background(), timeout)
			} else {
				ctx, cancel = context.WithCancel(context.Background())
			}
			done = make(chan struct{})
			go func(ctx context.Context, cancel context.CancelFunc, done chan struct{}) {
				resp, err := exec(ctx, req)
				cancel()
				kind, out := encodeResult(resp, err)
				_ = write(kind, out) // a failed write means the host closed: the loop sees it
				// closed after the answer is written, so nothing is written
				// once the loop has returned
				close(done)
			}(ctx, cancel, done)
		default:
			return fmt.Errorf("wire: doorbell frame kind %d", kind)
		}
	}
}

// encodeResult is the plugin's answer frame for a handler's result.
func encodeResult(resp *halv1.ExecuteResponse, err error) (byte, []byte) {
	if err == nil {
		out, merr := proto.Marshal(resp)
		if merr == nil && len(out) <= maxFrame {
			return frameExecute, out
		}
		if merr == nil {
			merr = fmt.Errorf("response of %d bytes exceeds the doorbell's frame limit %d", len(out), maxFrame)
		}
		err = status.Error(codes.Internal, "wire: "+merr.Error())
	}
	st, _ := status.FromError(err)
	return frameError, append([]byte{byte(st.Code())}, TruncateMessage(st.Message())...)
}
