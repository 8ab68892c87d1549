package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// gqaSubgraph is one GroupQueryAttention (2 heads, 1 kv head, head size
// 2) on a shared cache of 4 positions: present_key and present_value may
// be past_key's and past_value's buffers.
func gqaSubgraph() *hal.Subgraph {
	f := func(name string, dims ...int) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}}
	}
	i32 := func(name string, dims ...int) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Int32, Shape: graph.StaticShape(dims...)}}
	}
	g := &graph.Graph{
		Name:    "gqa",
		Inputs:  []graph.ValueInfo{f("q", 1, 1, 4), f("k", 1, 1, 2), f("v", 1, 1, 2), f("past_key", 1, 1, 4, 2), f("past_value", 1, 1, 4, 2), i32("seqlens_k", 1), i32("total")},
		Outputs: []graph.ValueInfo{f("out", 1, 1, 4), f("present_key", 1, 1, 4, 2), f("present_value", 1, 1, 4, 2)},
		Nodes: []*graph.Node{{Name: "gqa", OpType: "GroupQueryAttention", Domain: "com.microsoft",
			Inputs:  []string{"q", "k", "v", "past_key", "past_value", "seqlens_k", "total"},
			Outputs: []string{"out", "present_key", "present_value"},
			Attrs: map[string]*graph.Attribute{
				"num_heads":    {Name: "num_heads", Type: graph.AttrInt, I: 2},
				"kv_num_heads": {Name: "kv_num_heads", Type: graph.AttrInt, I: 1}}}},
	}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}}
}

// TestEnqueueInPlace: the double declares GroupQueryAttention's cache
// pairs; enqueued with present_key's buffer being past_key's, the call
// appends the new position into that buffer, nothing crosses to the host
// between calls, and the result equals the host call's. An output that
// is an undeclared input's buffer is refused.
func TestEnqueueInPlace(t *testing.T) {
	ctx := context.Background()
	b := sim.NewDeviceMemory(sim.Options{Ops: []string{"com.microsoft:GroupQueryAttention"}})
	d, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	exe, err := d.Compile(ctx, gqaSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	hd, err := hal.NewDevice(cpu.New(), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	hostExe, err := hd.Compile(ctx, gqaSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hostExe.Release()
	pairs := exe.InPlaceOutputs()
	if len(pairs) != 2 || pairs[0] != (hal.InPlace{Output: 1, Input: 3}) || pairs[1] != (hal.InPlace{Output: 2, Input: 4}) {
		t.Fatalf("InPlaceOutputs = %v", pairs)
	}
	upload := func(t0 *graph.Tensor) hal.Buffer {
		buf, err := d.Allocate(ctx, hal.BufferRequest{DType: t0.DType, Shape: t0.Shape, Memory: hal.MemoryDeviceLocal})
		if err != nil {
			t.Fatal(err)
		}
		f, err := d.Upload(ctx, buf, t0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		return buf
	}
	zeros := func(dims ...int) *graph.Tensor { z, _ := graph.New(graph.Float32, dims); return z }
	pk, pv := upload(zeros(1, 1, 4, 2)), upload(zeros(1, 1, 4, 2))
	hostK, hostV := zeros(1, 1, 4, 2), zeros(1, 1, 4, 2)
	var fence hal.Fence
	before := b.Counters()
	for pos := 0; pos < 3; pos++ {
		x := float32(pos + 1)
		q := graph.MustFromSlice([]int{1, 1, 4}, []float32{x, -x, 0.5, x})
		k := graph.MustFromSlice([]int{1, 1, 2}, []float32{x, 1})
		v := graph.MustFromSlice([]int{1, 1, 2}, []float32{-x, 2 * x})
		sl := graph.MustFromSlice([]int{1}, []int32{int32(pos)})
		tot := &graph.Tensor{DType: graph.Int32, Shape: []int{}, Data: []int32{int32(pos + 1)}}
		// the host call, in place of its own tensors
		hostOut := []*graph.Tensor{zeros(1, 1, 4), hostK, hostV}
		if err := hostExe.Execute(ctx, []*graph.Tensor{q, k, v, hostK, hostV, sl, tot}, hostOut); err != nil {
			t.Fatal(err)
		}
		in := []hal.Buffer{upload(q), upload(k), upload(v), pk, pv, upload(sl), upload(tot)}
		outs := []hal.Buffer{nil, pk, pv}
		var after []hal.Fence
		if fence != nil {
			after = []hal.Fence{fence}
		}
		if fence, err = exe.Enqueue(ctx, in, outs, after, nil); err != nil {
			t.Fatal(err)
		}
		if outs[1] != pk || outs[2] != pv {
			t.Fatal("the in-place outputs were replaced")
		}
		got := zeros(1, 1, 4)
		df, err := d.Download(ctx, got, outs[0], []hal.Fence{fence})
		if err != nil {
			t.Fatal(err)
		}
		if err := df.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if !equal32(got.Data.([]float32), hostOut[0].Data.([]float32)) {
			t.Fatalf("position %d: device %v, host %v", pos, got.Data, hostOut[0].Data)
		}
	}
	c := b.Counters().Since(before)
	// past_key reached the executable once: the zeros uploaded first
	if c.UploadedValues["past_key"] != 1 || c.DownloadedValues["present_key"] != 0 {
		t.Errorf("the cache crossed to the host: %+v", c)
	}
	gotK := zeros(1, 1, 4, 2)
	df, err := d.Download(ctx, gotK, pk, []hal.Fence{fence})
	if err != nil {
		t.Fatal(err)
	}
	if err := df.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if !equal32(gotK.Data.([]float32), hostK.Data.([]float32)) || hostK.Data.([]float32)[4] != 3 {
		t.Errorf("cache on the device %v, on the host %v", gotK.Data, hostK.Data)
	}
	// present_value into past_key's buffer: not a declared pair
	in := []hal.Buffer{pk, pk, pk, pk, pv, pk, pk}
	if _, err := exe.Enqueue(ctx, in, []hal.Buffer{nil, nil, pk}, nil, nil); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Errorf("undeclared aliasing: %v, want InvalidArgument", err)
	}
	if _, err := exe.Enqueue(ctx, in, []hal.Buffer{nil, pv, pv}, nil, nil); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Errorf("one buffer for two outputs: %v, want InvalidArgument", err)
	}
}

func equal32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
			return false
		}
	}
	return true
}
