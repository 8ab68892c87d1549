package native

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// tailABKnobs are TestTailDecodeAB's experiments: each sets its variant
// v (0: as built, 1: the other setting) and returns its two names.
var tailABKnobs = map[string]func(v int) [2]string{
	"none": func(int) [2]string { return [2]string{"A", "A'"} },
	"split": func(v int) [2]string {
		tailSplitOff.Store(v == 1)
		return [2]string{"split on", "split off"}
	},
	"head": func(v int) [2]string {
		tailHeadOn.Store(v == 0)
		return [2]string{"head first", "worker's end"}
	},
	"pf1m": func(v int) [2]string {
		tailPfMax.Store(int64(1-v) << 20)
		return [2]string{"1 MB ahead", "512 KB"}
	},
	"pf256": func(v int) [2]string {
		tailPfMax.Store(int64(1-v) << 18)
		return [2]string{"256 KB ahead", "512 KB"}
	},
	"pf": func(v int) [2]string {
		pfOff.Store(v == 1)
		return [2]string{"prefetch on", "prefetch off"}
	},
}

// TestTailDecodeAB (a measurement tool, skipped without TAIL_MODEL, a
// .gguf): a single sequence's decode steps at 2 threads, the steps
// alternating between the two settings of experiment TAIL_AB (a key of
// tailABKnobs), each step's parallel loops traced (pool.go's loopTrace):
// the medians over each setting's steps of the step, the time in and
// outside loops, and each loop of a layer (the same loop of every layer
// together), so that the machine's swings fall on both settings alike.
//
//	TAIL_MODEL=/work/tmp/qwen2-Q4_0.gguf TAIL_AB=split go test ./plugins/native -run TestTailDecodeAB -v
func TestTailDecodeAB(t *testing.T) {
	path := os.Getenv("TAIL_MODEL")
	if path == "" {
		t.Skip("TAIL_MODEL not set")
	}
	exp := os.Getenv("TAIL_AB")
	knob := tailABKnobs[exp]
	if knob == nil {
		t.Fatalf("TAIL_AB %q: not one of %v", exp, tailABKnobs)
	}
	defer knob(0)
	steps := 240
	if v, err := strconv.Atoi(os.Getenv("TAIL_STEPS")); err == nil && v > 0 {
		steps = v
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: 2, ContextLength: steps + 64})
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
	// one record a step: the step, in and outside loops, before the
	// first and after the last loop, then each loop of a layer and the
	// gap after it (all layers together), the classifier's loop, and
	// how long after each loop of a layer started a worker joined it
	var recs [][]float64
	for i := 0; i < steps+10; i++ {
		knob(i % 2)
		tr := &loopTracer{}
		loopTrace.Store(tr)
		t0 := time.Now()
		if _, err := s.Feed(ctx, []int{7 + i%50}); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0).Nanoseconds()
		loopTrace.Store(nil)
		ls := tr.loops
		if i < 10 || len(ls) < 25 {
			recs = append(recs, nil)
			continue
		}
		var in int64
		for _, l := range ls {
			in += l.end - l.start
		}
		per := (len(ls) - 1) / 24
		r := make([]float64, 5+3*per+1)
		r[0], r[1], r[2] = float64(d)/1e3, float64(in)/1e3, float64(d-in)/1e3
		r[3] = float64(ls[0].start-t0.UnixNano()) / 1e3
		r[4] = float64(t0.UnixNano()+d-ls[len(ls)-1].end) / 1e3
		sl := r[5:]
		for i := 1; i < len(ls); i++ {
			k := (i - 1) % per
			sl[2*k] += float64(ls[i-1].end-ls[i-1].start) / 1e3
			sl[2*k+1] += float64(ls[i].start-ls[i-1].end) / 1e3
		}
		sl[2*per] = float64(ls[len(ls)-1].end-ls[len(ls)-1].start) / 1e3
		for i := 0; i+1 < len(ls); i++ {
			if ls[i].join != 0 {
				sl[2*per+1+i%per] += float64(ls[i].join-ls[i].start) / 1e3
			}
		}
		recs = append(recs, r)
	}
	// the pairs of steps (one of each setting, one after the other) that
	// both ran within 25% of the fastest step: the steps the other
	// processes on the machine slowed least
	least := math.Inf(1)
	for _, r := range recs {
		if r != nil {
			least = min(least, r[0])
		}
	}
	var st [2][][]float64
	for i := 0; i+1 < len(recs); i += 2 {
		a, b := recs[i], recs[i+1]
		if a == nil || b == nil || len(a) != len(b) || max(a[0], b[0]) > 1.25*least {
			continue
		}
		st[0], st[1] = append(st[0], a), append(st[1], b)
	}
	names := knob(0)
	med := func(v []float64) float64 {
		if len(v) == 0 {
			return 0
		}
		v = slices.Clone(v)
		slices.Sort(v)
		return v[len(v)/2]
	}
	row := func(name string, k int) {
		var v [2][]float64
		for s := range st {
			for _, r := range st[s] {
				v[s] = append(v[s], r[k])
			}
		}
		a, b := med(v[0]), med(v[1])
		fmt.Printf("  %-28s %9.0f %9.0f %+6.1f%%\n", name, a, b, 100*(a-b)/b)
	}
	fmt.Printf("TAIL_AB=%s: %d of %d pairs of steps within 25%% of the fastest (%.0f µs); medians, µs a step\n", exp, len(st[0]), (len(recs)-10)/2, least)
	if len(st[0]) == 0 {
		return
	}
	fmt.Printf("  %-28s %9s %9s\n", "", names[0], names[1])
	for k, name := range []string{"step", "in loops", "outside loops", "before the first loop", "after the last loop"} {
		row(name, k)
	}
	per := (len(st[0][0]) - 6) / 3
	for k := 0; k < 2*per; k++ {
		name := fmt.Sprintf("loop %d of a layer", k/2)
		if k%2 == 1 {
			name = fmt.Sprintf("  gap after loop %d", k/2)
		}
		row(name, 5+k)
	}
	row("classifier (last loop)", 5+2*per)
	for k := 0; k < per; k++ {
		row(fmt.Sprintf("worker joined loop %d after", k), 6+2*per+k)
	}
}
