package contrib_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/runtime"
)

type gqaCase struct {
	name           string
	B, S, N, KV, H int
	P              int   // past buffer length (0: no past inputs)
	seqlens        []int // seqlens_k
	total          int
	packed, rotary bool
	interleaved    bool
	softcap        float32
	window         int // local_window_size (0: none)
	wantPresentLen int
}

// gqaModel is a one-node GroupQueryAttention model and its inputs.
func gqaModel(c gqaCase, rng *rand.Rand) (*graph.Model, map[string]*graph.Tensor) {
	randT := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return graph.MustFromSlice(shape, v)
	}
	f32 := func(name string, shape ...graph.Dim) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: shape}}
	}
	d := func(v int) graph.Dim { return graph.Dim{Value: int64(v)} }
	feeds := map[string]*graph.Tensor{}
	g := &graph.Graph{Name: "gqa", Initializers: map[string]*graph.Tensor{}}
	inputs := make([]string, 7)
	if c.packed {
		inputs[0] = "query"
		g.Inputs = append(g.Inputs, f32("query", d(c.B), d(c.S), d((c.N+2*c.KV)*c.H)))
		feeds["query"] = randT(c.B, c.S, (c.N+2*c.KV)*c.H)
	} else {
		inputs[0], inputs[1], inputs[2] = "query", "key", "value"
		g.Inputs = append(g.Inputs, f32("query", d(c.B), d(c.S), d(c.N*c.H)), f32("key", d(c.B), d(c.S), d(c.KV*c.H)), f32("value", d(c.B), d(c.S), d(c.KV*c.H)))
		feeds["query"], feeds["key"], feeds["value"] = randT(c.B, c.S, c.N*c.H), randT(c.B, c.S, c.KV*c.H), randT(c.B, c.S, c.KV*c.H)
	}
	if c.P > 0 {
		inputs[3], inputs[4] = "past_key", "past_value"
		g.Inputs = append(g.Inputs, f32("past_key", d(c.B), d(c.KV), d(c.P), d(c.H)), f32("past_value", d(c.B), d(c.KV), d(c.P), d(c.H)))
		feeds["past_key"], feeds["past_value"] = randT(c.B, c.KV, c.P, c.H), randT(c.B, c.KV, c.P, c.H)
	}
	inputs[5], inputs[6] = "seqlens_k", "total_sequence_length"
	g.Inputs = append(g.Inputs,
		graph.ValueInfo{Name: "seqlens_k", Type: graph.ValueType{Kind: "tensor", DType: graph.Int32, Shape: graph.Shape{d(c.B)}}},
		graph.ValueInfo{Name: "total_sequence_length", Type: graph.ValueType{Kind: "tensor", DType: graph.Int32, Shape: graph.Shape{}}})
	sl := make([]int32, c.B)
	for i, v := range c.seqlens {
		sl[i] = int32(v)
	}
	feeds["seqlens_k"] = graph.MustFromSlice([]int{c.B}, sl)
	feeds["total_sequence_length"] = graph.MustFromSlice([]int{}, []int32{int32(c.total)})
	attrs := map[string]*graph.Attribute{
		"num_heads":    {Name: "num_heads", Type: graph.AttrInt, I: int64(c.N)},
		"kv_num_heads": {Name: "kv_num_heads", Type: graph.AttrInt, I: int64(c.KV)},
	}
	if c.softcap != 0 {
		attrs["softcap"] = &graph.Attribute{Name: "softcap", Type: graph.AttrFloat, F: c.softcap}
	}
	if c.window != 0 {
		attrs["local_window_size"] = &graph.Attribute{Name: "local_window_size", Type: graph.AttrInt, I: int64(c.window)}
	}
	if c.rotary {
		attrs["do_rotary"] = &graph.Attribute{Name: "do_rotary", Type: graph.AttrInt, I: 1}
		if c.interleaved {
			attrs["rotary_interleaved"] = &graph.Attribute{Name: "rotary_interleaved", Type: graph.AttrInt, I: 1}
		}
		maxPos, half := 32, c.H/2
		cs, sn := make([]float32, maxPos*half), make([]float32, maxPos*half)
		for p := 0; p < maxPos; p++ {
			for i := 0; i < half; i++ {
				a := float64(p) * math.Pow(10000, -float64(2*i)/float64(c.H))
				cs[p*half+i], sn[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
			}
		}
		g.Initializers["cos_cache"] = graph.MustFromSlice([]int{maxPos, half}, cs)
		g.Initializers["sin_cache"] = graph.MustFromSlice([]int{maxPos, half}, sn)
		inputs = append(inputs, "cos_cache", "sin_cache")
	}
	g.Nodes = []*graph.Node{{Name: "gqa", OpType: "GroupQueryAttention", Domain: "com.microsoft", Inputs: inputs,
		Outputs: []string{"output", "present_key", "present_value"}, Attrs: attrs}}
	g.Outputs = []graph.ValueInfo{f32("output"), f32("present_key"), f32("present_value")}
	m := &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Domain: "", Version: 17}, {Domain: "com.microsoft", Version: 1}}, Graph: g}
	return m, feeds
}

// TestGroupQueryAttentionMatchesORT runs one-node GroupQueryAttention
// models (prefill without past, decode with an exact past, a cache buffer
// longer than used, a second prompt chunk after a past, packed QKV,
// rotary halves and interleaved (ORT wants head sizes of 16 there),
// softcap) on the reference kernel and on
// ONNX Runtime and compares the output and both presents.
func TestGroupQueryAttentionMatchesORT(t *testing.T) {
	cases := []gqaCase{
		{name: "prefill", B: 2, S: 3, N: 4, KV: 2, H: 8, seqlens: []int{2, 2}, total: 3, wantPresentLen: 3},
		{name: "decode", B: 2, S: 1, N: 4, KV: 2, H: 8, P: 3, seqlens: []int{3, 3}, total: 4, wantPresentLen: 4},
		{name: "decode-buffer-packed-rotary", B: 1, S: 1, N: 4, KV: 1, H: 16, P: 6, seqlens: []int{3}, total: 4, packed: true, rotary: true, wantPresentLen: 6},
		{name: "chunk-interleaved-softcap", B: 1, S: 4, N: 6, KV: 3, H: 16, P: 2, seqlens: []int{5}, total: 6, rotary: true, interleaved: true, softcap: 2, wantPresentLen: 6},
		{name: "prefill-window", B: 1, S: 7, N: 4, KV: 2, H: 16, seqlens: []int{6}, total: 7, rotary: true, window: 3, wantPresentLen: 7},
		{name: "chunk-window-buffer", B: 1, S: 3, N: 4, KV: 2, H: 16, P: 9, seqlens: []int{7}, total: 8, rotary: true, interleaved: true, window: 2, wantPresentLen: 9},
		{name: "decode-window-softcap", B: 2, S: 1, N: 4, KV: 2, H: 16, P: 9, seqlens: []int{7, 4}, total: 8, softcap: 2, window: 4, wantPresentLen: 9},
	}
	peer := ortPeer(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, feeds := gqaModel(c, rng)
			dir := t.TempDir()
			path := filepath.Join(dir, "model.onnx")
			if err := os.WriteFile(path, onnx.Encode(m), 0o644); err != nil {
				t.Fatal(err)
			}
			rt, err := runtime.Load(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			got, err := rt.Run(context.Background(), feeds)
			if err != nil {
				t.Fatal(err)
			}
			if pl := got["present_key"].Shape[2]; pl != c.wantPresentLen {
				t.Errorf("present length %d, want %d", pl, c.wantPresentLen)
			}
			step := filepath.Join(dir, "step_0")
			if err := os.MkdirAll(step, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, in := range m.Graph.Inputs {
				if err := os.WriteFile(filepath.Join(step, fmt.Sprintf("input_%d.pb", i)), onnx.EncodeTensor(in.Name, feeds[in.Name]), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			chain, _ := json.Marshal(map[string]any{"steps": 1, "present_to_past": map[string]string{}})
			if err := os.WriteFile(filepath.Join(dir, "chain.json"), chain, 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("node", filepath.Join("testdata", "ort_steps.js"), peer, path, dir).CombinedOutput(); err != nil {
				t.Fatalf("ONNX Runtime: %v\n%s", err, out)
			}
			for i, o := range m.Graph.Outputs {
				want, err := tensorio.ReadFile(filepath.Join(step, fmt.Sprintf("ort_%d.pb", i)))
				if err != nil {
					t.Fatal(err)
				}
				g := got[o.Name]
				if !graph.SameShape(g.Shape, want.Shape) {
					t.Fatalf("%s: Switchyard %v, ORT %v", o.Name, g.Shape, want.Shape)
				}
				worst := 0.0
				for j := 0; j < g.Len(); j++ {
					a, b := g.Float64At(j), want.Float64At(j)
					if d := math.Abs(a - b); d > 1e-5+1e-5*math.Abs(b) {
						t.Fatalf("%s[%d]: Switchyard %g, ORT %g", o.Name, j, a, b)
					} else {
						worst = math.Max(worst, d)
					}
				}
				t.Logf("%s %v: max |Switchyard - ORT| %.2g", o.Name, g.Shape, worst)
			}
		})
	}
}

// TestGroupQueryAttentionRefuses: what the kernel does not implement is
// refused, not approximated.
func TestGroupQueryAttentionRefuses(t *testing.T) {
	c := gqaCase{B: 1, S: 2, N: 2, KV: 1, H: 4, seqlens: []int{1}, total: 2}
	m, feeds := gqaModel(c, rand.New(rand.NewPCG(1, 1)))
	n := m.Graph.Nodes[0]
	s, ok := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	if !ok {
		t.Fatal("no GroupQueryAttention kernel")
	}
	in := []*graph.Tensor{feeds["query"], feeds["key"], feeds["value"], nil, nil, feeds["seqlens_k"], feeds["total_sequence_length"]}
	if _, err := s.Kernel(&kernels.Context{Opset: 1}, n, in); err != nil {
		t.Fatalf("plain case: %v", err)
	}
	for name, mutate := range map[string]func(){
		"local_window_size -2": func() {
			n.Attrs["local_window_size"] = &graph.Attribute{Name: "local_window_size", Type: graph.AttrInt, I: -2}
		},
		"padded prompt": func() { in[5] = graph.MustFromSlice([]int{1}, []int32{0}) },
		"num_heads":     func() { n.Attrs["kv_num_heads"] = &graph.Attribute{Name: "kv_num_heads", Type: graph.AttrInt, I: 3} },
	} {
		saved := map[string]*graph.Attribute{}
		for k, v := range n.Attrs {
			saved[k] = v
		}
		sl := in[5]
		mutate()
		if _, err := s.Kernel(&kernels.Context{Opset: 1}, n, in); err == nil {
			t.Errorf("%s: no error", name)
		}
		n.Attrs, in[5] = saved, sl
	}
}

// gqaInputs are the kernel inputs of gqaModel's node, in order.
func gqaInputs(m *graph.Model, feeds map[string]*graph.Tensor) []*graph.Tensor {
	n := m.Graph.Nodes[0]
	in := make([]*graph.Tensor, len(n.Inputs))
	for i, name := range n.Inputs {
		if t, ok := feeds[name]; ok {
			in[i] = t
		} else if name != "" {
			in[i] = m.Graph.Initializers[name]
		}
	}
	return in
}

// TestGroupQueryAttentionInPlace: with present_key and present_value
// bound to past_key's and past_value's own memory (the share-buffer form,
// P ≥ total), the kernel writes only the new rows p..p+S-1 of each
// sequence into them, leaves every other row as it was, returns them as
// the presents, and computes the same output as with new presents (bit
// for bit); rows past p of the past are never read (they hold NaN). A
// bound tensor sharing no memory with the inputs is filled as a new
// present (its tail zeroed); one sharing memory with another input (the
// key present bound to past_value) is not written.
func TestGroupQueryAttentionInPlace(t *testing.T) {
	cases := []gqaCase{
		{name: "decode", B: 1, S: 1, N: 4, KV: 2, H: 8, P: 10, seqlens: []int{6}, total: 7},
		{name: "decode-batch-ragged", B: 2, S: 1, N: 8, KV: 1, H: 4, P: 9, seqlens: []int{3, 8}, total: 9},
		{name: "chunk-rotary", B: 2, S: 3, N: 6, KV: 3, H: 8, P: 12, seqlens: []int{5, 9}, total: 10, rotary: true},
		{name: "chunk-interleaved-softcap", B: 1, S: 4, N: 2, KV: 2, H: 16, P: 6, seqlens: []int{5}, total: 6, rotary: true, interleaved: true, softcap: 1.5},
		{name: "packed", B: 1, S: 2, N: 4, KV: 2, H: 8, P: 8, seqlens: []int{4}, total: 5, packed: true, rotary: true},
	}
	rng := rand.New(rand.NewPCG(11, 12))
	ctx := &kernels.Context{Context: context.Background(), Opset: 1}
	none := func(*kernels.Context, int) *graph.Tensor { return nil }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, feeds := gqaModel(c, rng)
			n := m.Graph.Nodes[0]
			in := gqaInputs(m, feeds)
			pk, pv := in[3], in[4]
			// rows past each sequence's past length are unused: NaN
			for b, sl := range c.seqlens {
				p := sl + 1 - c.S
				for h := 0; h < c.KV; h++ {
					for r := p; r < c.P; r++ {
						for i := 0; i < c.H; i++ {
							at := ((b*c.KV+h)*c.P+r)*c.H + i
							pk.SetFloat64(at, math.NaN())
							pv.SetFloat64(at, math.NaN())
						}
					}
				}
			}
			want, err := contrib.GQAKernelInto(ctx, n, in, none)
			if err != nil {
				t.Fatal(err)
			}
			for j := 0; j < want[0].Len(); j++ {
				if v := want[0].Float64At(j); math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("output[%d] = %v: an unused past row was read", j, v)
				}
			}
			// in place
			bk, bv := pk.Clone(), pv.Clone()
			inPlace := append([]*graph.Tensor(nil), in...)
			inPlace[3], inPlace[4] = bk, bv
			for s := 0; s < c.S; s++ { // the new rows' old contents must not matter
				for b, sl := range c.seqlens {
					for h := 0; h < c.KV; h++ {
						for i := 0; i < c.H; i++ {
							at := ((b*c.KV+h)*c.P+sl+1-c.S+s)*c.H + i
							bk.SetFloat64(at, 1e6)
							bv.SetFloat64(at, -1e6)
						}
					}
				}
			}
			oldK, oldV := bk.Clone(), bv.Clone()
			// the caller's tensors: other Tensor values over the same memory
			ck, cv := &graph.Tensor{DType: bk.DType, Shape: bk.Shape, Data: bk.Data}, &graph.Tensor{DType: bv.DType, Shape: bv.Shape, Data: bv.Data}
			got, err := contrib.GQAKernelInto(ctx, n, inPlace, func(_ *kernels.Context, j int) *graph.Tensor {
				return map[int]*graph.Tensor{1: ck, 2: cv}[j]
			})
			if err != nil {
				t.Fatal(err)
			}
			if got[1] != ck || got[2] != cv {
				t.Fatalf("in place: the presents returned are not the bound tensors")
			}
			sameBits(t, "output", got[0], want[0])
			for b, sl := range c.seqlens {
				p := sl + 1 - c.S
				for h := 0; h < c.KV; h++ {
					for r := 0; r < c.P; r++ {
						for i := 0; i < c.H; i++ {
							at := ((b*c.KV+h)*c.P+r)*c.H + i
							for _, x := range []struct {
								name          string
								got, old, new *graph.Tensor
							}{{"present_key", bk, oldK, want[1]}, {"present_value", bv, oldV, want[2]}} {
								g, w := x.got.Float64At(at), x.old.Float64At(at)
								if r >= p && r < p+c.S {
									w = x.new.Float64At(at)
								}
								if math.Float64bits(g) != math.Float64bits(w) {
									t.Fatalf("%s[%d %d %d %d] = %v, want %v (new rows %d..%d)", x.name, b, h, r, i, g, w, p, p+c.S-1)
								}
							}
						}
					}
				}
			}
			// bound tensors of their own, full of garbage: filled as new presents
			fk, fv := want[1].Clone(), want[2].Clone()
			for j := 0; j < fk.Len(); j++ {
				fk.SetFloat64(j, 3)
				fv.SetFloat64(j, 3)
			}
			got, err = contrib.GQAKernelInto(ctx, n, in, func(_ *kernels.Context, j int) *graph.Tensor {
				return map[int]*graph.Tensor{1: fk, 2: fv}[j]
			})
			if err != nil {
				t.Fatal(err)
			}
			if got[1] != fk || got[2] != fv {
				t.Fatalf("bound presents not written")
			}
			for i, w := range want {
				sameBits(t, fmt.Sprint("output ", i), got[i], w)
			}
			// the key present bound to past_value's memory: not written
			saved := pv.Clone()
			alias := &graph.Tensor{DType: pv.DType, Shape: pv.Shape, Data: pv.Data}
			got, err = contrib.GQAKernelInto(ctx, n, in, func(_ *kernels.Context, j int) *graph.Tensor {
				return map[int]*graph.Tensor{1: alias}[j]
			})
			if err != nil {
				t.Fatal(err)
			}
			if got[1] == alias {
				t.Fatalf("present_key written into past_value")
			}
			sameBits(t, "past_value", pv, saved)
			for i, w := range want {
				sameBits(t, fmt.Sprint("output ", i), got[i], w)
			}
		})
	}
}

func sameBits(t *testing.T, what string, got, want *graph.Tensor) {
	t.Helper()
	if !graph.SameShape(got.Shape, want.Shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, want.Shape)
	}
	for j := 0; j < want.Len(); j++ {
		if g, w := got.Float64At(j), want.Float64At(j); math.Float64bits(g) != math.Float64bits(w) {
			t.Fatalf("%s[%d] = %v, want %v", what, j, g, w)
		}
	}
}

// BenchmarkGroupQueryAttention: the reference kernel on a decode step of
// a small model (B 1, N 8, KV 4, H 8, 256 of 512 cache rows used) and of
// a bigger one (N 32, KV 8, H 64, 1024 of 2048), the presents written in
// place (bound to the pasts) or new (the past copied). plugins/native's
// BenchmarkGQA runs the same cases on its kernel.
func BenchmarkGroupQueryAttention(b *testing.B) {
	for _, c := range []gqaCase{
		{name: "small", B: 1, S: 1, N: 8, KV: 4, H: 8, P: 512, seqlens: []int{255}, total: 256},
		{name: "big", B: 1, S: 1, N: 32, KV: 8, H: 64, P: 2048, seqlens: []int{1023}, total: 1024},
	} {
		m, feeds := gqaModel(c, rand.New(rand.NewPCG(1, 2)))
		n, in := m.Graph.Nodes[0], gqaInputs(m, feeds)
		ck, cv := &graph.Tensor{DType: graph.Float32, Shape: in[3].Shape, Data: in[3].Data}, &graph.Tensor{DType: graph.Float32, Shape: in[4].Shape, Data: in[4].Data}
		ctx := &kernels.Context{Context: context.Background(), Opset: 1}
		for _, mode := range []struct {
			name string
			into func(*kernels.Context, int) *graph.Tensor
		}{
			{"inplace", func(_ *kernels.Context, j int) *graph.Tensor { return [3]*graph.Tensor{nil, ck, cv}[j] }},
			{"copy", func(*kernels.Context, int) *graph.Tensor { return nil }},
		} {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := contrib.GQAKernelInto(ctx, n, in, mode.into); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestGroupQueryAttentionWindow: with local_window_size w a query sees
// only the last w keys, its own included: a decode step over a 5-row past
// with w = 3 gives what the step gives without a window over a past of
// just the last two of those rows (no rotation: positions do not matter).
func TestGroupQueryAttentionWindow(t *testing.T) {
	s, ok := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	if !ok {
		t.Fatal("no GroupQueryAttention kernel")
	}
	c := gqaCase{B: 1, S: 1, N: 4, KV: 2, H: 8, P: 5, seqlens: []int{5}, total: 6}
	m, feeds := gqaModel(c, rand.New(rand.NewPCG(5, 6)))
	n := m.Graph.Nodes[0]
	n.Attrs["local_window_size"] = &graph.Attribute{Name: "local_window_size", Type: graph.AttrInt, I: 3}
	got, err := s.Kernel(&kernels.Context{Opset: 1}, n, gqaInputs(m, feeds))
	if err != nil {
		t.Fatal(err)
	}
	// the last two past rows of each key/value head
	tail := func(x *graph.Tensor) *graph.Tensor {
		v := make([]float32, 0, c.KV*2*c.H)
		for kh := 0; kh < c.KV; kh++ {
			for r := 3; r < 5; r++ {
				for i := 0; i < c.H; i++ {
					v = append(v, float32(x.Float64At((kh*c.P+r)*c.H+i)))
				}
			}
		}
		return graph.MustFromSlice([]int{1, c.KV, 2, c.H}, v)
	}
	short := map[string]*graph.Tensor{}
	for k, v := range feeds {
		short[k] = v
	}
	short["past_key"], short["past_value"] = tail(feeds["past_key"]), tail(feeds["past_value"])
	short["seqlens_k"] = graph.MustFromSlice([]int{1}, []int32{2})
	short["total_sequence_length"] = graph.MustFromSlice([]int{}, []int32{3})
	delete(n.Attrs, "local_window_size")
	want, err := s.Kernel(&kernels.Context{Opset: 1}, n, gqaInputs(m, short))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < want[0].Len(); i++ {
		if a, b := got[0].Float64At(i), want[0].Float64At(i); math.Abs(a-b) > 1e-6 {
			t.Fatalf("output[%d]: windowed %g, over the last rows only %g", i, a, b)
		}
	}
	// and the window matters: without it the output differs
	full, err := s.Kernel(&kernels.Context{Opset: 1}, n, gqaInputs(m, feeds))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(full[0].Float64At(0)-got[0].Float64At(0)) < 1e-9 {
		t.Fatal("the window changed nothing")
	}
}
