package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

type golden struct {
	Prompt       string `json:"prompt"`
	Steps        int    `json:"steps"`
	PromptTokens []int  `json:"prompt_tokens"`
	Text         string `json:"text"`
}

var (
	loadOnce sync.Once
	loaded   struct {
		g   golden
		dec *llm.Decoder
		tok llm.Tokenizer
		err error
	}
)

// stories loads stories260K_kv.onnx on cpu once for the package's tests
// and its golden greedy output.
func stories(t testing.TB) (golden, *llm.Decoder, llm.Tokenizer) {
	t.Helper()
	dir := shared.Path(t, "testdata/llm/stories260K")
	loadOnce.Do(func() {
		raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
		if err != nil {
			loaded.err = err
			return
		}
		if loaded.err = json.Unmarshal(raw, &loaded.g); loaded.err != nil {
			return
		}
		if loaded.tok, loaded.err = llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512); loaded.err != nil {
			return
		}
		m, err := switchyard.Open(context.Background(), filepath.Join(dir, "stories260K_kv.onnx"), &switchyard.OpenOptions{Backends: []string{"cpu"}})
		if err != nil {
			loaded.err = err
			return
		}
		loaded.dec, loaded.err = llm.NewDecoder(m)
	})
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.g, loaded.dec, loaded.tok
}

// start serves stories260K (as "stories") on 127.0.0.1 for one test.
func start(t *testing.T, opts *serve.Options, mutate func(*serve.Model)) (*serve.Server, string) {
	t.Helper()
	_, dec, tok := stories(t)
	s := serve.New(opts)
	m := &serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}
	if mutate != nil {
		mutate(m)
	}
	if err := s.Add(m); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	return s, listen(t, s)
}

// listen serves s on 127.0.0.1 until the test ends.
func listen(t testing.TB, s *serve.Server) string {
	ts := httptest.NewServer(s) // binds 127.0.0.1
	t.Cleanup(func() {
		ts.Close()
		_ = s.Close()
	})
	return ts.URL
}

var client = &http.Client{Timeout: 120 * time.Second} // bounded, with room for -race on a loaded machine

func post(t testing.TB, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %d %q is not JSON: %v", url, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, v
}

// streamed posts a streaming request and returns the text of its chunks,
// the last finish_reason, the usage chunk (if any), and whether [DONE]
// ended it.
type streamResult struct {
	text   string
	finish string
	usage  map[string]any
	done   bool
	chunks int
}

func stream(ctx context.Context, url, body string) (streamResult, error) {
	var r streamResult
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return r, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return r, fmt.Errorf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return r, fmt.Errorf("line %q is not a data line", line)
		}
		if r.done {
			return r, fmt.Errorf("data after [DONE]: %q", data)
		}
		if data == "[DONE]" {
			r.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
				Delta        struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return r, fmt.Errorf("chunk %q: %v", data, err)
		}
		if c.Error != nil {
			return r, fmt.Errorf("error event: %v", c.Error)
		}
		r.chunks++
		if c.Usage != nil {
			r.usage = c.Usage
		}
		for _, ch := range c.Choices {
			r.text += ch.Text + ch.Delta.Content
			if ch.FinishReason != nil {
				r.finish = *ch.FinishReason
			}
		}
	}
	return r, sc.Err()
}

// goldenBody is the greedy completions request whose answer is the
// golden continuation: 64 positions, the prompt's 5 (BOS included) and
// 60 generated, the last not fed.
func goldenBody(g golden, streamed bool) string {
	n := g.Steps - len(g.PromptTokens) + 1
	extra := ""
	if streamed {
		extra = `,"stream":true,"stream_options":{"include_usage":true}`
	}
	return fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":%d,"temperature":0%s}`, g.Prompt, n, extra)
}

func TestGoldenCompletion(t *testing.T) {
	g, _, _ := stories(t)
	_, url := start(t, nil, nil)
	want := strings.TrimPrefix(g.Text, g.Prompt)
	code, v := post(t, url+"/v1/completions", goldenBody(g, false))
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, v)
	}
	choice := v["choices"].([]any)[0].(map[string]any)
	if choice["text"] != want || choice["finish_reason"] != "length" {
		t.Fatalf("text %q (%v), want %q (length)", choice["text"], choice["finish_reason"], want)
	}
	u := v["usage"].(map[string]any)
	if u["prompt_tokens"] != float64(len(g.PromptTokens)) || u["completion_tokens"] != float64(g.Steps-len(g.PromptTokens)+1) {
		t.Fatalf("usage %v", u)
	}
	if v["object"] != "text_completion" || !strings.HasPrefix(v["id"].(string), "cmpl-") {
		t.Fatalf("response %v", v)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := stream(ctx, url+"/v1/completions", goldenBody(g, true))
	if err != nil {
		t.Fatal(err)
	}
	if r.text != want || r.finish != "length" || !r.done || r.usage == nil || r.usage["completion_tokens"] != float64(60) {
		t.Fatalf("streamed %q finish %q done %v usage %v; want %q", r.text, r.finish, r.done, r.usage, want)
	}
	if r.chunks < 10 {
		t.Fatalf("%d chunks: not streamed token by token", r.chunks)
	}
}

// TestGoldenBesideConcurrentStreams: the golden greedy continuation,
// streamed and whole, while three sampled streams run beside it.
func TestGoldenBesideConcurrentStreams(t *testing.T) {
	g, _, _ := stories(t)
	s, url := start(t, &serve.Options{MaxBatch: 4}, nil)
	_ = s
	want := strings.TrimPrefix(g.Text, g.Prompt)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 3 {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"stories","prompt":"The dog %d","max_tokens":100,"temperature":1,"seed":%d,"stream":true}`, i, i)
			r, err := stream(ctx, url+"/v1/completions", body)
			if err == nil && (r.finish == "" || !r.done) {
				err = fmt.Errorf("stream %d ended without a finish: %+v", i, r)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	for _, streamed := range []bool{true, false} {
		wg.Go(func() {
			time.Sleep(20 * time.Millisecond) // join mid-generation
			if streamed {
				r, err := stream(ctx, url+"/v1/completions", goldenBody(g, true))
				if err == nil && r.text != want {
					err = fmt.Errorf("streamed beside others: %q, want %q", r.text, want)
				}
				if err != nil {
					errs <- err
				}
				return
			}
			code, v := post(t, url+"/v1/completions", goldenBody(g, false))
			if code != http.StatusOK {
				errs <- fmt.Errorf("status %d: %v", code, v)
				return
			}
			if got := v["choices"].([]any)[0].(map[string]any)["text"]; got != want {
				errs <- fmt.Errorf("beside others: %q, want %q", got, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := metricsText(t, url)
	if !strings.Contains(m, `switchyard_serve_round_sequences_bucket{model="stories",le="4"}`) {
		t.Fatalf("no round-size histogram in /metrics")
	}
}

func metricsText(t *testing.T, url string) string {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	return string(b)
}

// metricValue is the value of one series line in /metrics text.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var v float64
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}

func TestRefusals(t *testing.T) {
	_, url := start(t, &serve.Options{MaxBodyBytes: 4096}, nil)
	cases := []struct {
		name, path, body string
		code             int
		errCode, param   string
	}{
		{"unsupported parameter", "/v1/completions", `{"model":"stories","prompt":"a","suffix":"b"}`, 400, "unsupported_parameter", "suffix"},
		{"unsupported chat parameter", "/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"functions":[]}`, 400, "unsupported_parameter", "functions"},
		{"logprobs beyond 5", "/v1/completions", `{"model":"stories","prompt":"a","logprobs":6}`, 400, "invalid_value", "logprobs"},
		{"top_logprobs without logprobs", "/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}],"top_logprobs":2}`, 400, "invalid_value", "top_logprobs"},
		{"n", "/v1/completions", `{"model":"stories","prompt":"a","n":2}`, 400, "unsupported_parameter", "n"},
		{"stream option", "/v1/completions", `{"model":"stories","prompt":"a","stream":true,"stream_options":{"foo":1}}`, 400, "unsupported_parameter", "stream_options.foo"},
		{"malformed JSON", "/v1/completions", `{"model":"stories","prompt":`, 400, "invalid_json", ""},
		{"not an object", "/v1/completions", `[1,2]`, 400, "invalid_json", ""},
		{"bad type", "/v1/completions", `{"model":"stories","prompt":"a","temperature":"hot"}`, 400, "invalid_value", "temperature"},
		{"out of range", "/v1/completions", `{"model":"stories","prompt":"a","top_p":1.5}`, 400, "invalid_value", "top_p"},
		{"bias beyond vocabulary", "/v1/completions", `{"model":"stories","prompt":"a","logit_bias":{"9999":1}}`, 400, "invalid_value", "logit_bias"},
		{"unknown model", "/v1/completions", `{"model":"gpt-5","prompt":"a"}`, 404, "model_not_found", "model"},
		{"context overflow", "/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":600}`, 400, "context_length_exceeded", "max_tokens"},
		{"no chat template", "/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"hi"}]}`, 400, "chat_template_missing", "model"},
		{"body too large", "/v1/completions", `{"model":"stories","prompt":"` + strings.Repeat("a", 5000) + `"}`, 413, "request_too_large", ""},
		{"unknown endpoint", "/v1/embeddings", `{}`, 404, "not_found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, v := post(t, url+c.path, c.body)
			e, _ := v["error"].(map[string]any)
			if code != c.code || e == nil || e["code"] != c.errCode || e["type"] == nil || e["message"] == "" {
				t.Fatalf("%d %v, want %d code %s", code, v, c.code, c.errCode)
			}
			if c.param != "" && e["param"] != c.param {
				t.Fatalf("param %v, want %s", e["param"], c.param)
			}
		})
	}
	// a long prompt alone overflows the context; one far too long is
	// refused before it is tokenized (the llama2.c tokenizer's time grows
	// with the square of the text: 40 KB took 80 s)
	_, url = start(t, &serve.Options{MaxBodyBytes: 1 << 20}, nil)
	for _, n := range []int{200, 50000} {
		long := strings.Repeat("Once upon a time ", n)
		t0 := time.Now()
		code, v := post(t, url+"/v1/completions", `{"model":"stories","prompt":"`+long+`"}`)
		if e, _ := v["error"].(map[string]any); code != 400 || e["code"] != "context_length_exceeded" {
			t.Fatalf("long prompt: %d %v", code, v)
		}
		if n == 50000 && time.Since(t0) > 5*time.Second {
			t.Fatalf("a %d-byte prompt took %v to refuse", len(long), time.Since(t0))
		}
	}
}

func TestHealthModelsMetrics(t *testing.T) {
	_, dec, tok := stories(t)
	s := serve.New(nil)
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	get := func(path string) (int, string) {
		resp, err := client.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("/health while loading: %d", code)
	}
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}); err == nil {
		t.Fatal("a second model of the same name was accepted")
	}
	s.SetReady()
	if code, _ := get("/health"); code != http.StatusOK {
		t.Fatalf("/health when ready: %d", code)
	}
	code, body := get("/v1/models")
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "stories" {
		t.Fatalf("/v1/models: %d %s", code, body)
	}
	if code, _ := get("/v1/models/stories"); code != 200 {
		t.Fatalf("/v1/models/stories: %d", code)
	}
	if code, _ := get("/v1/models/nope"); code != 404 {
		t.Fatalf("/v1/models/nope: %d", code)
	}
	if code, _ := get("/v1/completions"); code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /v1/completions: %d", code)
	}
	if code, v := post(t, ts.URL+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":8,"temperature":0}`); code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	m := metricsText(t, ts.URL)
	for _, series := range []string{
		`switchyard_serve_requests_total{code="200",endpoint="/v1/completions",model="stories"}`,
		`switchyard_serve_generated_tokens_total{model="stories"}`,
		`switchyard_serve_prompt_tokens_total{model="stories"}`,
		`switchyard_serve_time_to_first_token_seconds_count{model="stories"}`,
		`switchyard_serve_decode_tokens_per_second_count{model="stories"}`,
		`switchyard_serve_queue_length{model="stories"}`,
		`switchyard_serve_kv_cache_bytes{holder="prefix_cache",model="stories"}`,
		`switchyard_serve_prefix_cache_hit_ratio{model="stories"}`,
	} {
		metricValue(t, m, series)
	}
	if n := metricValue(t, m, `switchyard_serve_generated_tokens_total{model="stories"}`); n != 8 {
		t.Fatalf("%v tokens generated, want 8", n)
	}
	// the ONNX decoder is not batched: /metrics says so, and why
	if !strings.Contains(m, `switchyard_serve_decode_mode{mode="per_sequence",model="stories",reason="the decoder's caches grow by a new tensor each step`) {
		t.Fatalf("no per_sequence decode_mode with its reason in /metrics:\n%s", m)
	}
	// after Close: 503 at once, not a request left waiting
	_ = s.Close()
	if code, v := post(t, ts.URL+"/v1/completions", `{"model":"stories","prompt":"a","max_tokens":2}`); code != http.StatusServiceUnavailable {
		t.Fatalf("after Close: %d %v", code, v)
	}
	if code, _ := get("/health"); code != http.StatusServiceUnavailable {
		t.Fatalf("/health after Close: %d", code)
	}
}

// TestStopAndSeed: a stop sequence cuts the text before it, streamed or
// not; sampling with a seed repeats; penalties and logit_bias change the
// greedy text.
func TestStopAndSeed(t *testing.T) {
	g, _, _ := stories(t)
	_, url := start(t, nil, nil)
	want := strings.TrimPrefix(g.Text, g.Prompt)
	cut := want[:strings.Index(want, "Lily")]
	body := fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":60,"temperature":0,"stop":["Lily","zzz"]}`, g.Prompt)
	code, v := post(t, url+"/v1/completions", body)
	ch := v["choices"].([]any)[0].(map[string]any)
	if code != 200 || ch["text"] != cut || ch["finish_reason"] != "stop" {
		t.Fatalf("stop: %d %q %v, want %q", code, ch["text"], ch["finish_reason"], cut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := stream(ctx, url+"/v1/completions", strings.Replace(body, `"temperature":0`, `"temperature":0,"stream":true`, 1))
	if err != nil || r.text != cut || r.finish != "stop" {
		t.Fatalf("streamed stop: %q %q %v", r.text, r.finish, err)
	}
	sample := func(seed int) string {
		code, v := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time","max_tokens":40,"temperature":1,"top_p":0.9,"top_k":40,"seed":%d}`, seed))
		if code != 200 {
			t.Fatalf("%d %v", code, v)
		}
		return v["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	a, b, c := sample(7), sample(7), sample(8)
	if a != b {
		t.Fatalf("seed 7 twice: %q vs %q", a, b)
	}
	if a == c {
		t.Fatalf("seeds 7 and 8 gave the same text %q", a)
	}
	greedy := func(extra string) string {
		code, v := post(t, url+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":40,"temperature":0`+extra+`}`)
		if code != 200 {
			t.Fatalf("%d %v", code, v)
		}
		return v["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	plain := greedy("")
	if plain != want[:len(plain)] {
		t.Fatalf("greedy 40: %q", plain)
	}
	if p := greedy(`,"frequency_penalty":2,"presence_penalty":2`); p == plain {
		t.Fatal("penalties changed nothing")
	}
	// token 432 is "," after "time" (the golden's first generated token)
	if p := greedy(`,"logit_bias":{"432":-100}`); strings.HasPrefix(p, ",") {
		t.Fatalf("logit_bias -100 on ',' still gave %q", p)
	}
}

// TestCancelFreesSlot: with one slot, a stream whose client goes away
// frees it, and the queued request behind it is served.
func TestCancelFreesSlot(t *testing.T) {
	_, url := start(t, &serve.Options{MaxBatch: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions",
		strings.NewReader(`{"model":"stories","prompt":"Once upon a time","max_tokens":500,"temperature":1,"seed":1,"stream":true}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for range 3 { // a few events: it is generating
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	var code int
	var v map[string]any
	go func() {
		defer close(done)
		code, v = post(t, url+"/v1/completions", `{"model":"stories","prompt":"The cat","max_tokens":5,"temperature":0}`)
	}()
	time.Sleep(50 * time.Millisecond) // queued behind the stream
	cancel()
	resp.Body.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the queued request was not served after the stream's client went away")
	}
	if code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := metricsText(t, url)
		if metricValue(t, m, `switchyard_serve_cancelled_total{model="stories"}`) >= 1 && metricValue(t, m, `switchyard_serve_active_sequences{model="stories"}`) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cancellation not counted or a slot still held:\n%s", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPrefixCache: a request that extends an earlier one's prompt and
// reply reuses its cache (a hit, fewer tokens prefilled) and gives the
// text a server without the cache gives.
func TestPrefixCache(t *testing.T) {
	_, url := start(t, nil, nil)
	_, plainURL := start(t, &serve.Options{PrefixCacheBytes: -1}, nil)
	first := `{"model":"stories","prompt":"Once upon a time","max_tokens":20,"temperature":0}`
	code, v := post(t, url+"/v1/completions", first)
	if code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	turn := "Once upon a time" + v["choices"].([]any)[0].(map[string]any)["text"].(string) + " Then the dog"
	second := fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":20,"temperature":0}`, turn)
	code, v = post(t, url+"/v1/completions", second)
	code2, v2 := post(t, plainURL+"/v1/completions", second)
	if code != 200 || code2 != 200 {
		t.Fatalf("%d %v; %d %v", code, v, code2, v2)
	}
	a := v["choices"].([]any)[0].(map[string]any)["text"]
	b := v2["choices"].([]any)[0].(map[string]any)["text"]
	if a != b {
		t.Fatalf("with the prefix cache %q, without %q", a, b)
	}
	cached := v["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)
	prompt := v["usage"].(map[string]any)["prompt_tokens"].(float64)
	if cached < 20 || cached >= prompt {
		t.Fatalf("%v of %v prompt tokens from the cache", cached, prompt)
	}
	m := metricsText(t, url)
	if r := metricValue(t, m, `switchyard_serve_prefix_cache_hit_ratio{model="stories"}`); r != 0.5 {
		t.Fatalf("hit ratio %v, want 0.5", r)
	}
	if n := metricValue(t, m, `switchyard_serve_prefill_tokens_total{model="stories"}`); n != 5+prompt-cached {
		t.Fatalf("%v tokens prefilled, want %v", n, 5+prompt-cached)
	}
}

// TestChatTemplateHook: a model given a chat template answers chat
// requests, streamed and not, in the chat shapes.
func TestChatTemplateHook(t *testing.T) {
	g, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) {
		m.Chat = func(ms []serve.Message) ([]int, error) {
			var sb strings.Builder
			for _, m := range ms {
				sb.WriteString(m.Content)
			}
			return tok.Encode(sb.String(), true)
		}
	})
	want := strings.TrimPrefix(g.Text, g.Prompt)[:20]
	body := `{"model":"stories","messages":[{"role":"system","content":"Once upon"},{"role":"user","content":[{"type":"text","text":" a time"}]}],"max_tokens":60,"temperature":0}`
	code, v := post(t, url+"/v1/chat/completions", body)
	if code != 200 || v["object"] != "chat.completion" {
		t.Fatalf("%d %v", code, v)
	}
	msg := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["role"] != "assistant" || !strings.HasPrefix(msg["content"].(string), want) {
		t.Fatalf("message %v", msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := stream(ctx, url+"/v1/chat/completions", strings.Replace(body, `"temperature":0`, `"temperature":0,"stream":true`, 1))
	if err != nil || r.text != msg["content"] || r.finish != "length" || !r.done {
		t.Fatalf("streamed chat %q %q %v", r.text, r.finish, err)
	}
}

func TestBodyLimitAndDecoderSurviveGarbage(t *testing.T) {
	_, url := start(t, &serve.Options{MaxBodyBytes: 1 << 10}, nil)
	for _, body := range []string{"", "null", "{}", `{"model":null}`, "\x00\xff", `{"model":"stories","prompt":"a"} {}`, strings.Repeat("[", 2000)} {
		resp, err := client.Post(url+"/v1/completions", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 && resp.StatusCode != 413 {
			t.Fatalf("%q: %d", body, resp.StatusCode)
		}
	}
}

// TestManyClientsAndQueueLimit: 64 concurrent clients on 4 slots are all
// served (the rest queue); with a queue of 1 behind one slot, a third
// request gets 503 with Retry-After.
func TestManyClientsAndQueueLimit(t *testing.T) {
	_, url := start(t, &serve.Options{MaxBatch: 4}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			code, v := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"stories","prompt":"Tom had %d","max_tokens":8,"temperature":0.5,"seed":%d}`, i, i))
			if code != 200 || v["usage"].(map[string]any)["completion_tokens"].(float64) < 1 {
				errs <- fmt.Errorf("client %d: %d %v", i, code, v)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := metricsText(t, url)
	if n := metricValue(t, m, `switchyard_serve_requests_total{code="200",endpoint="/v1/completions",model="stories"}`); n != 64 {
		t.Fatalf("%v requests answered 200, want 64", n)
	}

	_, url = start(t, &serve.Options{MaxBatch: 1, MaxQueue: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	long := `{"model":"stories","prompt":"Once upon a time","max_tokens":400,"temperature":1,"seed":3,"stream":true,"logit_bias":{"1":-100}}` // no early end
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(long))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil { // generating
		t.Fatal(err)
	}
	req2, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(long))
	go func() {
		if r, err := client.Do(req2); err == nil {
			r.Body.Close()
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for metricValue(t, metricsText(t, url), `switchyard_serve_queue_length{model="stories"}`) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second request never queued")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r3, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(long))
	if err != nil {
		t.Fatal(err)
	}
	r3.Body.Close()
	if r3.StatusCode != http.StatusServiceUnavailable || r3.Header.Get("Retry-After") == "" {
		t.Fatalf("a request beyond the queue: %d (Retry-After %q)", r3.StatusCode, r3.Header.Get("Retry-After"))
	}
}

// TestLogprobs: greedy tokens are their distribution's most likely, the
// tokens' texts make up the text, whole and streamed, completions and chat.
func TestLogprobs(t *testing.T) {
	g, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) {
		m.Chat = func(ms []serve.Message) ([]int, error) { return tok.Encode(ms[len(ms)-1].Content, true) }
	})
	body := fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":12,"temperature":0,"logprobs":3,"stop":"Lily"}`, g.Prompt)
	code, v := post(t, url+"/v1/completions", body)
	if code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	ch := v["choices"].([]any)[0].(map[string]any)
	lp := ch["logprobs"].(map[string]any)
	tokens, lps, tops, offs := lp["tokens"].([]any), lp["token_logprobs"].([]any), lp["top_logprobs"].([]any), lp["text_offset"].([]any)
	if len(tokens) != 10 || len(lps) != 10 || len(tops) != 10 || len(offs) != 10 {
		t.Fatalf("%d tokens for %q (stopped before Lily): %v", len(tokens), ch["text"], lp)
	}
	var sb strings.Builder
	for i := range tokens {
		if int(offs[i].(float64)) != sb.Len() {
			t.Fatalf("token %d at offset %v, want %d", i, offs[i], sb.Len())
		}
		sb.WriteString(tokens[i].(string))
		top := tops[i].(map[string]any)
		best := math.Inf(-1)
		for _, x := range top {
			best = math.Max(best, x.(float64))
		}
		if len(top) < 1 || len(top) > 3 || lps[i].(float64) > 0 || math.Abs(best-lps[i].(float64)) > 1e-9 {
			t.Fatalf("token %d: logprob %v, top %v", i, lps[i], top)
		}
	}
	if !strings.HasPrefix(sb.String(), ch["text"].(string)) {
		t.Fatalf("tokens %q, text %q", sb.String(), ch["text"])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chat := `{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":8,"temperature":0,"logprobs":true,"top_logprobs":2,"stream":true}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", strings.NewReader(chat))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var text, fromTokens strings.Builder
	n := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				Logprobs *struct {
					Content []struct {
						Token       string  `json:"token"`
						Logprob     float64 `json:"logprob"`
						Bytes       []byte  `json:"-"`
						TopLogprobs []struct {
							Logprob float64 `json:"logprob"`
						} `json:"top_logprobs"`
					} `json:"content"`
				} `json:"logprobs"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.Logprobs == nil {
				t.Fatalf("a chunk without logprobs: %s", data)
			}
			for _, e := range ch.Logprobs.Content {
				n++
				fromTokens.WriteString(e.Token)
				if len(e.TopLogprobs) != 2 || e.TopLogprobs[0].Logprob != e.Logprob {
					t.Fatalf("greedy token %q: %v, top %v", e.Token, e.Logprob, e.TopLogprobs)
				}
			}
		}
	}
	if n != 8 || text.String() != fromTokens.String() || text.String() != strings.TrimPrefix(g.Text, g.Prompt)[:text.Len()] {
		t.Fatalf("%d tokens %q, text %q", n, fromTokens.String(), text.String())
	}
}

// TestChatPage: / serves the embedded chat page — one HTML file that
// fetches nothing from elsewhere, uses the streaming endpoints and has a
// stop button — and /v1/models tells it the placement.
func TestChatPage(t *testing.T) {
	_, url := start(t, nil, func(m *serve.Model) { m.Placement = "cpu (12 nodes)" })
	resp, err := client.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("/: %d %v", resp.StatusCode, resp.Header)
	}
	for _, want := range []string{`id="stop"`, "AbortController", "/v1/chat/completions", "/v1/completions", "/v1/models", "stream: true", "tokens/s", "placement"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "src=", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page refers elsewhere (%q)", bad)
		}
	}
	code, v := post(t, url+"/v1/completions", `{"model":"stories","prompt":"a","max_tokens":1}`)
	if code != 200 {
		t.Fatalf("%d %v", code, v)
	}
	r2, err := client.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(r2.Body)
	r2.Body.Close()
	if !strings.Contains(string(b), `"placement":"cpu (12 nodes)"`) {
		t.Fatalf("/v1/models: %s", b)
	}
	if r3, err := client.Get(url + "/nothing"); err != nil || r3.StatusCode != 404 {
		t.Fatalf("/nothing: %v %v", r3, err)
	} else {
		r3.Body.Close()
	}
}

// TestPrefixCacheKeepsOtherConversations: a new conversation that shares
// only its start with a cached one gets a copy of that start and leaves
// the cached one whole, so the first conversation's next turn still
// prefills only its new tokens.
func TestPrefixCacheKeepsOtherConversations(t *testing.T) {
	_, url := start(t, nil, nil)
	turn := func(prompt string) (string, float64, float64) {
		t.Helper()
		code, v := post(t, url+"/v1/completions", fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":12,"temperature":0}`, prompt))
		if code != 200 {
			t.Fatalf("%d %v", code, v)
		}
		u := v["usage"].(map[string]any)
		return v["choices"].([]any)[0].(map[string]any)["text"].(string), u["prompt_tokens"].(float64), u["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64)
	}
	a := "Once upon a time, there was a big dog named Max."
	textA, promptA, _ := turn(a)
	_, _, sharedB := turn("Once upon a time, there was a little cat.")
	if sharedB < 5 {
		t.Fatalf("the second conversation took %v tokens from the first's cache", sharedB)
	}
	_, _, cachedA := turn(a + textA + " Then")
	if cachedA < promptA {
		t.Fatalf("the first conversation's next turn took %v tokens from the cache, its first turn alone was %v", cachedA, promptA)
	}
}
