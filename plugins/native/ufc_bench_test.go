package native

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// BenchmarkUfcZoo times zoo models (UFC_MODELS, default deeplab_v3 and
// ultraface_rfb_320) compiled on native with UFC_THREADS threads (default
// 1) with this package's channels-last Resize fusion off and on,
// alternating the two in rounds of 5 runs (the machine is shared): each
// one's median of the rounds' least runs (the thread's CPU time at one
// thread, wall time at more), and their ratio (on/off).
func BenchmarkUfcZoo(b *testing.B) {
	models := []string{"deeplab_v3", "ultraface_rfb_320"}
	if s := os.Getenv("UFC_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	threads := 1
	if s := os.Getenv("UFC_THREADS"); s != "" {
		threads, _ = strconv.Atoi(s)
	}
	root := shared.Path(b, "testdata/zoo")
	for _, name := range models {
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(root, name)
			ir, err := formats.LoadFile(filepath.Join(dir, "model.onnx"), formats.Options{})
			if err != nil {
				b.Fatal(err)
			}
			sg := typedSubgraph(ir)
			ts, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil || len(ts) != len(sg.Graph.Inputs) {
				b.Fatalf("test inputs: %v", err)
			}
			var exes [2]hal.Executable
			for i, on := range []bool{false, true} {
				useResizeNHWC = on
				nb := New(Options{Threads: threads})
				defer nb.Close()
				e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: threads})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				exes[i] = e
			}
			useResizeNHWC = true
			clock := benchClock
			if threads > 1 {
				clock = func() int64 { return time.Now().UnixNano() }
			}
			off, on := benchAB(b, exes, ts, len(sg.Graph.Outputs), clock)
			b.ReportMetric(off, "off-µs")
			b.ReportMetric(on, "on-µs")
			b.ReportMetric(on/off, "ratio")
		})
	}
}

// BenchmarkUfcResizeNHWC times deeplab_v3's last two nodes (Upsample
// 21×33×33 → 257×257, Transpose to channels-last) apart and fused, one
// thread, alternating (ufcAB).
func BenchmarkUfcResizeNHWC(b *testing.B) {
	m := resizeNHWCModel(1, 21, 33, 33, 257, 257, "linear", "asymmetric")
	sg := typedSubgraph(m)
	x := make([]float32, 21*33*33)
	for i := range x {
		x[i] = float32(i%97) / 97
	}
	ts := []*graph.Tensor{graph.MustFromSlice([]int{1, 21, 33, 33}, x)}
	var fns []func()
	for _, on := range []bool{false, true} {
		useResizeNHWC = on
		nb := New(Options{Threads: 1})
		defer nb.Close()
		e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Release()
		outs := []*graph.Tensor{{}}
		fns = append(fns, func() {
			if err := e.Execute(context.Background(), ts, outs); err != nil {
				b.Fatal(err)
			}
		})
	}
	useResizeNHWC = true
	ufcAB(b, []string{"off", "on"}, fns...)
}

// ufcAB times fns alternately in rounds (least thread CPU time of reps
// runs a round) and reports each one's median of rounds in µs.
func ufcAB(b *testing.B, names []string, fns ...func()) {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	mins := make([][]float64, len(fns))
	for b.Loop() {
		for i, f := range fns {
			best := 1e18
			for range 5 {
				t0 := benchClock()
				f()
				best = min(best, float64(benchClock()-t0)/1e3)
			}
			mins[i] = append(mins[i], best)
		}
	}
	for i := range fns {
		v := append([]float64{}, mins[i]...)
		sort.Float64s(v)
		b.ReportMetric(v[len(v)/2], names[i]+"-µs")
	}
}
