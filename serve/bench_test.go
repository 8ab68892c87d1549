package serve_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

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
