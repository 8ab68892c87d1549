package cabi

import (
	"context"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// executeLoop compiles a Relu on 16 float32 values and returns a function
// that runs it n times through the portable layer (hal.Compiled), as the
// runtime calls partitions. inPlace passes a caller-allocated output;
// otherwise the backend allocates and fills it.
func executeLoop(b *testing.B, dev *hal.Device, inPlace bool) func(n int) {
	ctx := context.Background()
	exe, err := dev.Compile(ctx, oneNode("Relu", []int{16}), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = exe.Release() })
	x := graph.MustFromSlice([]int{16}, make([]float32, 16))
	in := []*graph.Tensor{x}
	out := &graph.Tensor{DType: graph.Float32, Shape: []int{16}, Data: make([]float32, 16)}
	outs := []*graph.Tensor{out}
	return func(n int) {
		for i := 0; i < n; i++ {
			if !inPlace {
				*out = graph.Tensor{}
			}
			if err := exe.Execute(ctx, in, outs); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func simDev(b *testing.B) *hal.Device {
	d, err := hal.NewDevice(sim.New(sim.Options{Ops: []string{"Relu"}}), hal.LoadLinked)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	return d
}

// BenchmarkCallOverhead compares the per-call cost of the dlopen'd example
// delegate with the linked-in simulation backend on the same trivial op
// (Relu of 16 float32). The sim and cabi sub-benchmarks time each alone;
// ratio runs both loops b.N times in one benchmark and reports
// cabi ns/op ÷ sim ns/op as "cabi/sim".
//
//	go test -run '^$' -bench CallOverhead ./plugins/cabi/
func BenchmarkCallOverhead(b *testing.B) {
	cdev := openDevice(b, exampleLib(b))
	sdev := simDev(b)
	for _, mode := range []struct {
		name    string
		inPlace bool
	}{{"filled", false}, {"in-place", true}} {
		b.Run("sim/"+mode.name, func(b *testing.B) {
			run := executeLoop(b, sdev, mode.inPlace)
			b.ReportAllocs()
			b.ResetTimer()
			run(b.N)
		})
		b.Run("cabi/"+mode.name, func(b *testing.B) {
			run := executeLoop(b, cdev, mode.inPlace)
			b.ReportAllocs()
			b.ResetTimer()
			run(b.N)
		})
		b.Run("ratio/"+mode.name, func(b *testing.B) {
			s, c := executeLoop(b, sdev, mode.inPlace), executeLoop(b, cdev, mode.inPlace)
			s(100)
			c(100)
			b.ResetTimer()
			t0 := time.Now()
			s(b.N)
			ts := time.Since(t0)
			t0 = time.Now()
			c(b.N)
			tc := time.Since(t0)
			b.ReportMetric(float64(tc)/float64(ts), "cabi/sim")
			b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "sim-ns/op")
			b.ReportMetric(float64(tc.Nanoseconds())/float64(b.N), "cabi-ns/op")
		})
	}
}
