package llm

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
)

// BenchmarkExec14DecodeStep: one greedy decode step as Generate runs it
// (a shared, recycled cache; the step then sample) of EXEC14_MODEL (a
// .gguf; skipped without it) at EXEC14_THREADS (default 1), with
// allocations per step: a decode step should allocate nothing. The cache
// starts over from the prompt every 200 steps.
func BenchmarkExec14DecodeStep(b *testing.B) {
	path := os.Getenv("EXEC14_MODEL")
	if path == "" {
		b.Skip("EXEC14_MODEL (a .gguf) not set")
	}
	threads := 1
	if os.Getenv("EXEC14_THREADS") == "2" {
		threads = 2
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: threads, ContextLength: 256})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	d, err := NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var cache *kvCache
	start := func() {
		if cache != nil {
			cache.close()
		}
		if cache, err = d.emptyCache(ctx); err != nil {
			b.Fatal(err)
		}
		cache.recycle = true
		if _, cache, err = d.step(ctx, []int{1, 2, 3, 4, 5}, cache); err != nil {
			b.Fatal(err)
		}
	}
	start()
	defer func() { cache.close() }()
	feed := []int{7}
	b.ReportAllocs()
	for k := range b.N + 20 {
		if k == 20 {
			b.ResetTimer()
		}
		if cache.n >= 200 {
			b.StopTimer()
			start()
			b.StartTimer()
		}
		var logits []float32
		if logits, cache, err = d.step(ctx, feed, cache); err != nil {
			b.Fatal(err)
		}
		feed[0] = sample(logits, Options{}, rng)
	}
}

// TestExec14StepNodes (a measurement tool, skipped without EXEC14_MODEL):
// the nodes of one profiled decode step, in order, with their times.
func TestExec14StepNodes(t *testing.T) {
	path := os.Getenv("EXEC14_MODEL")
	if path == "" {
		t.Skip("EXEC14_MODEL (a .gguf) not set")
	}
	ctx := context.Background()
	var last *switchyard.Stats
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: 1, ContextLength: 256, Profile: true,
		OnRun: func(_ string, st *switchyard.Stats) { last = st }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := d.emptyCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.close()
	cache.recycle = true
	if _, cache, err = d.step(ctx, []int{1, 2, 3, 4, 5}, cache); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, cache, err = d.step(ctx, []int{7}, cache); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{}
	for _, n := range last.Nodes {
		counts[n.OpType]++
		if n.Depth == 0 || os.Getenv("EXEC14_ALL") != "" {
			t.Logf("%8.1f µs %8.1f µs d%d %s %s", float64(n.Start.Nanoseconds())/1e3, float64(n.Duration.Nanoseconds())/1e3, n.Depth, n.OpType, n.Node)
		}
	}
	t.Logf("%d nodes: %v; step %v", len(last.Nodes), counts, last.Duration)
	for _, op := range last.DeviceOps {
		t.Logf("device op %s %s at %.1f µs for %.1f µs, %d kernels", op.Kind, op.Name, float64(op.Start.Nanoseconds())/1e3, float64(op.Duration.Nanoseconds())/1e3, len(op.Kernels))
		var prevEnd time.Duration
		for i, k := range op.Kernels {
			if i < 12 || i >= len(op.Kernels)-4 || os.Getenv("EXEC14_ALL") != "" {
				t.Logf("  %8.1f µs %8.1f µs (gap %5.1f) %s %v", float64(k.Start.Nanoseconds())/1e3, float64(k.Duration.Nanoseconds())/1e3, float64((k.Start-prevEnd).Nanoseconds())/1e3, k.Name, k.Nodes[:min(len(k.Nodes), 2)])
			}
			prevEnd = k.Start + k.Duration
		}
	}
}

// TestExec14FeedRecycle (a measurement tool, skipped without
// EXEC14_MODEL): Sequence.Feed's decode step with the cache's logits
// buffer recycled and copied out (NewSequence's default for a shared
// cache) and with a new logits tensor a step (recycle off), alternating
// step by step on two sequences; the median and least µs of each.
func TestExec14FeedRecycle(t *testing.T) {
	path := os.Getenv("EXEC14_MODEL")
	if path == "" {
		t.Skip("EXEC14_MODEL (a .gguf) not set")
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: 1, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	var seqs [2]*Sequence
	for i := range seqs {
		if seqs[i], err = d.NewSequence(ctx); err != nil {
			t.Fatal(err)
		}
		defer seqs[i].Close()
		if _, err := seqs[i].Feed(ctx, []int{1, 2, 3, 4, 5}); err != nil {
			t.Fatal(err)
		}
	}
	seqs[1].c.recycle = false
	var times [2][]float64
	for k := range 200 {
		for i, s := range seqs {
			t0 := time.Now()
			if _, err := s.Feed(ctx, []int{7 + k%50}); err != nil {
				t.Fatal(err)
			}
			times[i] = append(times[i], float64(time.Since(t0).Microseconds()))
		}
	}
	for i, name := range []string{"recycled+copy", "new tensor"} {
		x := times[i][20:]
		slices.Sort(x)
		t.Logf("%s: median %.0f µs, least %.0f µs", name, x[len(x)/2], x[0])
	}
}
