package serve_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

const workerSocketEnv = "SWITCHYARD_TEST_WORKER_SOCKET"

// slowPieces makes every streamed token take 5 ms, so that a stream lasts
// long enough to be cut in the middle.
type slowPieces struct{ llm.Tokenizer }

func (s slowPieces) Piece(prev, next int) string {
	time.Sleep(5 * time.Millisecond)
	return s.Tokenizer.Piece(prev, next)
}

// TestIsolatedWorkerProcess is the worker half of TestIsolatedRestartsWorker:
// run as a child process, it serves stories260K on the socket it is given
// until it is killed.
func TestIsolatedWorkerProcess(t *testing.T) {
	sock := os.Getenv(workerSocketEnv)
	if sock == "" {
		t.Skip("the worker process of TestIsolatedRestartsWorker (runs only as its child)")
	}
	_, dec, tok := stories(t)
	s := serve.New(nil)
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: slowPieces{tok}, ContextLength: 512}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatal(http.Serve(ln, s))
}

// TestIsolatedRestartsWorker: with the model in a worker process, kill -9
// of the worker mid-stream ends that stream with an error event within a
// second, the worker is started again, the next request succeeds, and
// Close leaves no process and no socket behind (issue #28, --isolate).
func TestIsolatedRestartsWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	stories(t) // skips or fails here when the shared test data is absent
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	iso, err := serve.NewIsolated(serve.IsolateOptions{
		Command: func(sock string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestIsolatedWorkerProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), workerSocketEnv+"="+sock)
			return cmd
		},
		ReadyTimeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			iso.Close()
		}
	}()
	ts := httptest.NewServer(iso)
	defer ts.Close()

	// the first request waits for the worker to load
	if code, v := post(t, ts.URL+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":4,"temperature":0}`); code != http.StatusOK {
		t.Fatalf("first request: %d %v", code, v)
	}
	pid := iso.WorkerPID()

	// a long stream, its worker killed after the first chunk
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/completions",
		strings.NewReader(`{"model":"stories","prompt":"Once upon a time","max_tokens":400,"temperature":0,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var killed time.Time
	var chunks int
	var errEvent, done bool
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		if line == "data: [DONE]" {
			done = true
			continue
		}
		if strings.Contains(line, `"error"`) {
			errEvent = true
			continue
		}
		chunks++
		if chunks == 1 {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = time.Now()
		}
	}
	ended := time.Since(killed)
	if killed.IsZero() {
		t.Fatal("the stream ended before its first chunk")
	}
	if done || !errEvent {
		t.Fatalf("the stream whose worker was killed ended with [DONE]=%v, error event=%v after %d chunks; want an error event", done, errEvent, chunks)
	}
	t.Logf("stream killed after its first chunk: error event %v later (%d chunks in all)", ended, chunks)
	if ended > time.Second {
		t.Fatalf("the stream ended %v after its worker was killed; want within 1 s", ended)
	}

	// the next request is served by a new worker
	if code, v := post(t, ts.URL+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":4,"temperature":0}`); code != http.StatusOK {
		t.Fatalf("request after the kill: %d %v", code, v)
	}
	pid2 := iso.WorkerPID()
	if pid2 == pid || iso.Restarts() != 1 {
		t.Fatalf("worker %d → %d, %d restarts; want a new worker after one restart", pid, pid2, iso.Restarts())
	}

	// nothing left behind
	if err := iso.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	for _, p := range []int{pid, pid2} {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d still exists after Close (kill 0: %v)", p, err)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("Close left %d entries in the temporary directory (%s…)", len(left), left[0].Name())
	}
}
