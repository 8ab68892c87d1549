package llm_test

import (
	"context"
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkSrv4Step: a batched decoder's decode step of 1, 2 and 4
// sequences (SWITCHYARD_BATCH_BENCH_MODEL, a .gguf; skipped without it),
// each in its own sub-benchmark, for a CPU profile of one batch size
// (BenchmarkSrvStepRatio alternates them for the ratio).
func BenchmarkSrv4Step(b *testing.B) {
	path := os.Getenv("SWITCHYARD_BATCH_BENCH_MODEL")
	if path == "" {
		b.Skip("SWITCHYARD_BATCH_BENCH_MODEL (a .gguf) not set")
	}
	ctx := context.Background()
	d := openBatchDecoder(b, path)
	for _, n := range []int{1, 2, 4} {
		b.Run(map[int]string{1: "rows1", 2: "rows2", 4: "rows4"}[n], func(b *testing.B) {
			seqs := make([]*llm.Sequence, n)
			chunks := make([][]int, n)
			for i := range seqs {
				s, err := d.NewSequence(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if _, err := s.Feed(ctx, []int{1, 100 + i}); err != nil {
					b.Fatal(err)
				}
				seqs[i], chunks[i] = s, []int{7 + i}
			}
			arena := make([]float32, n*d.Vocab())
			for k := range b.N + 1 {
				if k%200 == 199 {
					for _, s := range seqs {
						if err := s.Truncate(2); err != nil {
							b.Fatal(err)
						}
					}
				}
				if k == 1 {
					b.ResetTimer()
				}
				if _, err := d.FeedChunksArena(ctx, seqs, chunks, arena); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
