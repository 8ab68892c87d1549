package llm_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkSrvStepRatio: a batched decoder's decode step of one sequence
// and of four (SWITCHYARD_BATCH_BENCH_MODEL, a .gguf; skipped without
// it), alternating step by step in one loop, so that a loaded machine
// slows both alike. It reports each one's least and median wall time and
// median CPU time a step, and ratio (4 × one's over four's: the
// aggregate tokens/s of four streams over one's, which the serving issue
// asks ≥ 2.5 of) of the least and of the medians. Least times are the
// steps the machine's other work did not stretch.
func BenchmarkSrvStepRatio(b *testing.B) {
	path := os.Getenv("SWITCHYARD_BATCH_BENCH_MODEL")
	if path == "" {
		b.Skip("SWITCHYARD_BATCH_BENCH_MODEL (a .gguf) not set")
	}
	ctx := context.Background()
	d := openBatchDecoder(b, path)
	var err error
	seqs := make([]*llm.Sequence, 5)
	for i := range seqs {
		if seqs[i], err = d.NewSequence(ctx); err != nil {
			b.Fatal(err)
		}
		defer seqs[i].Close()
		if _, err := seqs[i].Feed(ctx, []int{1, 100 + i}); err != nil {
			b.Fatal(err)
		}
	}
	arena := make([]float32, 4*d.Vocab())
	groups := [][]*llm.Sequence{seqs[:1], seqs[1:]}
	chunks := [][][]int{{{7}}, {{7}, {8}, {9}, {10}}}
	var wall, cpu [2][]time.Duration
	step := func(g int) {
		t0, c0 := time.Now(), cpuTime()
		if _, err := d.FeedChunksArena(ctx, groups[g], chunks[g], arena); err != nil {
			b.Fatal(err)
		}
		wall[g] = append(wall[g], time.Since(t0))
		cpu[g] = append(cpu[g], cpuTime()-c0)
	}
	for range 2 { // warm-up
		step(0)
		step(1)
	}
	wall, cpu = [2][]time.Duration{}, [2][]time.Duration{}
	for k := range b.N {
		if k > 0 && k%200 == 0 {
			for _, s := range seqs {
				if err := s.Truncate(2); err != nil {
					b.Fatal(err)
				}
			}
		}
		step(k % 2)
		step(1 - k%2)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	least1, least4 := slices.Min(wall[0]), slices.Min(wall[1])
	b.ReportMetric(ms(least1), "ms-least-1")
	b.ReportMetric(ms(least4), "ms-least-4")
	b.ReportMetric(ms(med(wall[0])), "ms-median-1")
	b.ReportMetric(ms(med(wall[1])), "ms-median-4")
	b.ReportMetric(ms(med(cpu[0])), "cpu-ms-median-1")
	b.ReportMetric(ms(med(cpu[1])), "cpu-ms-median-4")
	b.ReportMetric(4*least1.Seconds()/least4.Seconds(), "ratio-least")
	b.ReportMetric(4*med(wall[0]).Seconds()/med(wall[1]).Seconds(), "ratio-median")
}
