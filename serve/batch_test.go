package serve_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

// startBatched serves stories260K.bin in its batched form (cpu) as
// "stories" for one test.
func startBatched(t *testing.T, opts *serve.Options) (*serve.Server, string) {
	t.Helper()
	_, _, tok := stories(t)
	dir := shared.Path(t, "testdata/llm/stories260K")
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Batched() {
		t.Fatal("not a batched decoder")
	}
	s := serve.New(opts)
	if err := s.Add(&serve.Model{Name: "stories", Decoder: d, Tokenizer: tok, ContextLength: 512}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	return s, listen(t, s)
}

// TestBatchedGolden: on the batched decoder, greedy /v1/completions is
// the golden continuation alone (streamed and whole) and beside three
// other concurrent streams (two greedy copies of it and a sampled one,
// joining mid-generation), and the rounds really ran several sequences
// in one step.
func TestBatchedGolden(t *testing.T) {
	g, _, _ := stories(t)
	_, url := startBatched(t, &serve.Options{MaxBatch: 4})
	want := strings.TrimPrefix(g.Text, g.Prompt)
	code, v := post(t, url+"/v1/completions", goldenBody(g, false))
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, v)
	}
	if got := v["choices"].([]any)[0].(map[string]any)["text"]; got != want {
		t.Fatalf("alone: %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	r, err := stream(ctx, url+"/v1/completions", goldenBody(g, true))
	if err != nil || r.text != want {
		t.Fatalf("streamed alone: %q, %v; want %q", r.text, err, want)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		body := `{"model":"stories","prompt":"The dog","max_tokens":100,"temperature":1,"seed":3,"stream":true,"stop":["zzzz"],"logit_bias":{"1":-100,"2":-100}}`
		r, err := stream(ctx, url+"/v1/completions", body)
		if err == nil && (r.finish == "" || !r.done) {
			err = fmt.Errorf("sampled stream ended without a finish: %+v", r)
		}
		if err != nil {
			errs <- err
		}
	})
	for i := range 3 {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * 15 * time.Millisecond) // join mid-generation
			if i == 1 {
				code, v := post(t, url+"/v1/completions", goldenBody(g, false))
				if code != http.StatusOK {
					errs <- fmt.Errorf("status %d: %v", code, v)
				} else if got := v["choices"].([]any)[0].(map[string]any)["text"]; got != want {
					errs <- fmt.Errorf("whole, beside others: %q, want %q", got, want)
				}
				return
			}
			r, err := stream(ctx, url+"/v1/completions", goldenBody(g, true))
			if err == nil && r.text != want {
				err = fmt.Errorf("streamed beside others (%d): %q, want %q", i, r.text, want)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	m := metricsText(t, url)
	if n := metricValue(t, m, `switchyard_serve_decode_mode{mode="batched",model="stories",reason="batched decoder: one run steps every sequence"}`); n != 1 {
		t.Fatalf("decode_mode batched is %v", n)
	}
	if n := metricValue(t, m, `switchyard_serve_batched_sequences_count{model="stories"}`); n == 0 {
		t.Fatal("no batched decode step")
	}
	if one, all := metricValue(t, m, `switchyard_serve_batched_sequences_bucket{model="stories",le="1"}`),
		metricValue(t, m, `switchyard_serve_batched_sequences_count{model="stories"}`); one == all {
		t.Fatalf("every batched step ran one sequence (%v of %v)", one, all)
	}
}

// TestBatchedPrefixCacheAndCancel: on the batched decoder a follow-up
// turn takes the first's cache (parked out of its slot) and answers as a
// server without the cache does, and a client going away mid-stream frees
// its slot for a queued request.
func TestBatchedPrefixCacheAndCancel(t *testing.T) {
	_, url := startBatched(t, &serve.Options{MaxBatch: 2})
	_, plainURL := startBatched(t, &serve.Options{MaxBatch: 2, PrefixCacheBytes: -1})
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
	if a, b := v["choices"].([]any)[0].(map[string]any)["text"], v2["choices"].([]any)[0].(map[string]any)["text"]; a != b {
		t.Fatalf("with the prefix cache %q, without %q", a, b)
	}
	if c := v["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64); c < 20 {
		t.Fatalf("%v prompt tokens from the cache", c)
	}

	// two long streams hold both slots; one goes away, a queued request
	// takes its slot while the other keeps going
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	other := make(chan error, 1)
	go func() {
		r, err := stream(context.Background(), url+"/v1/completions", `{"model":"stories","prompt":"The cat","max_tokens":480,"temperature":1,"seed":2,"stream":true,"stop":["zzzz"],"logit_bias":{"1":-100,"2":-100}}`)
		if err == nil && r.finish != "length" {
			err = fmt.Errorf("the other stream ended %q", r.finish)
		}
		other <- err
	}()
	aborted := make(chan error, 1)
	go func() {
		_, err := stream(ctx, url+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":500,"temperature":1,"seed":1,"stream":true,"stop":["zzzz"],"logit_bias":{"1":-100,"2":-100}}`)
		aborted <- err
	}()
	time.Sleep(100 * time.Millisecond)
	queued := make(chan int, 1)
	go func() {
		code, _ := post(t, url+"/v1/completions", `{"model":"stories","prompt":"The sun","max_tokens":5,"temperature":0}`)
		queued <- code
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-aborted
	select {
	case code := <-queued:
		if code != 200 {
			t.Fatalf("queued request: %d", code)
		}
	case err := <-other:
		t.Fatalf("the other stream ended (%v) before the queued request took the freed slot", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the queued request was not served after a client went away")
	}
	if err := <-other; err != nil {
		t.Fatal(err)
	}
}

// maxHold is the most bytes m's memory budget can hold now (idle run
// buffers dropped), found by bisection and given back.
func maxHold(t *testing.T, m *switchyard.Model, budget int64) int64 {
	lo, hi := int64(0), budget+1 // lo fits, hi does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if m.HoldMemory(mid) == nil {
			m.ReleaseMemory(mid)
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// TestBatchedKVBudget: a batched decoder's key/value cache slots count
// against the model's memory budget. A budget that cannot hold one
// sequence's cache is refused when the decoder is made; one that holds a
// sequence and its runs but not a second sequence serves two concurrent
// requests one after the other (the second waits in the queue, counted in
// memory_waits_total), both right; and a request that cannot run even
// alone gets 503 insufficient_memory, not a crash.
func TestBatchedKVBudget(t *testing.T) {
	g, _, tok := stories(t)
	dir := shared.Path(t, "testdata/llm/stories260K")
	ctx := context.Background()
	const budget = 64 << 20
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}, MemoryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	open := func() *switchyard.Model {
		m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 512})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	m := open()
	free0 := maxHold(t, m, budget)
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	slot := free0 - maxHold(t, m, budget)
	// stories260K: 5 layers' keys and values, 4 kv heads × 512 × 8 floats
	if want := int64(10 * 4 * 512 * 8 * 4); slot != want {
		t.Fatalf("one sequence's slot holds %d bytes of the budget, want %d", slot, want)
	}

	// a budget short of one slot: refused at NewDecoder
	m2 := open()
	if err := m2.HoldMemory(maxHold(t, m2, budget) - slot/2); err != nil {
		t.Fatal(err)
	}
	if _, err := llm.NewDecoder(m2); !errors.Is(err, switchyard.ErrResourceExhausted) {
		t.Fatalf("a decoder whose cache does not fit the budget: %v", err)
	}

	s := serve.New(&serve.Options{MaxBatch: 4, PrefillChunk: 4, PrefixCacheBytes: -1})
	if err := s.Add(&serve.Model{Name: "stories", Decoder: d, Tokenizer: tok, ContextLength: 512}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	url := listen(t, s)
	// leave room for the runs of one sequence, found in steps of slot/8
	free, held, room := maxHold(t, m, budget), int64(0), int64(0)
	for k := int64(0); k <= 16; k++ {
		m.ReleaseMemory(held)
		room, held = k*slot/8, free-k*slot/8
		if err := m.HoldMemory(held); err != nil {
			t.Fatal(err)
		}
		code, v := post(t, url+"/v1/completions", `{"model":"stories","prompt":"Once upon a time","max_tokens":8,"temperature":0}`)
		if code == 200 {
			break
		}
		if e := v["error"].(map[string]any); code != 503 || e["code"] != "insufficient_memory" {
			t.Fatalf("a run short of memory: %d %v", code, v)
		}
	}
	t.Logf("one slot %d bytes; a sequence's runs fit in %d", slot, room)
	if room >= slot*7/8 {
		t.Skipf("the runs of one sequence need %d bytes, about a slot (%d): no room to tell one slot from two", room, slot)
	}
	// two at once: the second waits for the first's slot
	want := strings.TrimPrefix(g.Text, g.Prompt)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			code, v := post(t, url+"/v1/completions", goldenBody(g, false))
			if code != 200 {
				t.Errorf("%d %v", code, v)
				return
			}
			if got := v["choices"].([]any)[0].(map[string]any)["text"]; got != want {
				t.Errorf("text %q, want %q", got, want)
			}
		})
	}
	wg.Wait()
	met := metricsText(t, url)
	if n := metricValue(t, met, `switchyard_serve_memory_waits_total{model="stories"}`); n < 1 {
		t.Fatalf("%v memory waits: the second request did not wait for the first's slot", n)
	}
	// never two sequences in one batched run: the second waited
	one := metricValue(t, met, `switchyard_serve_batched_sequences_bucket{model="stories",le="1"}`)
	if all := metricValue(t, met, `switchyard_serve_batched_sequences_count{model="stories"}`); one != all {
		t.Fatalf("%v of %v batched runs had one sequence: two ran together beyond the budget", one, all)
	}
	m.ReleaseMemory(held)
}

// TestBurstStartsTogether: four requests sent at once to an idle batched
// model are prefilled in one run and decoded together from their first
// step (Options.AdmitWindow; a long window here, so that a loaded
// machine's late arrivals still join): every decode run steps all four.
// With no window the first is prefilled alone and decodes beside the
// others' prefill, a run of fewer than four.
func TestBurstStartsTogether(t *testing.T) {
	for _, win := range []time.Duration{-1, 500 * time.Millisecond} {
		_, url := startBatched(t, &serve.Options{MaxBatch: 4, PrefixCacheBytes: -1, AdmitWindow: win})
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				body := fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time %d","max_tokens":6,"temperature":0,"stop":["zzzz"]}`, i%2)
				if code, v := post(t, url+"/v1/completions", body); code != http.StatusOK {
					t.Errorf("status %d: %v", code, v)
				}
			})
		}
		wg.Wait()
		m := metricsText(t, url)
		all := metricValue(t, m, `switchyard_serve_batched_sequences_count{model="stories"}`)
		three := metricValue(t, m, `switchyard_serve_batched_sequences_bucket{model="stories",le="3"}`)
		t.Logf("window %v: %v decode runs, %v of fewer than four", win, all, three)
		if win > 0 && (three != 0 || all == 0) {
			t.Fatalf("%v of %v decode runs stepped fewer than four sequences", three, all)
		}
	}
}
