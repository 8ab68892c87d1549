package switchyard_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// hwInputs is a model's inputs with every free dimension 1 and seeded
// values (int8 or float32).
func hwInputs(b *testing.B, m *switchyard.Model) switchyard.Tensors {
	feeds := switchyard.Tensors{}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, in := range m.Inputs() {
		shape := append([]int(nil), in.Shape...)
		n := 1
		for k := range shape {
			if shape[k] <= 0 {
				shape[k] = 1
			}
			n *= shape[k]
		}
		var x *switchyard.Tensor
		var err error
		switch in.DType {
		case switchyard.Int8:
			v := make([]int8, n)
			for k := range v {
				v[k] = int8(rng.IntN(256) - 128)
			}
			x, err = switchyard.NewTensor(shape, v)
		case switchyard.Float32:
			v := make([]float32, n)
			for k := range v {
				v[k] = rng.Float32()*2 - 1
			}
			x, err = switchyard.NewTensor(shape, v)
		default:
			b.Skipf("input %s: %v", in.Name, in.DType)
		}
		if err != nil {
			b.Fatal(err)
		}
		feeds[in.Name] = x
	}
	return feeds
}

// BenchmarkSmallRunInto times RunInto alone on the small models whose run
// is mostly per-call overhead (hello_world_int8: three int8
// FULLY_CONNECTED of at most 16×16), at 1 and 2 threads, default backends
// and native,cpu (as placed, and all on native: ignore-costs), with
// -benchmem's allocations; cpu-ns/op is the process CPU time per call
// (steadier than wall time on a loaded machine), least-cpu-ns/op that of
// the least chunk of 1000 calls.
func BenchmarkSmallRunInto(b *testing.B) {
	for _, model := range []string{"tflite/hello_world_int8.tflite", "tflite/micro_speech_quantized.tflite"} {
		for _, threads := range []int{1, 2} {
			for _, set := range [][]string{nil, {"native", "cpu"}, {"native", "cpu", "ignore-costs"}} {
				name := "default"
				if set != nil {
					name = strings.Join(set, "+")
				}
				ignore := len(set) == 3
				if ignore {
					set = set[:2]
				}
				base := model[strings.LastIndex(model, "/")+1:]
				b.Run(fmt.Sprintf("%s/threads=%d/%s", strings.TrimSuffix(base, ".tflite"), threads, name), func(b *testing.B) {
					file := shared.Path(b, "testdata/"+model)
					ctx := context.Background()
					m, err := switchyard.Open(ctx, file, &switchyard.OpenOptions{Backends: set, Threads: threads, Policy: switchyard.Policy{IgnoreCosts: ignore}})
					if err != nil {
						b.Skip(err)
					}
					defer m.Close()
					in := hwInputs(b, m)
					outs, err := m.Run(ctx, in)
					if err != nil {
						b.Fatal(err)
					}
					for k, v := range outs {
						outs[k] = v.Clone()
					}
					b.ReportAllocs()
					// process CPU time per chunk of calls: the mean, and the
					// least chunk's (what is left when nothing else intrudes)
					const chunk = 1000
					least := time.Duration(math.MaxInt64)
					b.ResetTimer()
					start := runClock()
					for i := 0; i < b.N; i += chunk {
						n := min(chunk, b.N-i)
						c0 := runClock()
						for range n {
							if err := m.RunInto(ctx, in, outs); err != nil {
								b.Fatal(err)
							}
						}
						if n == chunk {
							least = min(least, runClock()-c0)
						}
					}
					b.ReportMetric(float64(runClock()-start)/float64(b.N), "cpu-ns/op")
					// one call at a time after a process-clock read (a
					// system call, as BenchmarkVsTFLiteXNNPACK's timing
					// makes between calls): the least wall time of a
					// call with what a system call leaves in the caches
					// and branch predictors
					b.StopTimer() // (not in ns/op nor allocs/op)
					one := time.Duration(math.MaxInt64)
					for range min(b.N, 20000) {
						runClock()
						t0 := time.Now()
						if err := m.RunInto(ctx, in, outs); err != nil {
							b.Fatal(err)
						}
						one = min(one, time.Since(t0))
					}
					b.ReportMetric(float64(one), "least-ns-after-syscall")
					if least < math.MaxInt64 {
						b.ReportMetric(float64(least)/chunk, "least-cpu-ns/op")
					}
				})
			}
		}
	}
}
