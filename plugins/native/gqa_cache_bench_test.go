package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// BenchmarkGQACacheBatch: a batched decode step's attention at the
// Qwen2.5-0.5B shape (N 14, KV 2, H 64, rotary halves) over a float16
// cache of 1024 positions bound in place, B sequences at about pos
// positions each (ragged), on one thread and on a pool of two, the
// cache's rows decoded to float32 or attended as they are (asis:
// f16Attn).
//
//	go test ./plugins/native -run '^$' -bench GQACacheBatch
func BenchmarkGQACacheBatch(b *testing.B) {
	p2 := newPool(2)
	defer p2.close()
	for _, B := range []int{1, 4} {
		for _, pos := range []int{24, 100} {
			sl := make([]int, B)
			for i := range sl {
				sl[i] = pos + 3*i
			}
			c := gqaTest{B: B, S: 1, N: 14, KV: 2, H: 64, P: 1024, seqlens: sl, total: pos + 3*B, rotary: 1}
			n, in := gqaCall(c, rand.New(rand.NewPCG(5, 6)))
			in[3], in[4] = toCache(in[3], "f16"), toCache(in[4], "f16")
			ck := &graph.Tensor{DType: in[3].DType, Shape: in[3].Shape, Data: in[3].Data}
			cv := &graph.Tensor{DType: in[4].DType, Shape: in[4].Shape, Data: in[4].Data}
			inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
			for _, th := range []int{1, 2} {
				for _, asIs := range []bool{false, true} {
					var p *pool
					if th == 2 {
						p = p2
					}
					ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
					g := &gqaNative{ref: ref.Kernel, pool: p}
					if asIs && !f16Attn {
						continue
					}
					b.Run(fmt.Sprintf("B=%d/pos=%d/threads=%d/asis=%v", B, pos, th, asIs), func(b *testing.B) {
						defer func(v bool) { f16Attn = v }(f16Attn)
						f16Attn = asIs
						ctx := &kernels.Context{Context: context.Background(), Opset: 1, Alloc: &fixedAlloc{by: map[[5]int]*graph.Tensor{}}}
						c0 := cpuTime()
						for b.Loop() {
							if _, err := g.run(ctx, n, in, inPlace); err != nil {
								b.Fatal(err)
							}
						}
						// the process's CPU time a call: robust to a loaded machine
						b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
					})
				}
			}
		}
	}
}
