package serve_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/serve"
)

// BenchmarkConcurrentStreams: aggregate generated tokens/s of k clients,
// each asking 100 greedy tokens over HTTP, on stories260K (cpu); compare
// k=1 with k=4 in one run for the batching ratio.
func BenchmarkConcurrentStreams(b *testing.B) {
	for _, k := range []int{1, 4} {
		b.Run(fmt.Sprintf("clients=%d", k), func(b *testing.B) {
			_, dec, tok := stories(b)
			s := serve.New(&serve.Options{MaxBatch: 4, PrefixCacheBytes: -1})
			if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}); err != nil {
				b.Fatal(err)
			}
			s.SetReady()
			url := listen(b, s)
			const n = 100
			body := fmt.Sprintf(`{"model":"stories","prompt":"Once upon a time","max_tokens":%d,"temperature":0,"stop":["zzzz"]}`, n)
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				for range k {
					wg.Go(func() {
						code, v := post(b, url+"/v1/completions", body)
						if code != http.StatusOK {
							b.Errorf("%d %v", code, v)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(k*n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkPrefixCacheTurn: a conversation's second turn after a first of
// about 400 tokens, each asking one token (its latency is the time to
// first token): cold (nothing cached) against the follow-up that extends
// it (the first turn's cache reused). Reports both and their ratio.
func BenchmarkPrefixCacheTurn(b *testing.B) {
	_, dec, tok := stories(b)
	s := serve.New(&serve.Options{MaxBatch: 4})
	if err := s.Add(&serve.Model{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512}); err != nil {
		b.Fatal(err)
	}
	s.SetReady()
	url := listen(b, s)
	story := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside in the park. ", 14)
	var cold, warm time.Duration
	for i := range b.N {
		first := fmt.Sprintf("%d. %s", i, story) // a new start each time: no hit
		t0 := time.Now()
		code, v := post(b, url+"/v1/completions", fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":1,"temperature":0}`, first))
		cold += time.Since(t0)
		if code != 200 {
			b.Fatalf("%d %v", code, v)
		}
		if n := v["usage"].(map[string]any)["prompt_tokens"].(float64); n < 380 {
			b.Fatalf("a first turn of %v tokens", n)
		}
		t0 = time.Now()
		code, v = post(b, url+"/v1/completions", fmt.Sprintf(`{"model":"stories","prompt":%q,"max_tokens":1,"temperature":0}`, first+" Then the dog ran."))
		warm += time.Since(t0)
		if code != 200 {
			b.Fatalf("%d %v", code, v)
		}
		if c := v["usage"].(map[string]any)["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64); c < 380 {
			b.Fatalf("second turn: %v tokens from the cache", c)
		}
	}
	b.ReportMetric(float64(cold.Microseconds())/1000/float64(b.N), "first-turn-ms")
	b.ReportMetric(float64(warm.Microseconds())/1000/float64(b.N), "second-turn-ms")
	b.ReportMetric(float64(warm)/float64(cold), "ratio")
}
