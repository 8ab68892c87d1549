package grpcplugin_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

func identity(n int, op string) *hal.Subgraph {
	g := &graph.Graph{
		Name:    "id",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n)}}},
		Nodes:   []*graph.Node{{OpType: op, Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
}

// benchCall times Compiled.Execute (the partition call the runtime makes)
// and reports the median and 99th percentile per call.
func benchCall(b *testing.B, dev *hal.Device, n int, op string) {
	ctx := context.Background()
	c, err := dev.Compile(ctx, identity(n, op), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release()
	x := graph.MustFromSlice([]int{n}, make([]float32, n))
	y := &graph.Tensor{DType: graph.Float32, Shape: []int{n}, Data: make([]float32, n)}
	for i := 0; i < 20; i++ { // warm regions and page tables
		if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(2 * 4 * n))
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// benchDeviceBuffers is benchCall with the input and output allocated in
// the backend's device buffers (shared memory): no copy in or out.
func benchDeviceBuffers(b *testing.B, dev *hal.Device, n int, op string) {
	ctx := context.Background()
	c, err := dev.Compile(ctx, identity(n, op), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release()
	x, err := dev.AllocTensor(ctx, graph.Float32, []int{n})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.FreeTensor(x)
	y, err := dev.AllocTensor(ctx, graph.Float32, []int{n})
	if err != nil {
		b.Fatal(err)
	}
	defer dev.FreeTensor(y)
	for i := 0; i < 20; i++ {
		if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(2 * 4 * n))
	var lat []time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

func benchBoth(b *testing.B, n int, op string) {
	b.Run("inprocess", func(b *testing.B) {
		benchCall(b, device(b, sim.New(sim.Options{Ops: []string{op}}), hal.LoadLinked), n, op)
	})
	b.Run("plugin", func(b *testing.B) {
		p := openPlugin(b, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{op}})}})
		benchCall(b, device(b, p, hal.LoadProcess), n, op)
	})
	b.Run("plugin-device-buffers", func(b *testing.B) {
		p := openPlugin(b, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{op}})}})
		benchDeviceBuffers(b, device(b, p, hal.LoadProcess), n, op)
	})
}

// BenchmarkSmallTensor: per-call overhead, 16 float32 through Relu.
func BenchmarkSmallTensor(b *testing.B) { benchBoth(b, 16, "Relu") }

// Benchmark16MiB: a 16 MiB input and a 16 MiB output through Identity
// (memory-copy bound: host copy in, plugin copy, host copy out).
func Benchmark16MiB(b *testing.B) { benchBoth(b, 4<<20, "Identity") }
