package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestT2aLoopTrace (a measurement tool, skipped without LOOPS_MODEL): a
// zoo model's parallel loops at 2 threads over 200 calls, how many of
// each call's loops the worker joined (every 20th call), and for the
// fastest call each loop's tasks, time, the caller's share and the
// worker's join delay (pool.go's loopTrace).
//
//	LOOPS_MODEL=ultraface_rfb_320 go test ./plugins/native -run TestT2aLoopTrace -v
func TestT2aLoopTrace(t *testing.T) {
	m := os.Getenv("LOOPS_MODEL")
	if m == "" {
		t.Skip("LOOPS_MODEL not set")
	}
	file := filepath.Join(shared.Path(t, "testdata"), "zoo", m, "model.onnx")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(shared.Path(t, "testdata"), "zoo", m, "model.tflite")
	}
	z, err := compileZooProfiledThreads(file, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer z.close()
	var best []loopRecord
	bestD := time.Hour
	for r := 0; r < 200; r++ {
		tr := &loopTracer{}
		loopTrace.Store(tr)
		t0 := time.Now()
		if _, err := z.exe.ExecuteProfiled(context.Background(), z.in, z.outs); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		loopTrace.Store(nil)
		joined, loops := 0, len(tr.loops)
		for _, l := range tr.loops {
			if l.join != 0 {
				joined++
			}
		}
		if r%20 == 0 {
			fmt.Printf("call %d: %.1f µs, %d of %d loops joined\n", r, d.Seconds()*1e6, joined, loops)
		}
		if d < bestD {
			bestD, best = d, tr.loops
		}
	}
	fmt.Printf("best call %.1f µs, %d loops\n", bestD.Seconds()*1e6, len(best))
	var sum, joinSum float64
	type row struct {
		n, caller int
		d, join   float64
	}
	var rows []row
	for _, l := range best {
		d := float64(l.end-l.start) / 1e3
		j := -1.0
		if l.join != 0 {
			j = float64(l.join-l.start) / 1e3
			joinSum += j
		}
		sum += d
		rows = append(rows, row{l.n, l.caller, d, j})
	}
	sort.Slice(rows, func(a, b int) bool { return rows[a].d > rows[b].d })
	for _, r := range rows {
		fmt.Printf("  n %3d caller %3d  %7.1f µs  join %6.1f µs\n", r.n, r.caller, r.d, r.join)
	}
	fmt.Printf("loops %.1f µs total, joins %.1f µs\n", sum, joinSum)
}
