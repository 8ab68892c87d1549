package native

import (
	"context"
	"fmt"
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
	"pf": func(v int) [2]string {
		pfOff.Store(v == 1)
		return [2]string{"prefetch on", "prefetch off"}
	},
	"big": func(v int) [2]string {
		bigTaskOff.Store(v == 1)
		return [2]string{"classifier 2 MB", "classifier 512 KB"}
	},
	"small": func(v int) [2]string {
		smallSplitOff.Store(v == 1)
		return [2]string{"small: a task a thread", "small: 128 KB tasks"}
	},
	"caller": func(v int) [2]string {
		callerHeadOff.Store(v == 1)
		return [2]string{"caller reads", "caller spins"}
	},
}

// TestTailDecodeAB (a measurement tool, skipped without TAIL_MODEL, a
// .gguf): a single sequence's decode steps at 2 threads, alternating
// (ABBA) between the two settings of experiment TAIL_AB (a key of
// tailABKnobs: "none" is an A/A run, the tool's own noise), each step's
// parallel loops traced (pool.go's loopTrace). It prints, for each
// setting, the median and lower quartile over its steps of the step and
// of the time in and outside loops, and over every instance of each
// loop of a layer (24 × that: the other processes on a shared machine
// take a thread for ms at a time, so a disturbed loop of some µs is an
// outlier among its instances) of the loop, the gap after it and when a
// worker joined it (TAIL_STEPS steps in all, 240 unless set).
//
//	TAIL_MODEL=/work/tmp/qwen2-Q4_0.gguf TAIL_AB=caller go test ./plugins/native -run TestTailDecodeAB -v
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
	// each setting's steps (the step, in and outside loops, before the
	// first and after the last loop) and every instance of each loop of
	// a layer (its time, the gap after it, when a worker joined it;
	// then the classifier's loop): a loop of some µs that the other
	// processes on the machine took a thread from is an outlier among
	// its instances (time slices are of ms), the instances' median is
	// not
	type stat struct {
		step [5][]float64
		inst [][]float64
	}
	var st [2]stat
	per := 0
	for i := 0; i < steps+10; i++ {
		v := (i ^ i>>1) & 1 // ABBA: each setting as often on even steps as on odd ones
		knob(v)
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
			continue
		}
		var in int64
		for _, l := range ls {
			in += l.end - l.start
		}
		x := &st[v]
		for k, e := range []int64{d, in, d - in, ls[0].start - t0.UnixNano(), t0.UnixNano() + d - ls[len(ls)-1].end} {
			x.step[k] = append(x.step[k], float64(e)/1e3)
		}
		per = (len(ls) - 1) / 24
		for len(x.inst) < 3*per+1 {
			x.inst = append(x.inst, nil)
		}
		for i := 0; i+1 < len(ls); i++ {
			k, l := i%per, ls[i]
			x.inst[3*k] = append(x.inst[3*k], float64(l.end-l.start)/1e3)
			x.inst[3*k+1] = append(x.inst[3*k+1], float64(ls[i+1].start-l.end)/1e3)
			if l.join != 0 {
				x.inst[3*k+2] = append(x.inst[3*k+2], float64(l.join-l.start)/1e3)
			}
		}
		l := ls[len(ls)-1]
		x.inst[3*per] = append(x.inst[3*per], float64(l.end-l.start)/1e3)
	}
	q := func(v []float64, f float64) float64 {
		if len(v) == 0 {
			return 0
		}
		v = slices.Clone(v)
		slices.Sort(v)
		return v[int(f*float64(len(v)-1))]
	}
	row := func(name string, f func(x *stat) []float64, scale float64) {
		a, b := f(&st[0]), f(&st[1])
		fmt.Printf("  %-26s %8.1f %8.1f %+6.1f%%  %8.1f %8.1f %+6.1f%%\n", name,
			scale*q(a, 0.5), scale*q(b, 0.5), 100*(q(a, 0.5)-q(b, 0.5))/q(b, 0.5),
			scale*q(a, 0.25), scale*q(b, 0.25), 100*(q(a, 0.25)-q(b, 0.25))/q(b, 0.25))
	}
	names := knob(0)
	fmt.Printf("TAIL_AB=%s, %d steps each; µs a step: medians, then lower quartiles\n", exp, len(st[0].step[0]))
	fmt.Printf("  %-26s %8s %8s %7s  %8s %8s\n", "", names[0], names[1], "", names[0], names[1])
	for k, name := range []string{"step", "in loops", "outside loops", "before the first loop", "after the last loop"} {
		row(name, func(x *stat) []float64 { return x.step[k] }, 1)
	}
	fmt.Printf("  each loop of a layer: 24 × its instances' median (quartile)\n")
	for k := 0; k < per; k++ {
		row(fmt.Sprintf("loop %d", k), func(x *stat) []float64 { return x.inst[3*k] }, 24)
		row("  gap after it", func(x *stat) []float64 { return x.inst[3*k+1] }, 24)
		row("  worker joined after", func(x *stat) []float64 { return x.inst[3*k+2] }, 24)
	}
	row("classifier (last loop)", func(x *stat) []float64 { return x.inst[3*per] }, 1)
}
