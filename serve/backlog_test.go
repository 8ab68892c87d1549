package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/serve"
)

// gateWriter blocks every write after the first n until open is closed
// (or the request ends), as a client that stopped reading does once the
// socket's buffers are full.
type gateWriter struct {
	http.ResponseWriter
	ctx    context.Context
	writes *atomic.Int64
	n      int64
	open   chan struct{}
}

func (w gateWriter) Write(b []byte) (int, error) {
	if w.writes.Add(1) > w.n {
		select {
		case <-w.open:
		case <-w.ctx.Done():
			return 0, w.ctx.Err()
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w gateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestStalledReaderHoldsSequence: a streaming client that stops reading
// does not make the server generate ahead without bound (its sequence is
// held once 64 events wait, keeping its slot), and when it reads again the
// generation goes on to the same text as an unhindered request's; a
// stream beside it is not held.
func TestStalledReaderHoldsSequence(t *testing.T) {
	_, dec, tok := stories(t)
	s := serve.New(nil)
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	var writes atomic.Int64
	open := make(chan struct{})
	gated := atomic.Bool{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && gated.CompareAndSwap(true, false) {
			w = gateWriter{ResponseWriter: w, ctx: r.Context(), writes: &writes, n: 5, open: open}
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	defer s.Close()
	url := ts.URL

	const body = `{"model":"stories","prompt":"The cat","max_tokens":400,"temperature":1,"seed":7,"stream":true,"logit_bias":{"1":-100,"2":-100}}`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	want, err := stream(ctx, url+"/v1/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	if want.finish != "length" || want.chunks < 300 {
		t.Fatalf("unhindered: finish %q, %d chunks", want.finish, want.chunks)
	}
	generated := func() float64 {
		return metricValue(t, metricsText(t, url), `switchyard_serve_generated_tokens_total{model="stories"}`)
	}
	before := generated()

	gated.Store(true)
	done := make(chan streamResult, 1)
	errc := make(chan error, 1)
	go func() {
		r, err := stream(ctx, url+"/v1/completions", body)
		errc <- err
		done <- r
	}()
	// the gated stream stalls; wait until the server stops generating for it
	var held float64
	for end := time.Now().Add(30 * time.Second); ; {
		time.Sleep(200 * time.Millisecond)
		g := generated() - before
		if g == held && g > 0 {
			break
		}
		held = g
		if time.Now().After(end) {
			t.Fatalf("generation did not settle: %v tokens", g)
		}
	}
	if held >= 200 {
		t.Fatalf("the server generated %v of 400 tokens for a client that read 5 writes", held)
	}
	// a stream beside the held one runs to its end
	beside, err := stream(ctx, url+"/v1/completions", body)
	if err != nil || beside.text != want.text {
		t.Fatalf("beside the held stream: %v, text equal %v", err, beside.text == want.text)
	}
	close(open)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.text != want.text || got.finish != "length" || !got.done {
		t.Fatalf("resumed stream: finish %q done %v, text equal %v", got.finish, got.done, got.text == want.text)
	}
	t.Logf("held after %v generated tokens; resumed to %d chunks", held, got.chunks)
}
