package vulkan_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
	"github.com/switchyard-hal/switchyard/runtime"
)

// gqaNode is a com.microsoft GroupQueryAttention on q, k, v (k and v ""
// for a packed query), past pk/pv, seqlens "sl", total "tot" and, with
// do_rotary, the caches "cos" and "sin"; outputs y, present_k, present_v.
func gqaNode(packed bool, attrs ...*graph.Attribute) *graph.Node {
	in := []string{"q", "k", "v", "past_k", "past_v", "sl", "tot", "cos", "sin"}
	if packed {
		in[1], in[2] = "", ""
	}
	n := node("GroupQueryAttention", in, []string{"y", "present_k", "present_v"}, attrs...)
	n.Domain = "com.microsoft"
	return n
}

type gqaShape struct {
	B, S, N, KV, H, P, rows int
	seqlens                 []int32
	packed                  bool
}

func (g gqaShape) inputs() map[string][]int {
	m := map[string][]int{"past_k": {g.B, g.KV, g.P, g.H}, "past_v": {g.B, g.KV, g.P, g.H}}
	if g.packed {
		m["q"] = []int{g.B, g.S, (g.N + 2*g.KV) * g.H}
	} else {
		m["q"], m["k"], m["v"] = []int{g.B, g.S, g.N * g.H}, []int{g.B, g.S, g.KV * g.H}, []int{g.B, g.S, g.KV * g.H}
	}
	return m
}

func (g gqaShape) fixed() map[string]*graph.Tensor {
	tot := int32(0)
	for _, s := range g.seqlens {
		tot = max(tot, s+1)
	}
	return map[string]*graph.Tensor{"sl": graph.MustFromSlice([]int{g.B}, slices.Clone(g.seqlens)), "tot": graph.Scalar(tot)}
}

func (g gqaShape) consts(rng *rand.Rand) map[string]*graph.Tensor {
	return map[string]*graph.Tensor{"cos": randT(rng, g.rows, g.H/2), "sin": randT(rng, g.rows, g.H/2)}
}

func gqaCase(name string, rng *rand.Rand, g gqaShape, attrs ...*graph.Attribute) opCase {
	attrs = append(attrs, iattr("num_heads", int64(g.N)), iattr("kv_num_heads", int64(g.KV)))
	return opCase{name: name, inputs: g.inputs(), fixed: g.fixed(), consts: g.consts(rng),
		nodes: []*graph.Node{gqaNode(g.packed, attrs...)}, outputs: []string{"y", "present_k", "present_v"}}
}

// decoderCases are the ops of the Llama decoder beyond the others:
// Gather (int64 and int32 indices, negative ones, input and constant),
// SimplifiedLayerNormalization and GroupQueryAttention (prefill and
// decode, grouped heads, rotary halves and interleaved, a batch of two
// lengths, a packed query, scale and softcap).
func decoderCases(rng *rand.Rand) []opCase {
	w := func(s ...int) *graph.Tensor { return randT(rng, s...) }
	rot := []*graph.Attribute{iattr("do_rotary", 1), iattr("rotary_interleaved", 1)}
	return []opCase{
		{name: "gather_int64_input", consts: map[string]*graph.Tensor{"emb": w(10, 6)},
			fixed: map[string]*graph.Tensor{"ids": graph.MustFromSlice([]int{2, 3}, []int64{0, 9, -1, 3, -10, 4})},
			nodes: []*graph.Node{node("Gather", []string{"emb", "ids"}, []string{"y"}, iattr("axis", 0))}},
		{name: "gather_int32_axis1", inputs: map[string][]int{"x": {3, 7, 5}},
			fixed: map[string]*graph.Tensor{"ids": graph.MustFromSlice([]int{4}, []int32{6, -7, 2, 2})},
			nodes: []*graph.Node{node("Gather", []string{"x", "ids"}, []string{"y"}, iattr("axis", 1))}},
		{name: "gather_const_indices", inputs: map[string][]int{"x": {4, 5}}, consts: map[string]*graph.Tensor{"ids": graph.Scalar(int64(-2))},
			nodes: []*graph.Node{node("Gather", []string{"x", "ids"}, []string{"y"}, iattr("axis", 0))}},
		{name: "simplified_layernorm", inputs: map[string][]int{"x": {2, 3, 16}}, consts: map[string]*graph.Tensor{"g": w(16), "g2": w(3, 16)},
			nodes: []*graph.Node{
				node("SimplifiedLayerNormalization", []string{"x", "g"}, []string{"a"}, iattr("axis", -1), fattr("epsilon", 1e-5)),
				node("SimplifiedLayerNormalization", []string{"x", "g2"}, []string{"b"}, iattr("axis", 1), fattr("epsilon", 1e-3))},
			outputs: []string{"a", "b"}},
		gqaCase("gqa_prefill_rotary_interleaved", rng, gqaShape{B: 1, S: 5, N: 4, KV: 2, H: 8, P: 16, rows: 16, seqlens: []int32{4}}, rot...),
		gqaCase("gqa_decode_rotary_interleaved", rng, gqaShape{B: 1, S: 1, N: 4, KV: 2, H: 8, P: 16, rows: 16, seqlens: []int32{9}}, rot...),
		gqaCase("gqa_chunk_rotary_halves_batch2", rng, gqaShape{B: 2, S: 3, N: 6, KV: 2, H: 8, P: 12, rows: 20, seqlens: []int32{6, 2}}, iattr("do_rotary", 1)),
		gqaCase("gqa_decode_norotary_mha_scale_softcap", rng, gqaShape{B: 1, S: 1, N: 2, KV: 2, H: 4, P: 7, rows: 7, seqlens: []int32{6}}, fattr("scale", 0.3), fattr("softcap", 2)),
		gqaCase("gqa_packed_decode", rng, gqaShape{B: 1, S: 1, N: 4, KV: 1, H: 8, P: 10, rows: 10, seqlens: []int32{3}, packed: true}, rot...),
	}
}

// TestDecoderOpsAgainstCPU runs decoderCases on vulkan (with the device
// memory mapped, and through staging buffers as on a discrete GPU)
// against the reference kernels.
func TestDecoderOpsAgainstCPU(t *testing.T) {
	for _, staging := range []bool{false, true} {
		name := "mapped"
		if staging {
			name = "staging"
		}
		t.Run(name, func(t *testing.T) {
			dev, _ := device(t, vulkan.Options{ForceStaging: staging})
			rng := rand.New(rand.NewPCG(3, 4))
			for _, c := range decoderCases(rng) {
				t.Run(c.name, func(t *testing.T) { c.run(t, dev, rng) })
			}
		})
	}
}

// gqaSubgraph is one GroupQueryAttention as a partition: inputs q, k, v,
// past_k, past_v, sl, tot; outputs y, present_k, present_v.
func gqaSubgraph(g gqaShape, cos, sin *graph.Tensor, attrs ...*graph.Attribute) *hal.Subgraph {
	f := func(name string, dt graph.DType, s ...int) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(s...)}}
	}
	attrs = append(attrs, iattr("num_heads", int64(g.N)), iattr("kv_num_heads", int64(g.KV)))
	return &hal.Subgraph{Graph: &graph.Graph{Name: "gqa",
		Inputs: []graph.ValueInfo{f("q", graph.Float32, g.B, g.S, g.N*g.H), f("k", graph.Float32, g.B, g.S, g.KV*g.H), f("v", graph.Float32, g.B, g.S, g.KV*g.H),
			f("past_k", graph.Float32, g.B, g.KV, g.P, g.H), f("past_v", graph.Float32, g.B, g.KV, g.P, g.H), f("sl", graph.Int32, g.B), f("tot", graph.Int32)},
		Outputs:      []graph.ValueInfo{f("y", graph.Float32, g.B, g.S, g.N*g.H), f("present_k", graph.Float32, g.B, g.KV, g.P, g.H), f("present_v", graph.Float32, g.B, g.KV, g.P, g.H)},
		Initializers: map[string]*graph.Tensor{"cos": cos, "sin": sin},
		Nodes:        []*graph.Node{gqaNode(false, attrs...)}},
		Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}}
}

// TestGQAInPlaceEnqueue: the partition reports its presents in place of
// its pasts; Enqueue with present_k the very buffer of past_k (and
// present_v of past_v) writes only the new rows into it, a prefill then
// two decode steps, each checked against the reference kernel; the rows
// after the new ones keep what the buffer held. Given other buffers, the
// presents are the past with the new rows (and zeros after them).
func TestGQAInPlaceEnqueue(t *testing.T) {
	dev, _ := device(t, vulkan.Options{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	const B, N, KV, H, P = 1, 4, 2, 8, 12
	cos, sin := randT(rng, P, H/2), randT(rng, P, H/2)
	rot := []*graph.Attribute{iattr("do_rotary", 1), iattr("rotary_interleaved", 1)}
	alloc := func(dt graph.DType, s ...int) hal.Buffer {
		b, err := dev.Allocate(ctx, hal.BufferRequest{DType: dt, Shape: s, Memory: hal.MemoryDeviceLocal})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dev.Free(b) })
		return b
	}
	upload := func(b hal.Buffer, v *graph.Tensor) {
		f, err := dev.Upload(ctx, b, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	download := func(b hal.Buffer, after hal.Fence) *graph.Tensor {
		var got graph.Tensor
		var fs []hal.Fence
		if after != nil {
			fs = []hal.Fence{after}
		}
		f, err := dev.Download(ctx, &got, b, fs)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		return &got
	}
	// the buffers the cache lives in, holding garbage at first (the rows
	// after the new ones must keep it)
	pastK, pastV := randT(rng, B, KV, P, H), randT(rng, B, KV, P, H)
	cacheK, cacheV := alloc(graph.Float32, B, KV, P, H), alloc(graph.Float32, B, KV, P, H)
	upload(cacheK, pastK)
	upload(cacheV, pastV)
	hostK, hostV := pastK.Clone(), pastV.Clone() // what the buffers should hold
	past := 0
	for step, S := range []int{4, 1, 1} {
		g := gqaShape{B: B, S: S, N: N, KV: KV, H: H, P: P, rows: P, seqlens: []int32{int32(past + S - 1)}}
		sg := gqaSubgraph(g, cos, sin, rot...)
		c, err := dev.Compile(ctx, sg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
		if got := c.InPlaceOutputs(); !slices.Equal(got, []hal.InPlace{{Output: 1, Input: 3}, {Output: 2, Input: 4}}) {
			t.Fatalf("InPlaceOutputs = %v", got)
		}
		q, k, v := randT(rng, B, S, N*H), randT(rng, B, S, KV*H), randT(rng, B, S, KV*H)
		sl, tot := graph.MustFromSlice([]int{1}, []int32{int32(past + S - 1)}), graph.Scalar(int32(past+S))
		// the reference: the cpu kernels on the host copy of the caches
		ref, err := runtime.Prepare(ctx, &graph.Model{IRVersion: 8, Opsets: sg.Opsets, Graph: sg.Graph}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(ctx, map[string]*graph.Tensor{"q": q, "k": k, "v": v, "past_k": hostK, "past_v": hostV, "sl": sl, "tot": tot})
		ref.Close()
		if err != nil {
			t.Fatal(err)
		}
		bufs := map[string]hal.Buffer{}
		for name, val := range map[string]*graph.Tensor{"q": q, "k": k, "v": v, "sl": sl, "tot": tot} {
			bufs[name] = alloc(val.DType, val.Shape...)
			upload(bufs[name], val)
		}
		ins := []hal.Buffer{bufs["q"], bufs["k"], bufs["v"], cacheK, cacheV, bufs["sl"], bufs["tot"]}
		if step == 2 {
			// other buffers: present = past with the new rows, zeros after
			before := download(cacheK, nil)
			outs := []hal.Buffer{nil, nil, nil}
			f, err := c.Enqueue(ctx, ins, outs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"y", "present_k", "present_v"} {
				if err := onnxtest.Compare(download(outs[i], f), want[name], 1e-4, 1e-5); err != nil {
					t.Fatalf("step %d, new buffers: %s: %v", step, name, err)
				}
				_ = dev.Free(outs[i])
			}
			// the caches were not written
			if err := onnxtest.Compare(download(cacheK, f), before, 0, 0); err != nil {
				t.Fatalf("the past was written: %v", err)
			}
		}
		outs := []hal.Buffer{nil, cacheK, cacheV}
		f, err := c.Enqueue(ctx, ins, outs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := onnxtest.Compare(download(outs[0], f), want["y"], 1e-4, 1e-5); err != nil {
			t.Fatalf("step %d (S=%d): y: %v", step, S, err)
		}
		_ = dev.Free(outs[0])
		// the new rows as the reference's, the others as they were
		for w, name := range []string{"present_k", "present_v"} {
			host := []*graph.Tensor{hostK, hostV}[w]
			hd, wd := graph.Data[float32](host), graph.Data[float32](want[name])
			for kh := 0; kh < KV; kh++ {
				for r := past; r < past+S; r++ {
					at := (kh*P + r) * H
					copy(hd[at:at+H], wd[at:at+H])
				}
			}
			if err := onnxtest.Compare(download(outs[1+w], f), host, 1e-4, 1e-5); err != nil {
				t.Fatalf("step %d (S=%d): %s in place: %v", step, S, name, err)
			}
		}
		past += S
	}
	// an output aliasing an input outside the pairs is refused
	g := gqaShape{B: B, S: 1, N: N, KV: KV, H: H, P: P, rows: P, seqlens: []int32{int32(past)}}
	c, err := dev.Compile(ctx, gqaSubgraph(g, cos, sin, rot...), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	q := alloc(graph.Float32, B, 1, N*H)
	kv := alloc(graph.Float32, B, 1, KV*H)
	sl, tot := alloc(graph.Int32, 1), alloc(graph.Int32)
	if _, err := c.Enqueue(ctx, []hal.Buffer{q, kv, kv, cacheK, cacheV, sl, tot}, []hal.Buffer{nil, cacheV, cacheK}, nil, nil); err == nil {
		t.Fatal("present_k in past_v's buffer was accepted")
	}
}

// TestDecoderHostChecks: on the host path, indices out of range and
// sequence lengths that do not fit the cache are errors (a shader would
// clamp them), and what the shaders do not implement is declined with
// the reason.
func TestDecoderHostChecks(t *testing.T) {
	dev, b := device(t, vulkan.Options{})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	emb := randT(rng, 5, 3)
	sg := &hal.Subgraph{Graph: &graph.Graph{Name: "gather",
		Inputs:       []graph.ValueInfo{{Name: "ids", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape(2)}}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2, 3)}}},
		Initializers: map[string]*graph.Tensor{"emb": emb},
		Nodes:        []*graph.Node{node("Gather", []string{"emb", "ids"}, []string{"y"})}}, Opsets: []graph.Opset{{Version: 17}}}
	c, err := dev.Compile(ctx, sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	for _, ids := range [][]int64{{0, 5}, {-6, 1}, {1 << 40, 0}} {
		var y graph.Tensor
		if err := c.Execute(ctx, []*graph.Tensor{i64(ids...)}, []*graph.Tensor{&y}); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("indices %v: %v, want out of range", ids, err)
		}
	}
	// negative indices count from the end
	var y graph.Tensor
	if err := c.Execute(ctx, []*graph.Tensor{i64(-5, 4)}, []*graph.Tensor{&y}); err != nil {
		t.Fatal(err)
	}
	ed := graph.Data[float32](emb)
	if got := graph.Data[float32](&y); !slices.Equal(got, append(slices.Clone(ed[:3]), ed[12:15]...)) {
		t.Fatalf("Gather rows -5, 4: %v", got)
	}

	g := gqaShape{B: 1, S: 2, N: 2, KV: 1, H: 4, P: 6, rows: 6, seqlens: []int32{7}}
	gc, err := dev.Compile(ctx, gqaSubgraph(g, randT(rng, 6, 2), randT(rng, 6, 2), iattr("do_rotary", 1)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Release()
	for _, c := range []struct {
		sl, tot int32
		want    string
	}{{7, 8, "over the cache"}, {6, 7, "over the cache"}, {0, 1, "padded"}} {
		outs := make([]*graph.Tensor, 3)
		for i := range outs {
			outs[i] = &graph.Tensor{}
		}
		in := []*graph.Tensor{randT(rng, 1, 2, 8), randT(rng, 1, 2, 4), randT(rng, 1, 2, 4), randT(rng, 1, 1, 6, 4), randT(rng, 1, 1, 6, 4),
			graph.MustFromSlice([]int{1}, []int32{c.sl}), graph.Scalar(c.tot)}
		if err := gc.Execute(ctx, in, outs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("seqlens_k %d, total %d: %v, want %q", c.sl, c.tot, err, c.want)
		}
	}

	for _, c := range []struct {
		attr *graph.Attribute
		want string
	}{{iattr("local_window_size", 4), "local_window_size"}, {iattr("smooth_softmax", 1), "smooth_softmax"}} {
		sg := gqaSubgraph(g, randT(rng, 6, 2), randT(rng, 6, 2), c.attr)
		v, err := b.Supports(ctx, sg)
		if err != nil {
			t.Fatal(err)
		}
		if v[0].Supported || !strings.Contains(v[0].Reason, c.want) {
			t.Errorf("%s: %+v", c.want, v[0])
		}
	}
}

// TestStories260KGreedy: the Llama decoder built from stories260K.bin
// with vulkan in front of cpu: every float op but the sequence-length
// arithmetic (Shape, Cast, int32 Add, Sub, Squeeze) runs on vulkan, and
// greedy decoding gives llama2.c's 64 golden tokens.
func TestStories260KGreedy(t *testing.T) {
	open(t, vulkan.Options{})
	dir := shared.Path(t, "testdata/llm/stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "expected", "once_upon_a_time.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Prompt string `json:"prompt"`
		Steps  int    `json:"steps"`
		Tokens []int  `json:"tokens"`
		Text   string `json:"text"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil || len(golden.Tokens) != golden.Steps {
		t.Fatalf("golden file: %v", err)
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Backends: []string{"vulkan", "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// the int64 bookkeeping, and the choice of the rows that get logits
	// (Neg of logits_rows, then a Slice whose start is not a constant)
	onCPU := map[string]bool{"Shape": true, "Cast": true, "Add": true, "Sub": true, "Squeeze": true, "Neg": true, "Slice": true}
	for _, n := range m.Plan().Nodes {
		if n.Backend != vulkan.Name && !onCPU[n.OpType] {
			t.Errorf("%s %s on %s: %+v", n.OpType, n.Name, n.Backend, n.Declined)
		}
	}
	t.Logf("nodes per backend: %v, %d partitions", m.Plan().Summary(), len(m.Plan().Partitions))
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Generate(ctx, tok, golden.Prompt, llm.Options{Steps: golden.Steps}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, golden.Tokens) {
		t.Fatalf("tokens %v\nwant   %v", res.Tokens, golden.Tokens)
	}
}

// TestGQAInPlaceExecute: on the host path, a present tensor that is its
// past tensor is updated as the reference kernel updates it in place: the
// new rows written, the others (the rows after them too) as they were;
// mapped and through staging buffers.
func TestGQAInPlaceExecute(t *testing.T) {
	for _, staging := range []bool{false, true} {
		dev, _ := device(t, vulkan.Options{ForceStaging: staging})
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(9, 10))
		const B, N, KV, H, P = 1, 4, 2, 8, 10
		cos, sin := randT(rng, P, H/2), randT(rng, P, H/2)
		cacheK, cacheV := randT(rng, B, KV, P, H), randT(rng, B, KV, P, H)
		past := 0
		for _, S := range []int{3, 1, 1} {
			g := gqaShape{B: B, S: S, N: N, KV: KV, H: H, P: P, rows: P, seqlens: []int32{int32(past + S - 1)}}
			sg := gqaSubgraph(g, cos, sin, iattr("do_rotary", 1))
			c, err := dev.Compile(ctx, sg, nil)
			if err != nil {
				t.Fatal(err)
			}
			q, k, v := randT(rng, B, S, N*H), randT(rng, B, S, KV*H), randT(rng, B, S, KV*H)
			sl, tot := graph.MustFromSlice([]int{1}, []int32{int32(past + S - 1)}), graph.Scalar(int32(past+S))
			ref, err := runtime.Prepare(ctx, &graph.Model{IRVersion: 8, Opsets: sg.Opsets, Graph: sg.Graph}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Run(ctx, map[string]*graph.Tensor{"q": q, "k": k, "v": v, "past_k": cacheK, "past_v": cacheV, "sl": sl, "tot": tot})
			ref.Close()
			if err != nil {
				t.Fatal(err)
			}
			expect := []*graph.Tensor{cacheK.Clone(), cacheV.Clone()}
			for w, name := range []string{"present_k", "present_v"} {
				hd, wd := graph.Data[float32](expect[w]), graph.Data[float32](want[name])
				for kh := 0; kh < KV; kh++ {
					at := (kh*P + past) * H
					copy(hd[at:at+S*H], wd[at:at+S*H])
				}
			}
			y := &graph.Tensor{}
			if err := c.Execute(ctx, []*graph.Tensor{q, k, v, cacheK, cacheV, sl, tot}, []*graph.Tensor{y, cacheK, cacheV}); err != nil {
				t.Fatal(err)
			}
			c.Release()
			if err := onnxtest.Compare(y, want["y"], 1e-4, 1e-5); err != nil {
				t.Fatalf("staging %v, S=%d: y: %v", staging, S, err)
			}
			for w, got := range []*graph.Tensor{cacheK, cacheV} {
				if err := onnxtest.Compare(got, expect[w], 1e-4, 1e-5); err != nil {
					t.Fatalf("staging %v, S=%d: present %d in place: %v", staging, S, w, err)
				}
			}
			past += S
		}
	}
}
