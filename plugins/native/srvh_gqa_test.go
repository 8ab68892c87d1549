package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// TestSrvhGQASplitPrepSameBits: a float16 or Q8_0 cache bound in place
// (a batched decoder's step) on two threads, the rows prepared in the
// attention's loop (runCacheSplit), gives one thread's bits (run's
// serial rotations, then runCache): the output and every byte of the
// caches, for every attention mode (plain, ggml's order, ggml's scaled
// queries), decode steps of 1 and 4 sequences at the Qwen2.5-0.5B shape
// and the package's cases (prompt chunks, windows, softcap, interleaved
// and partial rotations).
func TestSrvhGQASplitPrepSameBits(t *testing.T) {
	defer func(w int) { gqaSplitWork = w }(gqaSplitWork)
	gqaSplitWork = 0
	p := newPool(2)
	defer p.close()
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	rng := rand.New(rand.NewPCG(71, 72))
	cases := []gqaTest{
		{B: 4, S: 1, N: 14, KV: 2, H: 64, P: 128, seqlens: []int{5, 17, 99, 2}, total: 100, rotary: 1},
		{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 300, seqlens: []int{250}, total: 251, rotary: 1},
		{B: 4, S: 7, N: 14, KV: 2, H: 64, P: 64, seqlens: []int{6, 6, 6, 6}, total: 7, rotary: 1},
	}
	for _, c := range gqaCases() {
		if c.P > 0 && c.P >= c.total && !c.packed {
			cases = append(cases, c)
		}
	}
	taken := 0
	for _, kind := range []string{"f16", "q8_0"} {
		for _, mode := range []int64{0, 1, 2} {
			for _, c := range cases {
				if kind == "q8_0" && c.H%contrib.Q8Block != 0 {
					continue
				}
				name := fmt.Sprintf("%s/mode%d/%v", kind, mode, c)
				n, in := gqaCall(c, rng)
				in[3], in[4] = toCache(in[3], kind), toCache(in[4], kind)
				n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
				if mode != 0 {
					n.Attrs[contrib.RotaryFMAAttr] = &graph.Attribute{Name: contrib.RotaryFMAAttr, Type: graph.AttrInt, I: 1}
				}
				if kind == "q8_0" {
					n.Attrs[contrib.KVTypeAttr] = &graph.Attribute{Name: contrib.KVTypeAttr, Type: graph.AttrString, S: "q8_0"}
				}
				g, ok := gqaPlan(n, in)
				if !ok {
					t.Fatalf("%s: native declined the call", name)
				}
				two := &gqaNative{ref: ref.Kernel, pool: p}
				if !two.splitsPrep(&g, true, true) {
					continue // one (batch, KV head) pair: runCache as before
				}
				taken++
				var outs [2][]byte
				var caches [2][2][]byte
				for i, gn := range []*gqaNative{{ref: ref.Kernel}, two} {
					ins := slices.Clone(in)
					ins[3], ins[4] = in[3].Clone(), in[4].Clone()
					ck := &graph.Tensor{DType: ins[3].DType, Shape: ins[3].Shape, Data: ins[3].Data}
					cv := &graph.Tensor{DType: ins[4].DType, Shape: ins[4].Shape, Data: ins[4].Data}
					got, err := gn.run(&kernels.Context{Context: context.Background(), Opset: 1}, n, ins,
						func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] })
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if got[1] != ck || got[2] != cv {
						t.Fatalf("%s: the presents are not the bound tensors", name)
					}
					outs[i], _ = graph.RawBytes(got[0])
					outs[i] = slices.Clone(outs[i])
					caches[i][0], _ = graph.RawBytes(ck)
					caches[i][1], _ = graph.RawBytes(cv)
				}
				if !slices.Equal(outs[0], outs[1]) {
					t.Fatalf("%s: the output on two threads differs from one thread's", name)
				}
				for k := range 2 {
					if !slices.Equal(caches[0][k], caches[1][k]) {
						t.Fatalf("%s: present %d on two threads differs from one thread's", name, k+1)
					}
				}
			}
		}
	}
	if taken == 0 {
		t.Fatal("no case took runCacheSplit")
	}
	t.Logf("%d calls split", taken)
}

// BenchmarkSrvhGQASplitPrep: a batched decode step's attention at the
// Qwen2.5-0.5B shape (N 14, KV 2, H 64, rotary halves) over a float16
// cache bound in place, B sequences at about 100 positions, on a pool of
// two, plain order and ggml's, with the rows prepared in the loop
// (split) and serially before it (serial), alternating call by call in
// one loop (a loaded machine slows both alike): each one's least and
// median µs a call, and serial over split of the medians.
//
//	go test ./plugins/native -run '^$' -bench SrvhGQASplitPrep
func BenchmarkSrvhGQASplitPrep(b *testing.B) {
	p2 := newPool(2)
	defer p2.close()
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	for _, B := range []int{1, 4} {
		for _, mode := range []int64{0, 1} {
			sl := make([]int, B)
			for i := range sl {
				sl[i] = 100 + 3*i
			}
			c := gqaTest{B: B, S: 1, N: 14, KV: 2, H: 64, P: 1024, seqlens: sl, total: 100 + 3*B, rotary: 1}
			n, in := gqaCall(c, rand.New(rand.NewPCG(5, 6)))
			in[3], in[4] = toCache(in[3], "f16"), toCache(in[4], "f16")
			n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
			ck := &graph.Tensor{DType: in[3].DType, Shape: in[3].Shape, Data: in[3].Data}
			cv := &graph.Tensor{DType: in[4].DType, Shape: in[4].Shape, Data: in[4].Data}
			inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
			g := &gqaNative{ref: ref.Kernel, pool: p2}
			ctx := &kernels.Context{Context: context.Background(), Opset: 1}
			b.Run(fmt.Sprintf("B%d/mode%d", B, mode), func(b *testing.B) {
				defer func(v bool) { srvhSplitPrep = v }(srvhSplitPrep)
				var ts [2][]time.Duration // split, serial
				for k := range b.N {
					for i := range 2 {
						v := (i + k) % 2
						srvhSplitPrep = v == 0
						t0 := time.Now()
						if _, err := g.run(ctx, n, in, inPlace); err != nil {
							b.Fatal(err)
						}
						ts[v] = append(ts[v], time.Since(t0))
					}
				}
				us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
				med := func(ds []time.Duration) time.Duration {
					s := slices.Clone(ds)
					slices.Sort(s)
					return s[len(s)/2]
				}
				b.ReportMetric(us(slices.Min(ts[0])), "us-least-split")
				b.ReportMetric(us(slices.Min(ts[1])), "us-least-serial")
				b.ReportMetric(us(med(ts[0])), "us-median-split")
				b.ReportMetric(us(med(ts[1])), "us-median-serial")
				b.ReportMetric(float64(med(ts[1]))/float64(med(ts[0])), "serial/split")
			})
		}
	}
}
