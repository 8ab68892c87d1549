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

// TestAttnF32WeighSameBits: attnF32Weigh over float32 rows as they are
// gives dotsGGML's bits over ggmlValues' transposed, zero-padded values
// (attendRowGGML's one-row weighted sum), for key counts around the
// 64-key lanes, masked first keys and heads of 64 and 128.
func TestAttnF32WeighSameBits(t *testing.T) {
	if !attnF32Rows {
		t.Skip("no AVX-512 here")
	}
	rng := rand.New(rand.NewPCG(81, 82))
	acc := make([]float32, 64*64)
	for _, H := range []int{64, 128} {
		for _, L := range []int{1, 2, 5, 63, 64, 65, 127, 128, 130, 200, 333} {
			for _, j0 := range []int{0, 1, L / 2, L - 1} {
				V := make([]float32, L*H)
				for i := range V {
					V[i] = rng.Float32()*2 - 1
				}
				e := make([]float32, L)
				for j := j0; j < L; j++ {
					e[j] = rng.Float32()
				}
				var gv ggmlValues
				gv.set(V, H, L, true)
				w := gv.w[:gv.lp]
				clear(w)
				copy(w, e)
				want := make([]float32, H)
				dotsGGML(want, gv.vt, w)
				got := make([]float32, H)
				if !attnF32Weigh(e, V, acc, got) {
					t.Fatal("attnF32Weigh declined")
				}
				for d := range want {
					if got[d] != want[d] && !(got[d] != got[d] && want[d] != want[d]) {
						t.Fatalf("H %d L %d j0 %d: value %d is %v, want %v", H, L, j0, d, got[d], want[d])
					}
				}
			}
		}
	}
}

// TestAttnSplitF32SameBits: a float32 cache bound in place (a decode
// step) on two threads, the rows prepared and attended in the loop
// (attnSplitF32, the values weighed as they are where it can), and on
// one thread with the values weighed as they are, give run's serial
// bits with the transposed values (attnF32Rows off): the output and
// every byte of the caches, for every attention mode, at the
// Qwen2.5-0.5B shape and the package's in-place cases.
func TestAttnSplitF32SameBits(t *testing.T) {
	defer func(w int, r bool) { gqaSplitWork, attnF32Rows = w, r }(gqaSplitWork, attnF32Rows)
	gqaSplitWork = 0
	rowsHere := attnF32Rows
	p := newPool(2)
	defer p.close()
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	rng := rand.New(rand.NewPCG(83, 84))
	cases := []gqaTest{
		{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 256, seqlens: []int{4}, total: 5, rotary: 1},
		{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 256, seqlens: []int{129}, total: 130, rotary: 1},
		{B: 4, S: 1, N: 14, KV: 2, H: 64, P: 128, seqlens: []int{5, 17, 99, 2}, total: 100, rotary: 1},
		{B: 1, S: 1, N: 8, KV: 2, H: 128, P: 100, seqlens: []int{70}, total: 71, rotary: 1, window: 30},
		{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 200, seqlens: []int{150}, total: 151, rotary: 1, softcap: 30},
		{B: 4, S: 7, N: 14, KV: 2, H: 64, P: 64, seqlens: []int{6, 6, 6, 6}, total: 7, rotary: 1},
	}
	for _, c := range gqaCases() {
		if c.P > 0 && c.P >= c.total && !c.packed {
			cases = append(cases, c)
		}
	}
	split, direct := 0, 0
	for _, mode := range []int64{0, 1, 2} {
		for _, c := range cases {
			name := fmt.Sprintf("mode%d/%v", mode, c)
			n, in := gqaCall(c, rng)
			n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
			if mode != 0 {
				n.Attrs[contrib.RotaryFMAAttr] = &graph.Attribute{Name: contrib.RotaryFMAAttr, Type: graph.AttrInt, I: 1}
			}
			g, ok := gqaPlan(n, in)
			if !ok || g.cache.dt != graph.Float32 {
				t.Fatalf("%s: native declined the call or its cache is not float32", name)
			}
			if g.B*g.KV > 1 {
				split++
			}
			if rowsHere && mode != 0 && c.S == 1 && c.H%64 == 0 {
				direct++
			}
			var outs [3][]byte
			var caches [3][2][]byte
			for i, gn := range []*gqaNative{{ref: ref.Kernel}, {ref: ref.Kernel}, {ref: ref.Kernel, pool: p}} {
				attnF32Rows = i > 0 && rowsHere
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
			for i := 1; i < 3; i++ {
				if !slices.Equal(outs[0], outs[i]) {
					t.Fatalf("%s: the output (run %d) differs from the serial transposed one", name, i)
				}
				for k := range 2 {
					if !slices.Equal(caches[0][k], caches[i][k]) {
						t.Fatalf("%s: present %d (run %d) differs from the serial one", name, k+1, i)
					}
				}
			}
		}
	}
	if split == 0 || rowsHere && direct == 0 {
		t.Fatalf("%d calls split, %d weighed as they are: want some of each", split, direct)
	}
	t.Logf("%d calls split, %d weighed as they are", split, direct)
}

// BenchmarkAttnSplitF32: a decode step's attention at the Qwen2.5-0.5B
// shape (N 14, KV 2, H 64, rotary halves, ggml's order) over a float32
// cache of 256 positions bound in place at pos positions, on a pool of
// two: new (split over the threads, the values weighed as they are) and
// old (run's serial path, the values transposed), alternating call by
// call in one loop: each one's least and median µs a call, and old over
// new of the medians.
//
//	go test ./plugins/native -run '^$' -bench AttnSplitF32
func BenchmarkAttnSplitF32(b *testing.B) {
	p2 := newPool(2)
	defer p2.close()
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	for _, pos := range []int{16, 64, 130} {
		c := gqaTest{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 256, seqlens: []int{pos}, total: pos + 1, rotary: 1}
		n, in := gqaCall(c, rand.New(rand.NewPCG(5, 6)))
		n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: 1}
		n.Attrs[contrib.RotaryFMAAttr] = &graph.Attribute{Name: contrib.RotaryFMAAttr, Type: graph.AttrInt, I: 1}
		ck := &graph.Tensor{DType: in[3].DType, Shape: in[3].Shape, Data: in[3].Data}
		cv := &graph.Tensor{DType: in[4].DType, Shape: in[4].Shape, Data: in[4].Data}
		inPlace := func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }
		g := &gqaNative{ref: ref.Kernel, pool: p2}
		ctx := &kernels.Context{Context: context.Background(), Opset: 1, Alloc: &fixedAlloc{by: map[[5]int]*graph.Tensor{}}}
		b.Run(fmt.Sprintf("pos%d", pos), func(b *testing.B) {
			defer func(s, r bool) { attnSplitF32On, attnF32Rows = s, r }(attnSplitF32On, attnF32Rows)
			rows := attnF32Rows
			var ts [2][]time.Duration // new, old
			for k := range b.N {
				for i := range 2 {
					v := (i + k) % 2
					attnSplitF32On, attnF32Rows = v == 0, v == 0 && rows
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
			b.ReportMetric(us(slices.Min(ts[0])), "us-least-new")
			b.ReportMetric(us(slices.Min(ts[1])), "us-least-old")
			b.ReportMetric(us(med(ts[0])), "us-median-new")
			b.ReportMetric(us(med(ts[1])), "us-median-old")
			b.ReportMetric(float64(med(ts[1]))/float64(med(ts[0])), "old/new")
		})
	}
}
