//go:build !race

package native

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestGQANoAllocs: after a warm-up call, a decode step and a prefill
// allocate nothing (in place and copying), their outputs from the
// allocator. Not with the race detector, which allocates on its own (and
// drops sync.Pool entries at random).
func TestGQANoAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	g := &gqaNative{}
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	g.ref = ref.Kernel
	for _, c := range []gqaTest{
		{B: 1, S: 1, N: 8, KV: 4, H: 8, P: 64, seqlens: []int{31}, total: 32, rotary: 2},
		{B: 2, S: 6, N: 4, KV: 2, H: 16, P: 16, seqlens: []int{5, 9}, total: 10, rotary: 1, softcap: 3},
	} {
		n, in := gqaCall(c, rng)
		ctx := &kernels.Context{Context: context.Background(), Opset: 1, Alloc: &fixedAlloc{by: map[[5]int]*graph.Tensor{}}}
		ck, cv := &graph.Tensor{DType: graph.Float32, Shape: in[3].Shape, Data: in[3].Data}, &graph.Tensor{DType: graph.Float32, Shape: in[4].Shape, Data: in[4].Data}
		inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
		for _, mode := range []struct {
			name string
			into func(*kernels.Context, int) *graph.Tensor
		}{{"copying", noInto}, {"in place", inPlace}} {
			if _, err := g.run(ctx, n, in, mode.into); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(20, func() {
				if _, err := g.run(ctx, n, in, mode.into); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v %s: %v allocations per call", c, mode.name, allocs)
			}
		}
	}
}
