package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/serve"
)

// openFDs counts this process's open file descriptors (-1 where
// /proc/self/fd is not there).
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}

// soakKeys are the request fields the soak's random bodies draw from:
// every one the decoder knows and a few it does not.
var soakKeys = []string{
	"model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed", "stop",
	"stream", "stream_options", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "n",
	"echo", "best_of", "user", "suffix", "response_format", "tools", "tool_choice", "parallel_tool_calls",
	"min_p", "functions", "service_tier", "store", "metadata", "", "\u00e9", "model ",
}

// randValue is a random JSON value of at most depth levels.
func randValue(rng *rand.Rand, depth int) any {
	k := rng.IntN(10)
	if depth <= 0 {
		k = rng.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return []float64{0, 1, -1, 0.5, 2, 3, 1e9, -1e18, 1e300, 4096, 65536, 2.5e-7, 100}[rng.IntN(13)]
	case 3:
		return rng.NormFloat64() * 10
	case 4:
		return []string{"", "stories", "Once upon a time", "json_object", "json_schema", "text", "auto", "none", "required", "\x00", "\ufffd\ud7ff", strings.Repeat("a", rng.IntN(300))}[rng.IntN(12)]
	case 5:
		return rng.Int64() - rng.Int64()
	case 6, 7:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randValue(rng, depth-1)
		}
		return a
	default:
		o := map[string]any{}
		for range rng.IntN(4) {
			o[[]string{"type", "role", "content", "text", "include_usage", "json_schema", "schema", "name", "function", "5", "-1", "x"}[rng.IntN(12)]] = randValue(rng, depth-1)
		}
		return o
	}
}

// soakBody is one random request body for chat or completions: a valid
// one with random parameters, random keys with random values, a random
// JSON value, a valid one truncated or with a byte flipped. stream says
// whether it asks to stream.
func soakBody(rng *rand.Rand, chat bool) (body []byte, stream bool) {
	req := map[string]any{"model": "stories", "max_tokens": 1 + rng.IntN(40)}
	if chat {
		req["messages"] = []any{map[string]any{"role": "system", "content": "Once upon"}, map[string]any{"role": "user", "content": " a time"}}
	} else {
		req["prompt"] = []string{"Once upon a time", "The cat", "Lily", "A", ""}[rng.IntN(5)]
	}
	stream = rng.IntN(2) == 0
	req["stream"] = stream
	if stream && rng.IntN(2) == 0 {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	// random parameters within and beyond their ranges
	for range rng.IntN(4) {
		switch rng.IntN(9) {
		case 0:
			req["temperature"] = rng.Float64() * 2.5
		case 1:
			req["top_p"] = rng.Float64() * 1.2
		case 2:
			req["top_k"] = rng.IntN(60) - 5
		case 3:
			req["seed"] = rng.Int64()
		case 4:
			req["stop"] = []string{" the", ".", "zz"}[:rng.IntN(4)]
		case 5:
			req["logit_bias"] = map[string]any{fmt.Sprint(rng.IntN(600) - 10): rng.Float64()*250 - 125}
		case 6:
			req["presence_penalty"], req["frequency_penalty"] = rng.Float64()*5-2.5, rng.Float64()*5-2.5
		case 7:
			req["logprobs"] = rng.IntN(8) - 1
		case 8:
			req["max_tokens"] = rng.IntN(700) - 10
		}
	}
	switch rng.IntN(6) {
	case 0: // random keys, random values
		for range 1 + rng.IntN(4) {
			req[soakKeys[rng.IntN(len(soakKeys))]] = randValue(rng, 3)
		}
	case 1: // a random JSON value
		b, _ := json.Marshal(randValue(rng, 5))
		return b, stream
	}
	b, _ := json.Marshal(req)
	switch rng.IntN(5) {
	case 0:
		b = b[:rng.IntN(len(b))]
	case 1:
		b[rng.IntN(len(b))] ^= byte(1 + rng.IntN(255))
	}
	return b, stream
}

// rawAbort opens a connection and leaves it half-way: headers cut off, a
// body shorter than its Content-Length, or a streamed reply read in part.
func rawAbort(rng *rand.Rand, addr string, body []byte) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	head := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	switch rng.IntN(3) {
	case 0:
		_, _ = io.WriteString(c, head[:rng.IntN(len(head))])
	case 1:
		_, _ = io.WriteString(c, head)
		_, _ = c.Write(body[:rng.IntN(len(body)+1)])
	default:
		_, _ = io.WriteString(c, head)
		_, _ = c.Write(body)
		_, _ = bufio.NewReader(c).ReadString('\n')
	}
	time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
}

// TestSoakGarbageAndAborts: for a while (SWITCHYARD_SERVE_SOAK, a
// duration, default 3s) eight clients send random, truncated and valid
// requests with random parameters to both endpoints, streamed and not,
// and abort requests and connections at random points; the server answers
// every one (no 5xx but 503 when full), still gives the golden greedy
// continuation afterwards, and once it and the clients close, no goroutine
// and no file descriptor is left behind.
func TestSoakGarbageAndAborts(t *testing.T) {
	g, dec, tok := stories(t)
	d := 3 * time.Second
	if v := os.Getenv("SWITCHYARD_SERVE_SOAK"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	tr := &http.Transport{}
	hc := &http.Client{Timeout: 60 * time.Second, Transport: tr}
	runtime.GC()
	before, fdsBefore := runtime.NumGoroutine(), openFDs()
	s := serve.New(&serve.Options{MaxBatch: 4, MaxQueue: 16, MaxBodyBytes: 8 << 10, PrefixCacheBytes: 4 << 20})
	m := &serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512,
		Chat: func(ms []serve.Message) ([]int, error) {
			var sb strings.Builder
			for _, m := range ms {
				sb.WriteString(m.Content)
			}
			return tok.Encode(sb.String(), true)
		}}
	if err := s.Add(m); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	ts := httptest.NewServer(s)
	addr := strings.TrimPrefix(ts.URL, "http://")
	var mu sync.Mutex
	var bad []string
	counts := map[string]int{}
	var requests, aborted, rawConns, clientErrs atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), uint64(time.Now().UnixNano())))
			for time.Now().Before(stop) {
				chat := rng.IntN(3) == 0
				body, streamed := soakBody(rng, chat)
				if rng.IntN(12) == 0 {
					rawConns.Add(1)
					rawAbort(rng, addr, body)
					continue
				}
				path := "/v1/completions"
				if chat {
					path = "/v1/chat/completions"
				}
				method := http.MethodPost
				if rng.IntN(25) == 0 {
					method, path = http.MethodGet, []string{"/metrics", "/v1/models", "/health", "/v1/models/stories", "/", "/nope"}[rng.IntN(6)]
				}
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(3) == 0 {
					aborted.Add(1)
					time.AfterFunc(time.Duration(rng.IntN(40))*time.Millisecond, cancel) // abort mid-way
				}
				req, _ := http.NewRequestWithContext(ctx, method, ts.URL+path, bytes.NewReader(body))
				requests.Add(1)
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						clientErrs.Add(1)
						mu.Lock()
						bad = append(bad, fmt.Sprintf("%s %s %q: %v", method, path, body, err))
						mu.Unlock()
					}
					cancel()
					continue
				}
				raw, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				key := fmt.Sprint(resp.StatusCode)
				if streamed && resp.StatusCode == 200 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					key += " stream"
					if rerr == nil && !bytes.Contains(raw, []byte("data: [DONE]")) {
						key += " (ended by an error event)"
					}
				}
				mu.Lock()
				counts[key]++
				if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
					bad = append(bad, fmt.Sprintf("%d for %s %q: %s", resp.StatusCode, path, body, raw))
				}
				if rerr == nil && resp.StatusCode >= 400 && !bytes.Contains(raw, []byte(`"error"`)) {
					bad = append(bad, fmt.Sprintf("%d without an error object for %q: %s", resp.StatusCode, body, raw))
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s: %d;", k, counts[k])
	}
	t.Logf("soak of %v: %d HTTP requests (%d aborted by the client at a random point), %d raw connections left half-way, %d client errors; answers by status:%s",
		d, requests.Load(), aborted.Load(), rawConns.Load(), clientErrs.Load(), sb.String())
	if len(bad) > 20 {
		bad = append(bad[:20], fmt.Sprintf("... and %d more", len(bad)-20))
	}
	for _, b := range bad {
		t.Error(b)
	}
	if counts["200"]+counts["200 stream"] == 0 || counts["400"] == 0 {
		t.Fatalf("answers %v: want both 200s and 400s", counts)
	}
	// still serving, and right
	code, v := post(t, ts.URL+"/v1/completions", goldenBody(g, false))
	if code != 200 || g.Prompt+v["choices"].([]any)[0].(map[string]any)["text"].(string) != g.Text {
		t.Fatalf("after the soak: %d %v", code, v)
	}
	ts.Close()
	_ = s.Close()
	hc.CloseIdleConnections()
	client.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before || openFDs() > fdsBefore {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before; %d open files, %d before:\n%s", runtime.NumGoroutine(), before, openFDs(), fdsBefore, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("goroutines %d before, %d after; open files %d before, %d after", before, runtime.NumGoroutine(), fdsBefore, openFDs())
}
