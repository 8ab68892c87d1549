package native

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// TestFuse2DecodeAB (a measurement tool, skipped without FUSE2_MODEL, a
// .gguf): the model opened twice on one engine (one pool) at 2 threads
// and int8 precision as `switchyard generate` runs it, once compiled
// without fuse2's fusions (A) and once with them (B); their decode steps
// alternate, A B A B, each traced (pool.go's loopTrace), so that both see
// the same load (FUSE2_THREADS=1: at one thread, where a step's time is
// all serial work). Prints, for each: the step's median and least µs, its
// loops, and the time outside them (serial nodes, the executor). The
// greedy tokens of the two must be the same. Also the allocations a step
// (testing.AllocsPerRun) and the calling thread's
// CPU time a step (getrusage RUSAGE_THREAD, Linux): at one thread the
// step's work without the time the machine's other load took from it.
//
//	FUSE2_MODEL=/work/tmp/qwen2-Q4_0.gguf go test ./plugins/native -run TestFuse2DecodeAB -v
func TestFuse2DecodeAB(t *testing.T) {
	path := os.Getenv("FUSE2_MODEL")
	if path == "" {
		t.Skip("FUSE2_MODEL not set")
	}
	ctx := context.Background()
	threads := 2
	if os.Getenv("FUSE2_THREADS") == "1" {
		threads = 1 // no loops traced: the steps' time is the serial work's
	}
	e, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: threads, ContextLength: 512, Precision: "int8"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	defer func(f, n, r bool) { ffnOn, normOn, residOn = f, n, r }(ffnOn, normOn, residOn)
	var seqs [2]*llm.Sequence
	for i, on := range []bool{false, true} {
		ffnOn, normOn, residOn = on, on, on
		m, err := e.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		d, err := llm.NewDecoder(m)
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.NewSequence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Feed(ctx, []int{1, 2, 3, 4, 5}); err != nil {
			t.Fatal(err)
		}
		seqs[i] = s
	}
	runtime.LockOSThread() // the calling thread's CPU time a step (threadCPU, depthwise_packed_test.go)
	defer runtime.UnlockOSThread()
	var steps, inLoops, serial, loops, cpu [2][]float64
	tok := [2]int{7, 7}
	for i := 0; i < 2*300; i++ {
		k := i % 2
		tr := &loopTracer{}
		loopTrace.Store(tr)
		c0 := threadCPU()
		t0 := time.Now()
		out, err := seqs[k].Feed(ctx, []int{tok[k]})
		c := float64(threadCPU()-c0) / 1e3
		if err != nil {
			t.Fatal(err)
		}
		d := float64(time.Since(t0).Nanoseconds()) / 1e3
		loopTrace.Store(nil)
		tok[k] = argmax(out)
		if k == 1 && tok[0] != tok[1] {
			t.Fatalf("step %d: token %d without the fusions, %d with", i/2, tok[0], tok[1])
		}
		if i < 20 {
			continue
		}
		var sum float64
		for _, l := range tr.loops {
			sum += float64(l.end-l.start) / 1e3
		}
		steps[k] = append(steps[k], d)
		inLoops[k] = append(inLoops[k], sum)
		serial[k] = append(serial[k], d-sum)
		loops[k] = append(loops[k], float64(len(tr.loops)))
		cpu[k] = append(cpu[k], c)
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	for k := range seqs {
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := seqs[k].Feed(ctx, []int{7}); err != nil {
				t.Fatal(err)
			}
		})
		fmt.Printf("%s: %.1f allocations a step\n", []string{"A", "B"}[k], allocs)
	}
	for k, name := range []string{"A (apart)", "B (fused)"} {
		fmt.Printf("%s: the caller thread's CPU time a step: median %.0f µs (least %.0f)\n", name, med(cpu[k]), slices.Min(cpu[k]))
		fmt.Printf("%s: step median %.0f µs (least %.0f); loops %.0f; in loops %.0f (least %.0f); outside loops %.0f µs (least %.0f)\n", name,
			med(steps[k]), slices.Min(steps[k]), med(loops[k]), med(inLoops[k]), slices.Min(inLoops[k]), med(serial[k]), slices.Min(serial[k]))
	}
}

// argmax is the index of the largest of the logits (the first one).
func argmax(x []float32) int {
	b := 0
	for i, v := range x {
		if v > x[b] {
			b = i
		}
	}
	return b
}
