//go:build !race

package native

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// TestAttnSplitF32NoAllocs: after a warm-up call, a decode step over a
// float32 cache bound in place on a pool of two (attnSplitF32) allocates
// nothing, its output from the allocator. Not with the race detector
// (it allocates on its own and drops sync.Pool entries at random).
func TestAttnSplitF32NoAllocs(t *testing.T) {
	defer func(w int) { gqaSplitWork = w }(gqaSplitWork)
	gqaSplitWork = 0
	p := newPool(2)
	defer p.close()
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	g := &gqaNative{ref: ref.Kernel, pool: p}
	c := gqaTest{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 128, seqlens: []int{70}, total: 71, rotary: 1}
	n, in := gqaCall(c, rand.New(rand.NewPCG(53, 54)))
	n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: 1}
	gs, ok := gqaPlan(n, in)
	if !ok || gs.cache.dt != graph.Float32 {
		t.Fatal("native declined the call or its cache is not float32")
	}
	ctx := &kernels.Context{Context: context.Background(), Opset: 1, Alloc: &fixedAlloc{by: map[[5]int]*graph.Tensor{}}}
	ck, cv := &graph.Tensor{DType: graph.Float32, Shape: in[3].Shape, Data: in[3].Data}, &graph.Tensor{DType: graph.Float32, Shape: in[4].Shape, Data: in[4].Data}
	inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
	for range 3 {
		if _, err := g.run(ctx, n, in, inPlace); err != nil {
			t.Fatal(err)
		}
	}
	if allocs := testing.AllocsPerRun(50, func() {
		if _, err := g.run(ctx, n, in, inPlace); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per call", allocs)
	}
}
