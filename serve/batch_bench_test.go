package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	_ "github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/serve"
)

// benchServer serves the model of SWITCHYARD_SERVE_BENCH_MODEL (a .gguf
// with its own vocabulary: the peer kit's Qwen2.5-0.5B-shape Q4_K_M is
// the issue's; default stories260K.bin) in its batched form on native
// and cpu, as "m", context 1024, in the precision of
// SWITCHYARD_SERVE_BENCH_PRECISION (default: the model's own, int8 for a
// quantized GGUF).
func benchServer(b testing.TB, opts *serve.Options, mutate func(*serve.Model)) string {
	b.Helper()
	ctx := context.Background()
	path := os.Getenv("SWITCHYARD_SERVE_BENCH_MODEL")
	var tok llm.Tokenizer
	var err error
	if path == "" {
		dir := shared.Path(b, "testdata/llm/stories260K")
		path = filepath.Join(dir, "stories260K.bin")
		tok, err = llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	} else {
		tok, err = llm.LoadGGUFVocab(path)
	}
	if err != nil {
		b.Fatal(err)
	}
	// SWITCHYARD_SERVE_BENCH_PRECISION=float32: float activations; unset,
	// the model's default (int8 for quantized GGUF, as llama.cpp)
	prec := switchyard.Precision(os.Getenv("SWITCHYARD_SERVE_BENCH_PRECISION"))
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Precision: prec})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 1024})
	if err != nil {
		b.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	s := serve.New(opts)
	sm := &serve.Model{Name: "m", Decoder: d, Tokenizer: tok}
	if mutate != nil {
		mutate(sm)
	}
	if err := s.Add(sm); err != nil {
		b.Fatal(err)
	}
	s.SetReady()
	b.Logf("%s: batched %v, placement %v", filepath.Base(path), d.Batched(), m.Plan().Partitions[0].Backend)
	return listen(b, s)
}

// TestManyClientsQueued: 64 clients at once on a batched decoder with 4
// slots: every one is served (60 wait in the queue), no run steps more
// than 4 sequences, and each gets the text it gets alone. The model is
// stories260K (the golden continuation for every client), or the .gguf
// of SWITCHYARD_SERVE_BENCH_MODEL (the issue's: the peer kit's
// Qwen2.5-0.5B-shape Q4_K_M; each client's greedy text must equal the
// first's, 8 tokens each).
func TestManyClientsQueued(t *testing.T) {
	const clients = 64
	url := benchServer(t, &serve.Options{MaxBatch: 4, PrefixCacheBytes: -1, MaxQueue: 256}, nil)
	prompt, n, want := "Once upon a time", 8, ""
	if os.Getenv("SWITCHYARD_SERVE_BENCH_MODEL") == "" {
		g, _, _ := stories(t)
		prompt, n, want = g.Prompt, g.Steps-len(g.PromptTokens)+1, strings.TrimPrefix(g.Text, g.Prompt)
	} else {
		t.Logf("%s: %d clients, %d tokens each", os.Getenv("SWITCHYARD_SERVE_BENCH_MODEL"), clients, n)
	}
	body := fmt.Sprintf(`{"model":"m","prompt":%q,"max_tokens":%d,"temperature":0}`, prompt, n)
	texts := make([]string, clients)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range clients {
		wg.Go(func() {
			code, v := post(t, url+"/v1/completions", body)
			if code != 200 {
				t.Errorf("client %d: %d %v", i, code, v)
				return
			}
			texts[i] = v["choices"].([]any)[0].(map[string]any)["text"].(string)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d clients served in %.1f s", clients, time.Since(t0).Seconds())
	if want == "" {
		want = texts[0]
	}
	for i, got := range texts {
		if got != want {
			t.Errorf("client %d: %q, want %q", i, got, want)
		}
	}
	m := metricsText(t, url)
	all := metricValue(t, m, `switchyard_serve_batched_sequences_count{model="m"}`)
	if four := metricValue(t, m, `switchyard_serve_batched_sequences_bucket{model="m",le="4"}`); four != all || all == 0 {
		t.Fatalf("%v of %v batched runs stepped at most 4 sequences", four, all)
	}
	if one := metricValue(t, m, `switchyard_serve_batched_sequences_bucket{model="m",le="3"}`); one == all {
		t.Fatalf("no batched run stepped 4 sequences")
	}
}

// benchClient waits as long as a loaded machine takes.
var benchClient = &http.Client{}

// chunk is a streamed chunk's arrival and the tokens it carries.
type chunk struct {
	at     time.Time
	tokens int
}

// plainStream streams a greedy completion of n tokens without logprobs,
// as most clients stream, and returns the completion tokens the usage
// counts.
func plainStream(ctx context.Context, url, prompt string, n int) (int, error) {
	_, used, err := sseStream(ctx, url, prompt, n, false, nil)
	return used, err
}

// timedStream streams a greedy completion of n tokens (with logprobs: a
// chunk lists its tokens, text held back for a partial character comes
// later with several) and returns its chunks and the completion tokens
// the usage counts; onChunk (when not nil) is called with the count of
// tokens so far.
func timedStream(ctx context.Context, url, prompt string, n int, onChunk func(int)) ([]chunk, int, error) {
	return sseStream(ctx, url, prompt, n, true, onChunk)
}

// sseStream is a streamed completion, with logprobs or not.
func sseStream(ctx context.Context, url, prompt string, n int, logprobs bool, onChunk func(int)) ([]chunk, int, error) {
	lp := ""
	if logprobs {
		lp = `"logprobs":0,`
	}
	body := fmt.Sprintf(`{"model":"m","prompt":%q,"max_tokens":%d,"temperature":0,%s"stream":true,"stream_options":{"include_usage":true}}`, prompt, n, lp)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	resp, err := benchClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var at []chunk
	used, total := 0, 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Text     string `json:"text"`
				Logprobs *struct {
					Tokens []string `json:"tokens"`
				} `json:"logprobs"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return at, used, err
		}
		if c.Usage != nil {
			used = c.Usage.CompletionTokens
		}
		if len(c.Choices) > 0 && c.Choices[0].Logprobs != nil && len(c.Choices[0].Logprobs.Tokens) > 0 {
			k := len(c.Choices[0].Logprobs.Tokens)
			at = append(at, chunk{time.Now(), k})
			total += k
			if onChunk != nil {
				onChunk(total)
			}
		}
	}
	return at, used, sc.Err()
}

// meanGap is the mean time per token of the chunks of at that arrived in
// [from, to): the span from the first to the last over the tokens of all
// but the first.
func meanGap(at []chunk, from, to time.Time) (time.Duration, int) {
	var in []chunk
	for _, c := range at {
		if !c.at.Before(from) && c.at.Before(to) {
			in = append(in, c)
		}
	}
	if len(in) < 2 {
		return 0, 0
	}
	n := 0
	for _, c := range in[1:] {
		n += c.tokens
	}
	return in[len(in)-1].at.Sub(in[0].at) / time.Duration(n), n
}

// BenchmarkBatchedServe: the continuous-batching figures over HTTP on a
// batched decoder (see benchServer for the model), MaxBatch 4.
//
//   - streams: one stream alone, then four at once (alternating, in one
//     run), each 32 greedy tokens streamed (no logprobs); tokens/s aggregate for both and their
//     ratio (the issue asks ≥ 2.5 on the Qwen2.5-0.5B-shape Q4_K_M), and
//     cpu-ratio, the same in tokens per CPU second of the process (on a
//     loaded machine the wall time is mostly other work's).
//   - abort: four streams of 64 tokens, one aborted after 16 chunks, and
//     (alternating) the same without the abort: the other three's mean
//     time per token after that point, with the abort over without (the
//     issue asks the others not slowed: ≤ 1.10).
//   - clients64: 64 clients at once, 4 tokens each: all must be served
//     (60 queue for the 4 slots); errors are fatal.
func BenchmarkBatchedServe(b *testing.B) {
	url := benchServer(b, &serve.Options{MaxBatch: 4, PrefixCacheBytes: -1, MaxQueue: 256}, nil)
	prompt := "Once upon a time"
	b.Run("streams", func(b *testing.B) {
		const n = 32
		var one, four, cpu1, cpu4 time.Duration
		var tok1, tok4 int
		for range b.N {
			for _, k := range []int{1, 4} {
				var wg sync.WaitGroup
				var mu sync.Mutex
				t0, c0 := time.Now(), cpuTime()
				for i := range k {
					wg.Go(func() {
						used, err := plainStream(context.Background(), url, fmt.Sprintf("%s %d", prompt, i), n)
						if err != nil {
							b.Error(err)
						}
						mu.Lock()
						if k == 1 {
							tok1 += used
						} else {
							tok4 += used
						}
						mu.Unlock()
					})
				}
				wg.Wait()
				if k == 1 {
					one, cpu1 = one+time.Since(t0), cpu1+cpuTime()-c0
				} else {
					four, cpu4 = four+time.Since(t0), cpu4+cpuTime()-c0
				}
			}
		}
		r1, r4 := float64(tok1)/one.Seconds(), float64(tok4)/four.Seconds()
		b.ReportMetric(r1, "tok/s-1stream")
		b.ReportMetric(r4, "tok/s-4streams")
		b.ReportMetric(r4/r1, "ratio")
		if cpu1 > 0 && cpu4 > 0 {
			// tokens per CPU second, 4 streams over 1: what a step of 4
			// costs over a step of 1, robust to a loaded machine (whose
			// other work stretches the wall time)
			b.ReportMetric((float64(tok4)/cpu4.Seconds())/(float64(tok1)/cpu1.Seconds()), "cpu-ratio")
		}
	})
	b.Run("abort", func(b *testing.B) {
		// four streams of 64 tokens, alternately with stream 0 aborted
		// after 16 chunks and not: the others' mean time per token from
		// that point (the abort, or where it would be) to the first of
		// their ends, over the same without the abort
		const n, abortAfter = 64, 16
		run := func(abort bool) (time.Duration, bool) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ats := make([][]chunk, 4)
			var mark time.Time
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					c := context.Background()
					var on func(int)
					if i == 0 {
						if abort {
							c = ctx
						}
						on = func(k int) {
							mu.Lock()
							defer mu.Unlock()
							if k >= abortAfter && mark.IsZero() {
								mark = time.Now()
								if abort {
									cancel() // the client goes away
								}
							}
						}
					}
					at, _, err := timedStream(c, url, fmt.Sprintf("%s %d", prompt, i), n, on)
					if err != nil && !(abort && i == 0) {
						b.Error(err)
					}
					ats[i] = at
				})
			}
			wg.Wait()
			if mark.IsZero() {
				b.Fatal("stream 0 ended before 16 chunks")
			}
			end := time.Time{}
			for i := 1; i < 4; i++ {
				if len(ats[i]) == 0 {
					b.Fatalf("stream %d got nothing", i)
				}
				if last := ats[i][len(ats[i])-1].at; end.IsZero() || last.Before(end) {
					end = last
				}
			}
			var sum time.Duration
			for i := 1; i < 4; i++ {
				g, k := meanGap(ats[i], mark, end.Add(time.Nanosecond))
				if k < 4 {
					return 0, false // too few to compare
				}
				sum += g
			}
			return sum / 3, true
		}
		var with, without time.Duration
		for range b.N {
			for _, abort := range []bool{false, true} {
				g, ok := run(abort)
				if !ok {
					b.Fatal("too few tokens after the abort point to compare")
				}
				if abort {
					with += g
				} else {
					without += g
				}
				b.Logf("abort %v: the other three streams %.1f ms/token after the abort point", abort, g.Seconds()*1000)
			}
		}
		b.ReportMetric(with.Seconds()*1000/float64(b.N), "ms/token-with-abort")
		b.ReportMetric(without.Seconds()*1000/float64(b.N), "ms/token-without")
		b.ReportMetric(float64(with)/float64(without), "with/without")
	})
	b.Run("clients64", func(b *testing.B) {
		for range b.N {
			var wg sync.WaitGroup
			var mu sync.Mutex
			fails := 0
			t0 := time.Now()
			for i := range 64 {
				wg.Go(func() {
					resp, err := benchClient.Post(url+"/v1/completions", "application/json",
						strings.NewReader(fmt.Sprintf(`{"model":"m","prompt":"%s %d","max_tokens":4,"temperature":0}`, prompt, i)))
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						fails++
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						fails++
					}
				})
			}
			wg.Wait()
			if fails > 0 {
				b.Fatalf("%d of 64 clients failed", fails)
			}
			b.ReportMetric(time.Since(t0).Seconds(), "s-for-64")
		}
	})
}
