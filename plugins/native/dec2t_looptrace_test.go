package native

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// TestDec2tDecodeLoops (a measurement tool, skipped without
// DEC2T_MODEL, a .gguf): a single sequence's decode steps at 2 threads
// as `switchyard generate` runs them (the default method), each step's
// parallel loops traced (pool.go's loopTrace): how many loops a step
// runs, how long they take together, and the rest of the step (serial
// nodes, the executor, sampling's logits copy) — medians over the steps.
//
//	DEC2T_MODEL=/work/tmp/qwen2-Q4_0.gguf go test ./plugins/native -run TestDec2tDecodeLoops -v
func TestDec2tDecodeLoops(t *testing.T) {
	path := os.Getenv("DEC2T_MODEL")
	if path == "" {
		t.Skip("DEC2T_MODEL not set")
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: 2, ContextLength: 256})
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
	var bestD = time.Hour
	var best []loopRecord
	var bestT0 time.Time
	var steps, loops, inLoops, serial, small, smallT, joined []float64
	for i := 0; i < 120; i++ {
		tr := &loopTracer{}
		loopTrace.Store(tr)
		t0 := time.Now()
		if _, err := s.Feed(ctx, []int{7 + i%50}); err != nil {
			t.Fatal(err)
		}
		d := float64(time.Since(t0).Nanoseconds()) / 1e3
		loopTrace.Store(nil)
		if i < 10 {
			continue
		}
		if dd := time.Duration(d * 1e3); dd < bestD {
			bestD, best, bestT0 = dd, tr.loops, t0
		}
		var sum, sm, smT, j float64
		for _, l := range tr.loops {
			ld := float64(l.end-l.start) / 1e3
			sum += ld
			if ld < 20 {
				sm++
				smT += ld
			}
			if l.join != 0 {
				j++
			}
		}
		steps = append(steps, d)
		loops = append(loops, float64(len(tr.loops)))
		inLoops = append(inLoops, sum)
		serial = append(serial, d-sum)
		small = append(small, sm)
		smallT = append(smallT, smT)
		joined = append(joined, j)
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	least := func(v []float64) float64 { return slices.Min(v) }
	fmt.Printf("decode step: median %.0f µs (least %.0f); loops a step %.0f (worker joined %.0f)\n", med(steps), least(steps), med(loops), med(joined))
	fmt.Printf("  in loops %.0f µs (least %.0f); outside loops %.0f µs (least %.0f)\n", med(inLoops), least(inLoops), med(serial), least(serial))
	// the fastest step's gaps between loops (serial work), by the
	// loop's place in its layer (the classifier's loop last)
	if len(best) > 1 {
		start := bestT0.UnixNano()
		fmt.Printf("fastest step %.0f µs: before the first loop %.0f µs, after the last %.0f µs (tasks: first loops %d %d, last %d)\n", bestD.Seconds()*1e6,
			float64(best[0].start-start)/1e3, float64(start+bestD.Nanoseconds()-best[len(best)-1].end)/1e3, best[0].n, best[1].n, best[len(best)-1].n)
		per := (len(best) - 1) / 24
		if per > 0 {
			gap := make([]float64, per)
			dur := make([]float64, per)
			for i := 1; i < len(best); i++ {
				gap[(i-1)%per] += float64(best[i].start-best[i-1].end) / 1e3
				dur[(i-1)%per] += float64(best[i-1].end-best[i-1].start) / 1e3
			}
			for k := range per {
				fmt.Printf("  loop %d of a layer (tasks %d): %.0f µs in it, %.0f µs gap after it (all layers)\n", k, best[k].n, dur[k], gap[k])
			}
		}
	}
	fmt.Printf("  loops under 20 µs: %.0f a step, %.0f µs together\n", med(small), med(smallT))
}
