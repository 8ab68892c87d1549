package switchyard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// BenchmarkT2bPlacementAB opens each zoo TFLite model twice at the same
// thread count, on the default backends and on native,cpu, and runs the
// two alternating on the same input: least and median wall time and least
// CPU time of each, and their ratios (default / native,cpu). Placement
// being equal (explain), a ratio off 1 is what the default's other
// backends cost a run that does not use them.
//
//	T2B_MODELS=hand_landmark_full T2B_THREADS=1 go test . -run '^$' -bench T2bPlacementAB -benchtime 200x
func BenchmarkT2bPlacementAB(b *testing.B) {
	models := []string{"hand_landmark_full"}
	if s := os.Getenv("T2B_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	threads := 1
	if s := os.Getenv("T2B_THREADS"); s != "" {
		fmt.Sscan(s, &threads)
	}
	zoo := shared.Path(b, "testdata/zoo")
	for _, m := range models {
		b.Run(m, func(b *testing.B) {
			ctx := context.Background()
			file := filepath.Join(zoo, m, "model.tflite")
			var ms [2]*switchyard.Model
			for i, be := range [][]string{nil, {"native", "cpu"}} {
				md, err := switchyard.Open(ctx, file, &switchyard.OpenOptions{Threads: threads, Backends: be})
				if err != nil {
					b.Fatal(err)
				}
				defer md.Close()
				ms[i] = md
			}
			feeds := switchyard.Tensors{}
			for _, in := range ms[0].Inputs() {
				n := 1
				for _, d := range in.Shape {
					n *= max(d, 1)
				}
				v := make([]float32, n)
				for k := range v {
					v[k] = float32(k%255) / 255
				}
				x, err := switchyard.NewTensor(in.Shape, v)
				if err != nil {
					b.Fatal(err)
				}
				feeds[in.Name] = x
			}
			var outs [2]switchyard.Tensors
			for i, md := range ms {
				o, err := md.Run(ctx, feeds)
				if err != nil {
					b.Fatal(err)
				}
				outs[i] = o
			}
			var wall [2][]time.Duration
			var cpu [2]time.Duration
			for it := 0; it < b.N; it++ {
				for k := range ms {
					i := (it + k) % 2
					w0, c0 := time.Now(), runClock()
					if err := ms[i].RunInto(ctx, feeds, outs[i]); err != nil {
						b.Fatal(err)
					}
					c := runClock() - c0
					wall[i] = append(wall[i], time.Since(w0))
					if cpu[i] == 0 || c < cpu[i] {
						cpu[i] = c
					}
				}
			}
			var least, med [2]time.Duration
			for i := range wall {
				sort.Slice(wall[i], func(a, c int) bool { return wall[i][a] < wall[i][c] })
				least[i], med[i] = wall[i][0], wall[i][len(wall[i])/2]
			}
			b.ReportMetric(float64(least[0])/float64(least[1]), "least-ratio")
			b.ReportMetric(float64(med[0])/float64(med[1]), "median-ratio")
			b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-ratio")
			b.ReportMetric(float64(least[0])/1e6, "default-ms")
			b.ReportMetric(float64(least[1])/1e6, "native-ms")
		})
	}
}
