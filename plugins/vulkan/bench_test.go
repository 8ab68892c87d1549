package vulkan_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
)

// benchEnqueue times one pre-recorded call on device buffers: submit and
// wait for its fence (the recording is replayed: the same buffers).
func benchEnqueue(b *testing.B, n *graph.Node, shapes map[string][]int, order []string, out []int) {
	dev, _ := device(b, vulkan.Options{})
	ctx := context.Background()
	g := &graph.Graph{Name: "bench", Nodes: []*graph.Node{n}, Outputs: []graph.ValueInfo{{Name: n.Outputs[0], Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(out...)}}}}
	rng := rand.New(rand.NewPCG(1, 1))
	var ins []hal.Buffer
	for _, name := range order {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shapes[name]...)}})
		buf, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: shapes[name], Memory: hal.MemoryDeviceLocal})
		if err != nil {
			b.Fatal(err)
		}
		f, err := dev.Upload(ctx, buf, randT(rng, shapes[name]...), nil)
		if err != nil || f.Wait(ctx) != nil {
			b.Fatal(err)
		}
		ins = append(ins, buf)
	}
	c, err := dev.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Release()
	outBuf, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: out, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		b.Fatal(err)
	}
	run := func() {
		f, err := c.Enqueue(ctx, ins, []hal.Buffer{outBuf}, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
	run() // lowering, pipelines and the recording
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
}

// BenchmarkDispatchAdd1024 is the per-dispatch overhead: a 1024-element
// Add, pre-recorded command buffer, submit + fence.
func BenchmarkDispatchAdd1024(b *testing.B) {
	benchEnqueue(b, node("Add", []string{"a", "b"}, []string{"y"}), map[string][]int{"a": {1024}, "b": {1024}}, []string{"a", "b"}, []int{1024})
}

// BenchmarkMatMul512 is a 512x512x512 MatMul (2*512^3 flops per op).
func BenchmarkMatMul512(b *testing.B) {
	benchEnqueue(b, node("MatMul", []string{"a", "b"}, []string{"y"}), map[string][]int{"a": {512, 512}, "b": {512, 512}}, []string{"a", "b"}, []int{512, 512})
	b.ReportMetric(2*512*512*512/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GFLOP/s")
}

// BenchmarkGQADecode: one decode step of a GroupQueryAttention with the
// stories260K shapes (8 query heads, 4 key/value heads of 8, a 512-long
// cache), submit and wait: the presents in place of the pasts (only the
// new row written) against new present buffers (the past copied).
func BenchmarkGQADecode(b *testing.B) {
	for _, inPlace := range []bool{true, false} {
		name := "copy"
		if inPlace {
			name = "inplace"
		}
		b.Run(name, func(b *testing.B) {
			dev, _ := device(b, vulkan.Options{})
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 1))
			const B, N, KV, H, P = 1, 8, 4, 8, 512
			g := gqaShape{B: B, S: 1, N: N, KV: KV, H: H, P: P, rows: P, seqlens: []int32{100}}
			c, err := dev.Compile(ctx, gqaSubgraph(g, randT(rng, P, H/2), randT(rng, P, H/2), iattr("do_rotary", 1), iattr("rotary_interleaved", 1)), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Release()
			vals := []*graph.Tensor{randT(rng, B, 1, N*H), randT(rng, B, 1, KV*H), randT(rng, B, 1, KV*H), randT(rng, B, KV, P, H), randT(rng, B, KV, P, H),
				graph.MustFromSlice([]int{1}, []int32{100}), graph.Scalar(int32(101))}
			var ins []hal.Buffer
			for _, v := range vals {
				buf, err := dev.Allocate(ctx, hal.BufferRequest{DType: v.DType, Shape: v.Shape, Memory: hal.MemoryDeviceLocal})
				if err != nil {
					b.Fatal(err)
				}
				defer dev.Free(buf)
				f, err := dev.Upload(ctx, buf, v, nil)
				if err != nil || f.Wait(ctx) != nil {
					b.Fatal(err)
				}
				ins = append(ins, buf)
			}
			outs := make([]hal.Buffer, 3)
			for i, s := range [][]int{{B, 1, N * H}, {B, KV, P, H}, {B, KV, P, H}} {
				if outs[i], err = dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: s, Memory: hal.MemoryDeviceLocal}); err != nil {
					b.Fatal(err)
				}
				defer dev.Free(outs[i])
			}
			if inPlace {
				outs[1], outs[2] = ins[3], ins[4]
			}
			for i := 0; i < b.N; i++ {
				f, err := c.Enqueue(ctx, ins, outs, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := f.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
