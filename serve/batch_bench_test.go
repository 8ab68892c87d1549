package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
func benchServer(b *testing.B, opts *serve.Options, mutate func(*serve.Model)) string {
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

// benchClient waits as long as a loaded machine takes.
var benchClient = &http.Client{}

// chunk is a streamed chunk's arrival and the tokens it carries.
type chunk struct {
	at     time.Time
	tokens int
}

// timedStream streams a greedy completion of n tokens (with logprobs: a
// chunk lists its tokens, text held back for a partial character comes
// later with several) and returns its chunks and the completion tokens
// the usage counts; onChunk (when not nil) is called with the count of
// tokens so far.
func timedStream(ctx context.Context, url, prompt string, n int, onChunk func(int)) ([]chunk, int, error) {
	body := fmt.Sprintf(`{"model":"m","prompt":%q,"max_tokens":%d,"temperature":0,"logprobs":0,"stream":true,"stream_options":{"include_usage":true}}`, prompt, n)
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
//     run), each 32 greedy tokens; tokens/s aggregate for both and their
//     ratio (the issue asks ≥ 2.5 on the Qwen2.5-0.5B-shape Q4_K_M).
//   - abort: four streams of 64 tokens; one is aborted after 16 chunks.
//     The others' mean time per token in the span after the abort over
//     the span before it (all four decoding): the issue asks ≤ 1.10.
//   - clients64: 64 clients at once, 4 tokens each: all must be served
//     (60 queue for the 4 slots); errors are fatal.
func BenchmarkBatchedServe(b *testing.B) {
	url := benchServer(b, &serve.Options{MaxBatch: 4, PrefixCacheBytes: -1, MaxQueue: 256}, nil)
	prompt := "Once upon a time"
	b.Run("streams", func(b *testing.B) {
		const n = 32
		var one, four time.Duration
		var tok1, tok4 int
		for range b.N {
			for _, k := range []int{1, 4} {
				var wg sync.WaitGroup
				var mu sync.Mutex
				t0 := time.Now()
				for i := range k {
					wg.Go(func() {
						_, used, err := timedStream(context.Background(), url, fmt.Sprintf("%s %d", prompt, i), n, nil)
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
					one += time.Since(t0)
				} else {
					four += time.Since(t0)
				}
			}
		}
		r1, r4 := float64(tok1)/one.Seconds(), float64(tok4)/four.Seconds()
		b.ReportMetric(r1, "tok/s-1stream")
		b.ReportMetric(r4, "tok/s-4streams")
		b.ReportMetric(r4/r1, "ratio")
	})
	b.Run("abort", func(b *testing.B) {
		const n, abortAfter = 64, 16
		var worst float64
		for range b.N {
			ctx, cancel := context.WithCancel(context.Background())
			ats := make([][]chunk, 4)
			var abortAt time.Time
			var wg sync.WaitGroup
			for i := range 4 {
				wg.Go(func() {
					c := context.Background()
					var on func(int)
					if i == 0 {
						// the client goes away after abortAfter chunks
						c, on = ctx, func(k int) {
							if k >= abortAfter && abortAt.IsZero() {
								abortAt = time.Now()
								cancel()
							}
						}
					}
					at, _, err := timedStream(c, url, fmt.Sprintf("%s %d", prompt, i), n, on)
					if err != nil && i != 0 {
						b.Error(err)
					}
					ats[i] = at
				})
			}
			wg.Wait()
			cancel()
			if abortAt.IsZero() {
				b.Fatal("stream 0 ended before it was aborted")
			}
			// before: from the last stream's first token to the abort;
			// after: from the abort to the first of the others' ends
			start, end := time.Time{}, time.Time{}
			for i := 1; i < 4; i++ {
				if len(ats[i]) == 0 {
					b.Fatalf("stream %d got nothing", i)
				}
				if ats[i][0].at.After(start) {
					start = ats[i][0].at
				}
				if last := ats[i][len(ats[i])-1].at; end.IsZero() || last.Before(end) {
					end = last
				}
			}
			start = slices.MaxFunc([]time.Time{start, ats[0][0].at}, time.Time.Compare)
			for i := 1; i < 4; i++ {
				before, nb := meanGap(ats[i], start, abortAt)
				after, na := meanGap(ats[i], abortAt, end.Add(time.Nanosecond))
				if nb < 4 || na < 4 {
					b.Logf("stream %d: %d gaps before, %d after the abort: too few to compare", i, nb, na)
					continue
				}
				r := float64(after) / float64(before)
				b.Logf("stream %d: %.1f ms/token before the abort (4 decoding), %.1f after (3): ratio %.3f", i, before.Seconds()*1000, after.Seconds()*1000, r)
				worst = max(worst, r)
			}
		}
		b.ReportMetric(worst, "after/before-worst")
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
