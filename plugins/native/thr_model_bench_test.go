package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// BenchmarkThrModel compiles each zoo model of THR_MODELS (default
// UltraFace) at 1 thread and at 2, and with THR_AB=bands (or
// bands-swapped: in the other order) also at 2 threads with
// thr_bands.go's row bands off, runs them in turn
// THR_ROUNDS times (default 200), 4 calls and 1 profiled call a turn,
// and prints each variant's least, 10th and 25th percentile and median
// call time and the sum of its nodes' least times (THR_NODES=1: each
// node's): an A/B in one process, alternating, on a shared machine,
// where the low percentiles are the calls that had both cores.
//
//	THR_AB=bands go test ./plugins/native -run '^$' -bench ThrModel -benchtime 1x
func BenchmarkThrModel(b *testing.B) {
	root := shared.Path(b, "testdata")
	models := []string{"ultraface_rfb_320"}
	if s := os.Getenv("THR_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 200
	if s := os.Getenv("THR_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, m := range models {
		b.Run(m, func(b *testing.B) {
			for b.Loop() {
				thrModel(b, root, m, rounds)
			}
		})
	}
}

func thrModel(b *testing.B, root, m string, rounds int) {
	file := filepath.Join(root, "zoo", m, "model.onnx")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(root, "zoo", m, "model.tflite")
	}
	defer func(rb bool) { rowBands = rb }(rowBands)
	// a variant: threads and the run-time switches set before each of
	// its calls
	type variant struct {
		name    string
		threads int
		bands   bool
	}
	vs := []variant{{"1t", 1, true}, {"2t", 2, true}}
	switch os.Getenv("THR_AB") {
	case "bands":
		vs = append(vs, variant{"2t no bands", 2, false})
	case "bands-swapped": // the same, the 2-thread variants in the other order
		vs = []variant{{"1t", 1, true}, {"2t no bands", 2, false}, {"2t", 2, true}}
	}
	var zs []*zooProfiled
	var names []string
	for _, v := range vs {
		z, err := compileZooProfiledThreads(file, v.threads)
		if err != nil {
			b.Fatal(err)
		}
		defer z.close()
		zs = append(zs, z)
		names = append(names, v.name)
	}
	calls := make([][]time.Duration, len(zs))
	best := make([]map[string]time.Duration, len(zs))
	for i := range best {
		best[i] = map[string]time.Duration{}
	}
	ctx := context.Background()
	for r := 0; r < rounds; r++ {
		for i, z := range zs {
			rowBands = vs[i].bands
			time.Sleep(time.Millisecond)
			for k := 0; k < 5; k++ {
				t0 := time.Now()
				if k < 4 {
					if err := z.exe.(hal.Executable).Execute(ctx, z.in, z.outs); err != nil {
						b.Fatal(err)
					}
					if r > 0 {
						calls[i] = append(calls[i], time.Since(t0))
					}
					continue
				}
				// the last call of a turn profiled: each node's least time
				p, err := z.exe.ExecuteProfiled(ctx, z.in, z.outs)
				if err != nil {
					b.Fatal(err)
				}
				for _, k := range p.Kernels {
					key := strings.Join(k.Nodes, ",")
					d := time.Duration(k.EndNS - k.StartNS)
					if old, ok := best[i][key]; !ok || d < old {
						best[i][key] = d
					}
				}
			}
		}
	}
	fmt.Printf("%s (%d rounds × 4 calls, 1 profiled):\n", m, rounds)
	for i, c := range calls {
		sort.Slice(c, func(a, b int) bool { return c[a] < c[b] })
		ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
		var sum time.Duration
		for _, d := range best[i] {
			sum += d
		}
		fmt.Printf("  %-16s least %.3f  p10 %.3f  p25 %.3f  median %.3f ms; sum of least nodes %.3f ms\n", names[i], ms(c[0]), ms(c[len(c)/10]), ms(c[len(c)/4]), ms(c[len(c)/2]), ms(sum))
	}
	if os.Getenv("THR_NODES") != "" {
		keys := make([]string, 0, len(best[0]))
		for k := range best[0] {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(a, b int) bool { return best[0][keys[a]] > best[0][keys[b]] })
		for _, k := range keys {
			fmt.Printf("  %-10.10s", k)
			for i := range best {
				fmt.Printf(" %7.1f", best[i][k].Seconds()*1e6)
			}
			fmt.Println()
		}
	}
}
