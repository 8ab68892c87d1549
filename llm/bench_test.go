package llm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkDecode: 256 greedy positions of stories260K per op in each of
// its formats on the cpu backend (or SWITCHYARD_BENCH_BACKENDS); reports
// decode tokens/s and prefill.
// Run with -cpu 1 for the 1-thread figure.
// benchBackends are the backends BenchmarkDecode runs on: the
// comma-separated SWITCHYARD_BENCH_BACKENDS, else cpu.
func benchBackends() []string {
	if s := os.Getenv("SWITCHYARD_BENCH_BACKENDS"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"cpu"}
}

func BenchmarkDecode(b *testing.B) {
	dir := shared.Path(b, "testdata/llm/stories260K")
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range []string{"stories260K_kv.onnx", "stories260K.bin", "stories260K_f32.gguf", "stories260K_q80.bin"} {
		b.Run(f, func(b *testing.B) {
			ctx := context.Background()
			m, err := switchyard.Open(ctx, filepath.Join(dir, f), &switchyard.OpenOptions{Backends: benchBackends()})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			d, err := llm.NewDecoder(m)
			if err != nil {
				b.Fatal(err)
			}
			var tokens, prefill float64
			var secs float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := d.Generate(ctx, tok, "Once upon a time", llm.Options{Steps: 256}, func(llm.Token) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				tokens += float64(res.Generated)
				secs += res.Decode.Seconds()
				prefill += res.Prefill.Seconds()
			}
			b.ReportMetric(tokens/secs, "tokens/s")
			b.ReportMetric(prefill/float64(b.N)*1e3, "prefill-ms")
		})
	}
}
