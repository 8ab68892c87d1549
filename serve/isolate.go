package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// IsolateOptions configures an Isolated server.
type IsolateOptions struct {
	// Command returns the command of a worker that serves this package's
	// API (a Server) on the Unix socket at socket and keeps serving until
	// it is killed. It is called again for every restart.
	Command func(socket string) *exec.Cmd
	// ReadyTimeout bounds how long a request waits for a (re)starting
	// worker to answer /health with 200 (default 10 minutes: loading a
	// large model takes time).
	ReadyTimeout time.Duration
	// Log receives one line per worker start, exit and restart (nil:
	// discarded).
	Log io.Writer
}

// Isolated is an http.Handler that runs the models in a worker process and
// forwards every request to it, so that a crash of the model code (or a
// kill) takes down one process, not the server: requests in flight when
// the worker dies end at once with an error (500, or an error event on a
// stream that had begun), the worker is started again, and the next
// request is served by the new one. The worker dies with the server
// (Linux: the parent-death signal), and Close stops it and removes its
// socket.
type Isolated struct {
	opts  IsolateOptions
	dir   string // private directory holding the socket
	sock  string
	proxy *httputil.ReverseProxy
	hc    *http.Client

	mu    sync.Mutex
	cmd   *exec.Cmd
	dead  chan struct{} // closed when cmd has exited and up is reset
	ready chan struct{} // closed when the current worker answers /health
	up    bool

	restarts atomic.Int64
	everUp   bool          // some worker became ready (supervise's own)
	failed   chan struct{} // closed when the first worker died before it was ready
	failErr  error
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once
}

// NewIsolated starts the first worker and returns the handler at once;
// /health answers 503 until the worker is ready.
func NewIsolated(o IsolateOptions) (*Isolated, error) {
	if o.Command == nil {
		return nil, errors.New("serve: IsolateOptions.Command is nil")
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 10 * time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	dir, err := os.MkdirTemp("", "switchyard-worker-")
	if err != nil {
		return nil, err
	}
	s := &Isolated{opts: o, dir: dir, sock: filepath.Join(dir, "worker.sock"), stop: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{}), failed: make(chan struct{})}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.sock)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 64,
	}
	s.hc = &http.Client{Transport: tr, Timeout: 2 * time.Second}
	s.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "worker"
		},
		Transport:     &dialRetry{s: s, base: tr},
		FlushInterval: -1, // server-sent events pass through as written
		ModifyResponse: func(resp *http.Response) error {
			resp.Body = &workerBody{ReadCloser: resp.Body, s: s, sse: isEventStream(resp.Header.Get("Content-Type"))}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client left
			}
			s.awaitDeath()
			writeError(w, workerError(err))
		},
	}
	go s.supervise()
	return s, nil
}

func isEventStream(ct string) bool {
	return len(ct) >= 17 && ct[:17] == "text/event-stream"
}

func workerError(err error) *apiError {
	code := "worker_failed"
	return &apiError{status: http.StatusInternalServerError, Type: "server_error", Code: &code,
		Message: fmt.Sprintf("the model worker process ended during the request (it is being restarted): %v", err)}
}

// workerBody passes a worker's response through; when the worker dies
// mid-stream, a stream gets one final error event instead of an abrupt
// end, and a whole response the read error.
type workerBody struct {
	io.ReadCloser
	s      *Isolated
	sse    bool
	failed []byte // the error event still to send
	ended  bool
}

func (b *workerBody) Read(p []byte) (int, error) {
	if b.failed != nil {
		n := copy(p, b.failed)
		b.failed = b.failed[n:]
		if len(b.failed) == 0 {
			b.failed, b.ended = nil, true
		}
		return n, nil
	}
	if b.ended {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.sse {
		b.s.awaitDeath()
		e := workerError(err)
		b.failed = fmt.Appendf(nil, "data: {\"error\":{\"message\":%q,\"type\":%q,\"code\":%q}}\n\n", e.Message, e.Type, *e.Code)
		return n, nil
	}
	return n, err
}

// supervise starts the worker, restarts it whenever it exits, and stops it
// on Close.
func (s *Isolated) supervise() {
	defer close(s.done)
	// the parent-death signal follows the thread that started the
	// worker: keep this goroutine on one thread for the worker's life
	runtime.LockOSThread()
	failures := 0
	for {
		_ = os.Remove(s.sock)
		cmd := s.opts.Command(s.sock)
		setParentDeath(cmd)
		if err := cmd.Start(); err != nil {
			if !s.everUp {
				s.failErr = fmt.Errorf("serve: starting the worker process: %w", err)
				close(s.failed)
				return
			}
			fmt.Fprintf(s.opts.Log, "serve: starting the worker: %v\n", err)
			select {
			case <-s.stop:
				return
			case <-time.After(time.Second):
				continue
			}
		}
		fmt.Fprintf(s.opts.Log, "serve: worker %d started\n", cmd.Process.Pid)
		dead := make(chan struct{})
		s.mu.Lock()
		s.cmd, s.dead = cmd, dead
		s.mu.Unlock()
		var exitErr error
		go func() {
			exitErr = cmd.Wait()
			s.mu.Lock()
			if s.up { // requests from now on wait for the next worker
				s.up, s.ready = false, make(chan struct{})
			}
			s.mu.Unlock()
			close(dead)
		}()
		pollDone := make(chan bool, 1)
		go func() { pollDone <- s.pollReady(dead) }()
		select {
		case <-dead:
			wasUp := <-pollDone
			if s.isClosed() {
				return
			}
			if !wasUp && !s.everUp {
				// the first worker never got ready: a configuration
				// error (a missing file, a bad flag), not a crash
				s.failErr = fmt.Errorf("serve: the worker process exited before it was ready (%v)", exitErr)
				close(s.failed)
				return
			}
			s.everUp = s.everUp || wasUp
			s.restarts.Add(1)
			backoff := time.Duration(0)
			if !wasUp { // it crashed while loading: do not spin
				backoff = min(time.Second<<min(failures, 5), 30*time.Second)
				failures++
			} else {
				failures = 0
			}
			fmt.Fprintf(s.opts.Log, "serve: worker %d exited (%v); restarting\n", cmd.Process.Pid, exitErr)
			select {
			case <-s.stop:
				return
			case <-time.After(backoff):
			}
		case <-s.stop:
			_ = cmd.Process.Kill()
			<-dead
			<-pollDone
			return
		}
	}
}

// awaitDeath waits briefly for the current worker's exit to be seen, when
// a request failed because the worker went away: a client that retries
// on the error then waits for the next worker instead of reaching the
// dying one.
func (s *Isolated) awaitDeath() {
	s.mu.Lock()
	dead := s.dead
	s.mu.Unlock()
	if dead == nil {
		return
	}
	select {
	case <-dead:
	case <-time.After(300 * time.Millisecond):
	}
}

func (s *Isolated) isClosed() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// pollReady asks the worker's /health until it answers 200, then marks it
// ready; it gives up when the worker dies or the server closes. It
// reports whether the worker became ready.
func (s *Isolated) pollReady(dead chan struct{}) bool {
	for {
		resp, err := s.hc.Get("http://worker/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.mu.Lock()
				select {
				case <-dead: // answered, then died
				default:
					if !s.up {
						s.up = true
						close(s.ready)
					}
				}
				s.mu.Unlock()
				return true
			}
		}
		select {
		case <-dead:
			return false
		case <-s.stop:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ServeHTTP forwards the request to the worker, waiting for it when it is
// (re)starting; /health answers 503 meanwhile.
func (s *Isolated) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ready, up := s.ready, s.up
	s.mu.Unlock()
	if !up {
		if r.URL.Path == "/health" {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "loading"})
			return
		}
		t := time.NewTimer(s.opts.ReadyTimeout)
		defer t.Stop()
		select {
		case <-ready:
		case <-r.Context().Done():
			return
		case <-s.stop:
			writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Message: "the server is shutting down"})
			return
		case <-s.failed:
			writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Message: s.failErr.Error()})
			return
		case <-t.C:
			writeError(w, &apiError{status: http.StatusServiceUnavailable, Type: "server_error", Message: "the model worker did not become ready in time"})
			return
		}
	}
	if r.Body != nil && r.ContentLength >= 0 && r.ContentLength <= maxRetryBody {
		// kept, so that a request the worker never received (it had just
		// died) can be sent again to the next one
		b, err := io.ReadAll(io.LimitReader(r.Body, maxRetryBody+1))
		if err != nil {
			writeError(w, &apiError{status: http.StatusBadRequest, Type: "invalid_request_error", Message: "reading the request body: " + err.Error()})
			return
		}
		if int64(len(b)) <= maxRetryBody {
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
			r.ContentLength = int64(len(b))
		} else {
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
		}
	}
	s.proxy.ServeHTTP(w, r)
}

// maxRetryBody is the largest request body kept for a second attempt.
const maxRetryBody = 8 << 20

// dialRetry sends a request again, once, when the worker could not be
// reached at all (it had died and the supervisor had not yet noticed): the
// request waits for the next worker instead of failing.
type dialRetry struct {
	s    *Isolated
	base http.RoundTripper
}

func (t *dialRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	var op *net.OpError
	if err == nil || req.GetBody == nil || !errors.As(err, &op) || op.Op != "dial" {
		return resp, err
	}
	if !t.s.waitReachable(req.Context()) {
		return nil, err
	}
	body, gerr := req.GetBody()
	if gerr != nil {
		return nil, err
	}
	r2 := req.Clone(req.Context())
	r2.Body = body
	return t.base.RoundTrip(r2)
}

// waitReachable waits until a worker is ready and its socket answers.
func (s *Isolated) waitReachable(ctx context.Context) bool {
	deadline := time.Now().Add(s.opts.ReadyTimeout)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		up, ready := s.up, s.ready
		s.mu.Unlock()
		if !up {
			select {
			case <-ready:
			case <-ctx.Done():
				return false
			case <-s.stop:
				return false
			case <-time.After(time.Until(deadline)):
				return false
			}
		}
		var d net.Dialer
		if c, err := d.DialContext(ctx, "unix", s.sock); err == nil {
			c.Close()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// Failed is closed when the first worker exited before it was ready (the
// models could not be loaded); Err then says why. The server restarts
// only workers that were ready once.
func (s *Isolated) Failed() <-chan struct{} { return s.failed }

// Err is why the worker could not be started (after Failed is closed).
func (s *Isolated) Err() error {
	select {
	case <-s.failed:
		return s.failErr
	default:
		return nil
	}
}

// WorkerPID is the current worker's process id (0 before the first start).
func (s *Isolated) WorkerPID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Restarts counts the worker's unexpected exits.
func (s *Isolated) Restarts() int64 { return s.restarts.Load() }

// Close stops the worker, waits for it and removes its socket directory.
func (s *Isolated) Close() error {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return os.RemoveAll(s.dir)
}
