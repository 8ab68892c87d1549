package native

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// toCache turns a float32 past [B, KV, P, H] into a cache of the kind:
// float16 values, or Q8_0 rows (uint8 [B, KV, P, H/32·34]).
func toCache(t *graph.Tensor, kind string) *graph.Tensor {
	v := graph.Data[float32](t)
	H := t.Shape[3]
	switch kind {
	case "f16":
		h := make([]graph.F16, len(v))
		for i, x := range v {
			h[i] = graph.F16FromFloat32(x)
		}
		return graph.MustFromSlice(t.Shape, h)
	default:
		w := H / contrib.Q8Block * contrib.Q8BlockBytes
		rows := len(v) / H
		b := make([]uint8, rows*w)
		for r := 0; r < rows; r++ {
			contrib.QuantizeQ8Row(b[r*w:(r+1)*w], v[r*H:(r+1)*H])
		}
		return graph.MustFromSlice([]int{t.Shape[0], t.Shape[1], t.Shape[2], w}, b)
	}
}

// TestGQACacheTypes: with a float16 or Q8_0 cache, native's
// GroupQueryAttention agrees with the reference kernel within gqaTol
// (both attend the values the cache holds), its presents are the
// reference's byte for byte, and bound to the pasts (in place) only the
// new rows change and the output is the same.
func TestGQACacheTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	g := &gqaNative{}
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	g.ref = ref.Kernel
	ctx := &kernels.Context{Context: context.Background(), Opset: 1}
	for _, kind := range []string{"f16", "q8_0"} {
		for _, c := range gqaCases() {
			if c.P == 0 || kind == "q8_0" && c.H%32 != 0 {
				continue
			}
			t.Run(kind+"/"+c.String(), func(t *testing.T) {
				n, in := gqaCall(c, rng)
				in[3], in[4] = toCache(in[3], kind), toCache(in[4], kind)
				if kind == "q8_0" {
					n.Attrs[contrib.KVTypeAttr] = &graph.Attribute{Name: contrib.KVTypeAttr, Type: graph.AttrString, S: "q8_0"}
				}
				if _, ok := gqaPlan(n, in); !ok {
					t.Fatal("native declined the cache")
				}
				want := gqaRef(t, n, in)
				got, err := g.run(ctx, n, in, noInto)
				if err != nil {
					t.Fatal(err)
				}
				gqaClose(t, "output", got[0], want[0])
				for j := 1; j < 3; j++ {
					if got[j].DType != in[3].DType || !graph.SameShape(got[j].Shape, want[j].Shape) {
						t.Fatalf("present %d: %v %v, want %v %v", j, got[j].DType, got[j].Shape, want[j].DType, want[j].Shape)
					}
					gb, _ := graph.RawBytes(got[j])
					wb, _ := graph.RawBytes(want[j])
					if !slices.Equal(gb, wb) {
						t.Fatalf("present %d differs from the reference's", j)
					}
				}
				if c.P < c.total {
					return
				}
				bk, bv := in[3].Clone(), in[4].Clone()
				ins := slices.Clone(in)
				ins[3], ins[4] = bk, bv
				ck := &graph.Tensor{DType: bk.DType, Shape: bk.Shape, Data: bk.Data}
				cv := &graph.Tensor{DType: bv.DType, Shape: bv.Shape, Data: bv.Data}
				in2, err := g.run(ctx, n, ins, func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] })
				if err != nil {
					t.Fatal(err)
				}
				if in2[1] != ck || in2[2] != cv {
					t.Fatal("in place: the presents are not the bound tensors")
				}
				sameF32(t, "in-place output", in2[0], got[0])
				// the used rows are the copying call's; the rest the past's
				W := bk.Shape[3]
				kb, _ := graph.RawBytes(bk)
				ob, _ := graph.RawBytes(in[3])
				nb, _ := graph.RawBytes(got[1])
				es := bk.DType.Size()
				for b, sl := range c.seqlens {
					p := sl + 1 - c.S
					for h := 0; h < c.KV; h++ {
						for r := 0; r < c.P; r++ {
							at := ((b*c.KV+h)*c.P + r) * W * es
							src := ob
							if r >= p && r < p+c.S {
								src = nb
							}
							if !slices.Equal(kb[at:at+W*es], src[at:at+W*es]) {
								t.Fatalf("in place: key row %d of [%d %d] (new rows %d..%d)", r, b, h, p, p+c.S-1)
							}
						}
					}
				}
			})
		}
	}
}

// TestQ8RowRoundTrip: QuantizeQ8Row's blocks dequantize within half a
// step of each value (d/2), an all-zero block to zeros.
func TestQ8RowRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 96)
	for i := range x {
		x[i] = (rng.Float32()*2 - 1) * float32(i/32+1)
	}
	clear(x[64:])
	b := make([]byte, 3*contrib.Q8BlockBytes)
	contrib.QuantizeQ8Row(b, x)
	y := make([]float32, len(x))
	contrib.DequantizeQ8Row(y, b)
	for i := range x {
		amax := float32(0)
		for _, v := range x[i/32*32 : i/32*32+32] {
			amax = max(amax, abs32(v))
		}
		if d := abs32(x[i] - y[i]); d > amax/127/2*1.01+1e-7 {
			t.Fatalf("x[%d] = %v came back %v", i, x[i], y[i])
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestF16ConversionsAgree: the F16C conversions of the float16 cache give
// the Go conversions' bits: every float16 widened, and float32 values
// (random bit patterns, ones near float16's limits and its ties) rounded
// to nearest even; NaN stays NaN.
func TestF16ConversionsAgree(t *testing.T) {
	if !f16Asm {
		t.Skip("no F16C here")
	}
	src := make([]graph.F16, 1<<16)
	for i := range src {
		src[i] = graph.F16(i)
	}
	dst := make([]float32, len(src))
	if n := archF16Widen(dst, src); n != len(src) {
		t.Fatalf("widened %d of %d", n, len(src))
	}
	tab := f16Table()
	for i, v := range dst {
		want := tab[i]
		if math.Float32bits(v) != math.Float32bits(want) && !(v != v && want != want) {
			t.Fatalf("float16 %#04x: F16C %v, Go %v", i, v, want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, 1<<16)
	for i := range x {
		switch i % 4 {
		case 0: // any pattern
			x[i] = math.Float32frombits(rng.Uint32())
		case 1: // float16's range, subnormals and overflow included
			x[i] = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(44)-26))
		case 2: // halfway between two float16 values
			h := graph.F16(rng.IntN(0x7c00))
			x[i] = math.Float32frombits(math.Float32bits(h.Float32()) + 1<<12)
		default:
			x[i] = float32(rng.NormFloat64())
		}
	}
	x = append(x, 65504, 65519.99, 65520, -65520, 6e-8, 2.9e-8, 3e-8, 0, float32(math.Copysign(0, -1)))
	got := append([]float32(nil), x...)
	n := archF16Round(got)
	for i := range got[:n] {
		want := f16Round(x[i])
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(got[i] != got[i] && want != want) {
			t.Fatalf("%v (%#08x): F16C %v, Go %v", x[i], math.Float32bits(x[i]), got[i], want)
		}
	}
	if n != len(x)&^15 {
		t.Fatalf("rounded %d of %d", n, len(x))
	}
}

// TestGQACacheHeadsSplit: runCache's heads split over two threads give
// the bits of one thread, for float16 and Q8_0 caches, ggml's order and
// the plain one.
func TestGQACacheHeadsSplit(t *testing.T) {
	defer func(w int) { gqaSplitWork = w }(gqaSplitWork)
	gqaSplitWork = 0
	p := newPool(2)
	defer p.close()
	one, two := gqaKernel(), gqaKernelOn(p)
	rng := rand.New(rand.NewPCG(47, 53))
	n0 := 0
	for _, kind := range []string{"f16", "q8_0"} {
		for _, mode := range []int64{0, 1} {
			for _, c := range gqaCases() {
				if c.P == 0 || c.packed || kind == "q8_0" && c.H%contrib.Q8Block != 0 {
					continue
				}
				n, in := gqaCall(c, rng)
				in[3], in[4] = toCache(in[3], kind), toCache(in[4], kind)
				n.Attrs[contrib.GGMLAttentionAttr] = &graph.Attribute{Name: contrib.GGMLAttentionAttr, Type: graph.AttrInt, I: mode}
				if kind == "q8_0" {
					n.Attrs[contrib.KVTypeAttr] = &graph.Attribute{Name: contrib.KVTypeAttr, Type: graph.AttrString, S: "q8_0"}
				}
				want, err := one(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
				if err != nil {
					t.Fatal(err)
				}
				for o := range want {
					want[o] = want[o].Clone()
				}
				got, err := two(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
				if err != nil {
					t.Fatal(err)
				}
				for o := range want {
					a, oka := graph.RawBytes(want[o])
					b, okb := graph.RawBytes(got[o])
					if !oka || !okb || string(a) != string(b) {
						t.Errorf("%s cache, mode %d, case %+v: output %d differs split over two threads", kind, mode, c, o)
					}
				}
				n0++
			}
		}
	}
	if n0 == 0 {
		t.Fatal("no case ran")
	}
}

// TestF16RowKernelsSameBits: gqa_cache_amd64.s's float16 row kernels give
// the bits of dot and weighRows over the rows widened (the arithmetic
// order of a decoded cache), for head sizes of one to eight 32-value
// blocks (16 for the weighted sums) and row counts around the loops'
// steps; archF16Narrow the bits of graph.F16FromFloat32.
func TestF16RowKernelsSameBits(t *testing.T) {
	if !f16Attn {
		t.Skip("no AVX-512 float16 row kernels here")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	half := func(n int) []graph.F16 {
		h := make([]graph.F16, n)
		for i := range h {
			h[i] = graph.F16FromFloat32(float32(rng.NormFloat64()) * 3)
		}
		return h
	}
	wide := func(h []graph.F16) []float32 {
		w := make([]float32, len(h))
		for i, x := range h {
			w[i] = x.Float32()
		}
		return w
	}
	for _, H := range []int{16, 32, 48, 64, 80, 96, 128, 256} {
		for _, n := range []int{1, 2, 7, 16, 33, 100} {
			K, V := half(n*H), half(n*H)
			Kw, Vw := wide(K), wide(V)
			q := make([]float32, H)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			if H%32 == 0 {
				got := make([]float32, n)
				if !f16DotRows(got, K, q) {
					t.Fatalf("H %d: f16DotRows declined", H)
				}
				for j := range got {
					if want := dot(q, Kw[j*H:(j+1)*H]); math.Float32bits(got[j]) != math.Float32bits(want) {
						t.Fatalf("H %d n %d: score %d = %v, dot %v", H, n, j, got[j], want)
					}
				}
			} else if f16DotRows(make([]float32, n), K, q) {
				t.Fatalf("H %d: f16DotRows took a row not a multiple of 32", H)
			}
			e := make([]float32, n)
			for i := range e {
				e[i] = f16Round(rng.Float32())
			}
			got, want := make([]float32, H), make([]float32, H)
			for i := range got {
				got[i] = float32(i) // overwritten
			}
			if !f16WeighRows(e, V, got) {
				t.Fatalf("H %d: f16WeighRows declined", H)
			}
			weighRows(e, Vw, want, 1)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("H %d n %d: o[%d] = %v, weighRows %v", H, n, i, got[i], want[i])
				}
			}
		}
	}
	x := make([]float32, 1<<14+5)
	for i := range x {
		switch i % 3 {
		case 0:
			x[i] = math.Float32frombits(rng.Uint32())
		case 1:
			x[i] = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(44)-26))
		default:
			h := graph.F16(rng.IntN(0x7c00))
			x[i] = math.Float32frombits(math.Float32bits(h.Float32()) + 1<<12)
		}
	}
	h := make([]graph.F16, len(x))
	n := archF16Narrow(h, x)
	if n != len(x)&^7 {
		t.Fatalf("narrowed %d of %d", n, len(x))
	}
	for i := range h[:n] {
		want := graph.F16FromFloat32(x[i])
		if h[i] != want && !(h[i].Float32() != h[i].Float32() && want.Float32() != want.Float32()) {
			t.Fatalf("%v (%#08x): F16C %#04x, Go %#04x", x[i], math.Float32bits(x[i]), uint16(h[i]), uint16(want))
		}
	}
}

// TestGQAF16RowsSameBits: GroupQueryAttention over a float16 cache
// attended from its rows as they are (f16Attn) gives the bits of the
// decoded copy's path, decode steps and prompt chunks, ragged batches,
// windows and softcap, one thread and two.
func TestGQAF16RowsSameBits(t *testing.T) {
	if !f16Attn {
		t.Skip("no AVX-512 float16 row kernels here")
	}
	defer func(w int) { gqaSplitWork = w }(gqaSplitWork)
	gqaSplitWork = 0
	p := newPool(2)
	defer p.close()
	rng := rand.New(rand.NewPCG(63, 64))
	cases := []gqaTest{
		{B: 4, S: 1, N: 14, KV: 2, H: 64, P: 64, seqlens: []int{5, 17, 30, 2}, total: 31, rotary: 1},
		{B: 1, S: 1, N: 14, KV: 2, H: 64, P: 300, seqlens: []int{250}, total: 251, rotary: 1},
		{B: 2, S: 5, N: 8, KV: 4, H: 32, P: 40, seqlens: []int{9, 20}, total: 21, rotary: 2},
		{B: 3, S: 1, N: 4, KV: 1, H: 128, P: 50, seqlens: []int{0, 7, 49}, total: 50, rotary: 1, softcap: 3},
		{B: 2, S: 2, N: 6, KV: 3, H: 64, P: 30, seqlens: []int{12, 27}, total: 28, rotary: 1, window: 5, scale: 0.3},
	}
	for _, c := range cases {
		for _, g := range []kernels.Func{gqaKernel(), gqaKernelOn(p)} {
			n, in := gqaCall(c, rng)
			in[3], in[4] = toCache(in[3], "f16"), toCache(in[4], "f16")
			want, err := func() ([]*graph.Tensor, error) {
				defer func(v bool) { f16Attn = v }(f16Attn)
				f16Attn = false
				return g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
			}()
			if err != nil {
				t.Fatal(err)
			}
			for o := range want {
				want[o] = want[o].Clone()
			}
			got, err := g(&kernels.Context{Context: context.Background(), Opset: 1}, n, in)
			if err != nil {
				t.Fatal(err)
			}
			for o := range want {
				a, _ := graph.RawBytes(want[o])
				b, _ := graph.RawBytes(got[o])
				if !slices.Equal(a, b) {
					t.Fatalf("case %+v: output %d differs from the decoded cache's", c, o)
				}
			}
		}
	}
}
