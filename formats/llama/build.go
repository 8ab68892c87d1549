package llama

import (
	"fmt"
	"math"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// contribDomain is ONNX Runtime's contrib domain (RotaryEmbedding).
const contribDomain = "com.microsoft"

type builder struct {
	g     *graph.Graph
	seq   int
	round bool // Config.RoundActivations
}

func (b *builder) name(prefix string) string {
	b.seq++
	return fmt.Sprintf("%s_%d", prefix, b.seq)
}

// node adds a node with one output and returns the output's name.
func (b *builder) node(op, domain string, attrs map[string]*graph.Attribute, inputs ...string) string {
	out := b.name(op)
	b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: out, OpType: op, Domain: domain, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return out
}

func (b *builder) init(name string, t *graph.Tensor) string {
	b.g.Initializers[name] = t
	return name
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func intA(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func floatA(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func attrs(as ...*graph.Attribute) map[string]*graph.Attribute {
	m := map[string]*graph.Attribute{}
	for _, a := range as {
		m[a.Name] = a
	}
	return m
}

func (b *builder) i64(name string, v ...int64) string {
	return b.init(name, graph.MustFromSlice([]int{len(v)}, v))
}

func (b *builder) f32(name string, shape []int, v []float32) string {
	return b.init(name, graph.MustFromSlice(shape, v))
}

// linear is x [1, S, m.Cols] times the matrix transposed: [1, S, m.Rows].
func (b *builder) linear(x, name string, m *Matrix) string {
	if b.round && m.VecDot != graph.Undefined {
		x = b.node("Cast", "", attrs(intA("to", int64(graph.Float32))), b.node("Cast", "", attrs(intA("to", int64(m.VecDot))), x))
	}
	if !m.Typed() && !m.Quantized() {
		// MatMul wants [in, out]: store the transpose once.
		t := make([]float32, len(m.F32))
		for r := 0; r < m.Rows; r++ {
			for c := 0; c < m.Cols; c++ {
				t[c*m.Rows+r] = m.F32[r*m.Cols+c]
			}
		}
		return b.node("MatMul", "", nil, x, b.f32(name, []int{m.Cols, m.Rows}, t))
	}
	if m.Raw != nil {
		q := graph.MustFromSlice([]int{m.Rows, len(m.Raw) / m.Rows}, m.Raw)
		return b.node(blockquant.OpType, blockquant.Domain,
			attrs(intA("N", int64(m.Rows)), intA("K", int64(m.Cols)), &graph.Attribute{Name: "type", Type: graph.AttrString, S: m.GGML.String()}),
			x, b.init(name+".q", q))
	}
	var q *graph.Tensor
	if m.Bits == 8 {
		q = graph.MustFromSlice([]int{m.Rows, m.Cols}, m.Q8)
	} else {
		q = graph.MustFromSlice([]int{len(m.Q4)}, m.Q4)
	}
	return b.node(blockquant.OpType, blockquant.Domain,
		attrs(intA("N", int64(m.Rows)), intA("K", int64(m.Cols)), intA("bits", int64(m.Bits)), intA("block_size", int64(m.Block))),
		x, b.init(name+".q", q), b.f32(name+".scales", []int{len(m.Scales)}, m.Scales))
}

func (b *builder) rmsNorm(x, name string, gamma []float32, eps float64) string {
	return b.node("SimplifiedLayerNormalization", "", attrs(intA("axis", -1), floatA("epsilon", float32(eps))),
		x, b.f32(name, []int{len(gamma)}, gamma))
}

// Cache is the KV-cache interface of the decoder graph.
type Cache int

const (
	// SharedCache: past_key.N and past_value.N are buffers of the whole
	// context [1, kv_heads, context, head_size]; an int32 input
	// past_sequence_length [1] says how many positions they hold, and the
	// present_key.N / present_value.N outputs are the same buffers with
	// the new positions written after those (com.microsoft
	// GroupQueryAttention with past_present_share_buffer, rotary inside).
	// A caller binding each present output to its past tensor has the
	// cache updated in place: no copy of the cache per token.
	SharedCache Cache = iota
	// ConcatCache: the ONNX exporters' interface, past [1, kv_heads,
	// past, head_size] and present = past followed by the new positions,
	// a new tensor every step.
	ConcatCache
)

// Build returns the decoder graph of w with a SharedCache (see the
// package comment for its inputs and outputs).
func Build(w *Weights) (*graph.Model, error) { return BuildWith(w, SharedCache) }

// BuildWith returns the decoder graph of w with the cache interface
// asked. Float32 matrices become MatMuls with their transposes as
// initializers; quantized ones BlockQuantMatMuls.
func BuildWith(w *Weights, cache Cache) (*graph.Model, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	if err := w.Config.checkTables(); err != nil {
		return nil, err
	}
	if cache != SharedCache && cache != ConcatCache {
		return nil, fmt.Errorf("llama: unknown cache interface %d", cache)
	}
	c := &w.Config
	kvDT, kvWidth, _, err := c.KVCache.layout(c.HeadSize)
	if err != nil {
		return nil, err
	}
	if cache != SharedCache && kvDT != graph.Float32 {
		return nil, fmt.Errorf("%w: the ConcatCache form keeps a float32 cache, not %s", ErrUnsupported, c.KVCache)
	}
	g := &graph.Graph{Name: c.Block.name(), Initializers: map[string]*graph.Tensor{}}
	b := &builder{g: g, round: c.RoundActivations}
	seq := graph.Dim{Param: "seq"}
	KV, HS := int64(c.KVHeads), int64(kvWidth)
	pastDim, presentDim := graph.Dim{Param: "past"}, graph.Dim{Param: "total"}
	if cache == SharedCache {
		pastDim = graph.Dim{Value: int64(c.ContextLength)}
		presentDim = pastDim
	}
	g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "input_ids", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: 1}, seq}}})
	if cache == SharedCache {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: PastLengthInput, Type: graph.ValueType{Kind: "tensor", DType: graph.Int32, Shape: graph.Shape{{Value: 1}}}})
	}
	g.Outputs = append(g.Outputs, graph.ValueInfo{Name: "logits", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Value: 1}, {Param: "logits_rows"}, {Value: int64(c.Vocab)}}}})
	for l := 0; l < c.Layers; l++ {
		for _, kind := range []string{"key", "value"} {
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: fmt.Sprintf("past_%s.%d", kind, l),
				Type: graph.ValueType{Kind: "tensor", DType: kvDT, Shape: graph.Shape{{Value: 1}, {Value: KV}, pastDim, {Value: HS}}}})
			g.Outputs = append(g.Outputs, graph.ValueInfo{Name: fmt.Sprintf("present_%s.%d", kind, l),
				Type: graph.ValueType{Kind: "tensor", DType: kvDT, Shape: graph.Shape{{Value: 1}, {Value: KV}, presentDim, {Value: HS}}}})
		}
	}
	// (last) logits_rows asks for the logits of the last N positions only
	// (0: every position): a prompt's prefill needs one row, and the
	// classifier over every position was a third of it. Its initializer
	// is its default (every position): a caller may leave it out
	g.Inputs = append(g.Inputs, graph.ValueInfo{Name: LogitsRowsInput, Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: 1}}}})
	b.i64(LogitsRowsInput, 0)

	// Token embedding: rows of a table in ggml's block layout dequantized
	// as they are looked up (BlockQuantGather: the table stays the file's
	// bytes), else Gather rows of a float32 table (Q8_0/Q4_0 tables
	// dequantised once).
	var x string
	if e := &w.Embed; e.Raw != nil {
		q := graph.MustFromSlice([]int{e.Rows, len(e.Raw) / e.Rows}, e.Raw)
		x = b.node(blockquant.GatherOpType, blockquant.Domain,
			attrs(intA("K", int64(e.Cols)), &graph.Attribute{Name: "type", Type: graph.AttrString, S: e.GGML.String()}),
			b.init("tok_embeddings.q", q), "input_ids") // [1, S, D]
	} else {
		embed := b.f32("tok_embeddings", []int{c.Vocab, c.Dim}, w.Embed.Float32s())
		x = b.node("Gather", "", attrs(intA("axis", 0)), embed, "input_ids") // [1, S, D]
	}
	if s := c.Block.EmbedScale; s != 0 && s != 1 {
		x = b.node("Mul", "", nil, x, b.f32("embed_scale", []int{}, []float32{float32(s)}))
	}
	// one pair of rotary tables per rotary base: the global layers' and,
	// where they differ, the sliding-window layers'
	tables := map[bool][2]string{}
	for l := 0; l < c.Layers; l++ {
		local := c.local(l) && c.Block.RopeThetaLocal > 0
		if _, ok := tables[local]; ok {
			continue
		}
		theta, suffix := c.RopeTheta, ""
		if local {
			theta, suffix = c.Block.RopeThetaLocal, "_local"
		}
		cosT, sinT := ropeTables(c, theta, local)
		half := c.Block.RotaryDim / 2
		tables[local] = [2]string{b.f32("rope_cos"+suffix, []int{c.ContextLength, half}, cosT), b.f32("rope_sin"+suffix, []int{c.ContextLength, half}, sinT)}
	}
	var attend func(l int, q, k, v string, rope [2]string) string // [1, S, QDim] attention output
	if cache == SharedCache {
		attend = b.sharedAttention(c)
	} else {
		if err := concatSupports(c); err != nil {
			return nil, err
		}
		attend = b.concatAttention(c)
	}

	for l := 0; l < c.Layers; l++ {
		L := &w.Layers[l]
		p := fmt.Sprintf("layers.%d.", l)
		xn := b.rmsNorm(x, p+"attention_norm", L.AttnNorm, c.RMSEps)
		var q, k, v string
		if L.QKV != nil {
			qkv := b.split(b.linear(xn, p+"wqkv", L.QKV), p+"qkv_split", c.QDim(), c.KVDim(), c.KVDim())
			q, k, v = qkv[0], qkv[1], qkv[2]
		} else {
			q, k, v = b.linear(xn, p+"wq", &L.Q), b.linear(xn, p+"wk", &L.K), b.linear(xn, p+"wv", &L.V)
		}
		q, k, v = b.bias(q, p+"bq", L.QBias), b.bias(k, p+"bk", L.KBias), b.bias(v, p+"bv", L.VBias)
		if c.Block.QKNorm {
			q = b.headNorm(q, p+"q_norm", L.QNorm, c.Heads, c.RMSEps)
			k = b.headNorm(k, p+"k_norm", L.KNorm, c.KVHeads, c.RMSEps)
		}
		att := b.linear(attend(l, q, k, v, tables[c.local(l) && c.Block.RopeThetaLocal > 0]), p+"wo", &L.O)
		if c.Block.PostNorms {
			att = b.rmsNorm(att, p+"post_attention_norm", L.PostAttnNorm, c.RMSEps)
		}
		x = b.node("Add", "", nil, x, att)

		xn = b.rmsNorm(x, p+"ffn_norm", L.FFNNorm, c.RMSEps)
		var gate, up string
		if L.GateUp != nil {
			gu := b.split(b.linear(xn, p+"w13", L.GateUp), p+"gate_up_split", c.Hidden, c.Hidden)
			gate, up = gu[0], gu[1]
		} else {
			gate, up = b.linear(xn, p+"w1", &L.Gate), b.linear(xn, p+"w3", &L.Up)
		}
		var h string
		switch {
		case c.Block.GELU:
			h = b.node("Mul", "", nil, b.geluGGML(gate), up)
		case b.round:
			// llama.cpp's numerics: its SiLU (ggml's exponential) in
			// its order, as the GELU above
			h = b.node(blockquant.SwiGLUOpType, blockquant.Domain, nil, gate, up)
		default:
			h = b.node("Mul", "", nil, b.node("Mul", "", nil, gate, b.node("Sigmoid", "", nil, gate)), up)
		}
		down := b.linear(h, p+"w2", &L.Down)
		if c.Block.PostNorms {
			down = b.rmsNorm(down, p+"post_ffn_norm", L.PostFFNNorm, c.RMSEps)
		}
		x = b.node("Add", "", nil, x, down)
	}
	// the last logits_rows positions (Slice from −N; −0 is every one)
	x = b.node("Slice", "", nil, x, b.node("Neg", "", nil, LogitsRowsInput), b.i64("logits_rows_end", math.MaxInt64), b.i64("logits_rows_axis", 1))
	x = b.rmsNorm(x, "norm", w.Norm, c.RMSEps)
	cls := w.Output
	if cls == nil {
		cls = &w.Embed
	}
	logits := b.linear(x, "output", cls)
	if sc := c.Block.FinalSoftcap; sc > 0 {
		logits = b.softcap(logits, "final_softcap", sc)
	}
	// the last node writes the graph's output itself (an Identity to the
	// name would copy the vocabulary-wide rows every step)
	if last := b.g.Nodes[len(b.g.Nodes)-1]; len(last.Outputs) == 1 && last.Outputs[0] == logits {
		last.Outputs[0] = "logits"
	} else {
		b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: "logits", OpType: "Identity", Inputs: []string{logits}, Outputs: []string{"logits"}})
	}

	m := &graph.Model{
		IRVersion:    8,
		Opsets:       []graph.Opset{{Domain: "", Version: 17}, {Domain: contribDomain, Version: 1}, {Domain: blockquant.Domain, Version: 1}},
		ProducerName: "switchyard formats/llama",
		Metadata: map[string]string{
			"llama.architecture":   c.Block.name(),
			"llama.context_length": fmt.Sprint(c.ContextLength),
			"llama.vocab_size":     fmt.Sprint(c.Vocab),
			"llama.weight_bytes":   fmt.Sprint(w.WeightBytes()),
		},
		Graph: g,
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// LogitsRowsInput is the decoder graph's int64 [1] input: how many of
// the last positions get logits (0, or more than the step's: all). It is
// optional: its initializer gives the default, 0 (all).
const LogitsRowsInput = "logits_rows"

// PastLengthInput is the SharedCache graph's int32 [1] input: the
// positions the cache buffers hold before this call.
const PastLengthInput = "past_sequence_length"

// attnAttrs are the GroupQueryAttention attributes of layer l: heads,
// the rotation's form, the score scale, soft-capping and the sliding
// window (local_window_size: the keys a query sees, its own included).
func attnAttrs(c *Config, l int) map[string]*graph.Attribute {
	inter := int64(1)
	if c.Block.NeoxRope {
		inter = 0
	}
	a := attrs(intA("num_heads", int64(c.Heads)), intA("kv_num_heads", int64(c.KVHeads)),
		intA("do_rotary", 1), intA("rotary_interleaved", inter))
	if s := c.Block.AttnScale; s > 0 {
		a["scale"] = floatA("scale", float32(s))
	}
	if s := c.Block.AttnSoftcap; s > 0 {
		a["softcap"] = floatA("softcap", float32(s))
	}
	if c.RoundActivations {
		// llama.cpp's numerics: its float32 rotation (fused products)
		a[contrib.RotaryFMAAttr] = intA(contrib.RotaryFMAAttr, 1)
		// and its attention's order; Phi-3 and Gemma scale Q first
		mode := int64(1)
		if c.Block.Arch == "phi3" || strings.HasPrefix(c.Block.Arch, "gemma") {
			mode = 2
		}
		a[contrib.GGMLAttentionAttr] = intA(contrib.GGMLAttentionAttr, mode)
	}
	if c.KVCache == KVQ8_0 {
		a[KVTypeAttr] = &graph.Attribute{Name: KVTypeAttr, Type: graph.AttrString, S: string(KVQ8_0)}
	}
	if c.local(l) {
		a["local_window_size"] = intA("local_window_size", int64(c.Block.SlidingWindow))
	}
	return a
}

// sharedAttention returns the attention of a SharedCache layer: one
// GroupQueryAttention over the context-long cache buffers, which rotates
// the queries and keys itself and writes the new keys and values at
// positions past..past+S-1.
func (b *builder) sharedAttention(c *Config) func(l int, q, k, v string, rope [2]string) string {
	// seqlens_k = past + S - 1 and total_sequence_length = past + S,
	// int32 as the op wants them
	seqLen := b.node("Cast", "", attrs(intA("to", int64(graph.Int32))),
		b.node("Shape", "", attrs(intA("start", 1), intA("end", 2)), "input_ids")) // [1]
	totLen := b.node("Add", "", nil, PastLengthInput, seqLen)
	seqlensK := b.node("Sub", "", nil, totLen, b.init("one_i32", graph.MustFromSlice([]int{1}, []int32{1})))
	total := b.node("Squeeze", "", nil, totLen, b.i64("zero", 0))
	return func(l int, q, k, v string, rope [2]string) string {
		out := b.name("GroupQueryAttention")
		b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: out, OpType: "GroupQueryAttention", Domain: contribDomain,
			Inputs:  []string{q, k, v, fmt.Sprintf("past_key.%d", l), fmt.Sprintf("past_value.%d", l), seqlensK, total, rope[0], rope[1]},
			Outputs: []string{out, fmt.Sprintf("present_key.%d", l), fmt.Sprintf("present_value.%d", l)},
			Attrs:   attnAttrs(c, l)})
		return out
	}
}

// concatSupports says whether the ConcatCache form (standard ops and
// RotaryEmbedding) builds c: it lacks partial rotation, soft-capping and
// sliding windows.
func concatSupports(c *Config) error {
	b := &c.Block
	switch {
	case b.RotaryDim != c.HeadSize:
		return fmt.Errorf("%w: the ConcatCache form does not rotate part of a head (%d of %d)", ErrUnsupported, b.RotaryDim, c.HeadSize)
	case b.AttnSoftcap > 0:
		return fmt.Errorf("%w: the ConcatCache form does not soft-cap attention", ErrUnsupported)
	case b.SlidingWindow > 0:
		return fmt.Errorf("%w: the ConcatCache form has no sliding window", ErrUnsupported)
	}
	return nil
}

// concatAttention returns the attention of a ConcatCache layer in
// standard ops: rotary embedding, the caches concatenated with the new
// keys and values, and grouped-query attention as batched MatMuls with a
// causal mask.
func (b *builder) concatAttention(c *Config) func(l int, q, k, v string, rope [2]string) string {
	QD, KV, HS, G := int64(c.QDim()), int64(c.KVHeads), int64(c.HeadSize), int64(c.Heads/c.KVHeads)
	// Positions: the past length (dim 2 of the first cache input) is the
	// first new token's position; S is the new tokens' count.
	pastLen := b.node("Shape", "", attrs(intA("start", 2), intA("end", 3)), "past_key.0") // [1]
	seqLen := b.node("Shape", "", attrs(intA("start", 1), intA("end", 2)), "input_ids")   // [1]
	totLen := b.node("Add", "", nil, pastLen, seqLen)                                     // [1]
	zero, one := b.i64("zero", 0), b.i64("one", 1)
	pastS := b.node("Squeeze", "", nil, pastLen, zero)
	totS := b.node("Squeeze", "", nil, totLen, zero)
	oneS := b.node("Squeeze", "", nil, one, zero)
	zeroS := b.node("Squeeze", "", nil, zero, zero)
	rows := b.node("Range", "", nil, pastS, totS, oneS)               // query positions [S]
	cols := b.node("Range", "", nil, zeroS, totS, oneS)               // key positions [T]
	rows2 := b.node("Unsqueeze", "", nil, rows, one)                  // [S, 1]
	future := b.node("Greater", "", nil, cols, rows2)                 // [S, T]: key after query
	mask := b.node("Tile", "", nil, future, b.i64("mask_tile", G, 1)) // [G·S, T]
	negInf := b.f32("neg_inf", []int{}, []float32{float32(math.Inf(-1))})
	headsShape := b.i64("q_heads_shape", 1, -1, int64(c.Heads), HS)
	kvShape := b.i64("kv_heads_shape", 1, -1, KV, HS)
	groupShape := b.i64("group_shape", 1, KV, -1, HS)
	backShape := b.i64("back_shape", 1, int64(c.Heads), -1, HS)
	flatShape := b.i64("flat_shape", 1, -1, QD)
	sc := c.Block.AttnScale
	if sc == 0 {
		sc = 1 / math.Sqrt(float64(c.HeadSize))
	}
	scale := b.f32("attn_scale", []int{}, []float32{float32(sc)})
	inter := int64(1)
	if c.Block.NeoxRope {
		inter = 0
	}
	return func(l int, q, k, v string, rope [2]string) string {
		q = b.node("RotaryEmbedding", contribDomain, attrs(intA("interleaved", inter), intA("num_heads", int64(c.Heads))), q, pastLen, rope[0], rope[1])
		k = b.node("RotaryEmbedding", contribDomain, attrs(intA("interleaved", inter), intA("num_heads", KV)), k, pastLen, rope[0], rope[1])
		perm := attrs(ints("perm", 0, 2, 1, 3))
		q = b.node("Transpose", "", perm, b.node("Reshape", "", nil, q, headsShape)) // [1, H, S, hs]
		k = b.node("Transpose", "", perm, b.node("Reshape", "", nil, k, kvShape))    // [1, KV, S, hs]
		v = b.node("Transpose", "", perm, b.node("Reshape", "", nil, v, kvShape))
		pk, pv := fmt.Sprintf("present_key.%d", l), fmt.Sprintf("present_value.%d", l)
		b.g.Nodes = append(b.g.Nodes,
			&graph.Node{Name: pk, OpType: "Concat", Inputs: []string{fmt.Sprintf("past_key.%d", l), k}, Outputs: []string{pk}, Attrs: attrs(intA("axis", 2))},
			&graph.Node{Name: pv, OpType: "Concat", Inputs: []string{fmt.Sprintf("past_value.%d", l), v}, Outputs: []string{pv}, Attrs: attrs(intA("axis", 2))})
		// Grouped-query attention without repeating the cache: the G query
		// heads sharing key/value head j are rows of one [G·S, hs] matrix.
		qg := b.node("Reshape", "", nil, q, groupShape)                            // [1, KV, G·S, hs]
		kt := b.node("Transpose", "", attrs(ints("perm", 0, 1, 3, 2)), pk)         // [1, KV, hs, T]
		scores := b.node("Mul", "", nil, b.node("MatMul", "", nil, qg, kt), scale) // [1, KV, G·S, T]
		scores = b.node("Where", "", nil, mask, negInf, scores)
		probs := b.node("Softmax", "", attrs(intA("axis", -1)), scores)
		att := b.node("MatMul", "", nil, probs, pv)                                      // [1, KV, G·S, hs]
		att = b.node("Reshape", "", nil, att, backShape)                                 // [1, H, S, hs]
		return b.node("Reshape", "", nil, b.node("Transpose", "", perm, att), flatShape) // [1, S, QDim]
	}
}

// split splits x [1, S, Σsizes] along its last axis.
func (b *builder) split(x, name string, sizes ...int) []string {
	v := make([]int64, len(sizes))
	outs := make([]string, len(sizes))
	for i, s := range sizes {
		v[i] = int64(s)
		outs[i] = b.name(name)
	}
	b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: outs[0] + "_node", OpType: "Split", Inputs: []string{x, b.i64(name+".sizes", v...)},
		Outputs: outs, Attrs: attrs(intA("axis", -1))})
	return outs
}

// bias adds v (nil: none) along the last axis.
func (b *builder) bias(x, name string, v []float32) string {
	if v == nil {
		return x
	}
	return b.node("Add", "", nil, x, b.f32(name, []int{len(v)}, v))
}

// headNorm is an RMSNorm over each head of x [1, S, heads·HeadSize].
func (b *builder) headNorm(x, name string, gamma []float32, heads int, eps float64) string {
	hs := len(gamma)
	h := b.node("Reshape", "", nil, x, b.i64(name+".heads", 1, -1, int64(heads), int64(hs)))
	h = b.rmsNorm(h, name, gamma, eps)
	return b.node("Reshape", "", nil, h, b.i64(name+".flat", 1, -1, int64(heads*hs)))
}

// geluTanh is GELU's tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x +
// 0.044715·x³))), written as x·sigmoid(x·(a + b·x²)) with a = 2√(2/π)
// and b = 0.044715·a (0.5·(1 + tanh z) = sigmoid(2z)).
func (b *builder) geluTanh(x string) string {
	a := 2 * math.Sqrt(2/math.Pi)
	x2 := b.node("Mul", "", nil, x, x)
	if _, ok := b.g.Initializers["gelu_a"]; !ok {
		b.f32("gelu_a", []int{}, []float32{float32(a)})
		b.f32("gelu_b", []int{}, []float32{float32(0.044715 * a)})
	}
	z := b.node("Mul", "", nil, x, b.node("Add", "", nil, b.node("Mul", "", nil, x2, "gelu_b"), "gelu_a"))
	return b.node("Mul", "", nil, x, b.node("Sigmoid", "", nil, z))
}

// half rounds x to float16 and back (to nearest, ties to even).
func (b *builder) half(x string) string {
	return b.node("Cast", "", attrs(intA("to", int64(graph.Float32))), b.node("Cast", "", attrs(intA("to", int64(graph.Float16))), x))
}

// geluGGML is GELU as llama.cpp's CPU backend computes it (ggml's
// GGML_GELU_FP16, on by default): the input rounded to float16, GELU's
// tanh approximation of that value rounded to float16 (its table of
// every float16), 0 from -10 down and x itself from 10 up. The float16
// roundings are a real part of llama.cpp's Gemma results: with the
// float32 GELU, the 8-bit activations downstream part from llama.cpp's
// by a step in a few values of most rows.
func (b *builder) geluGGML(x string) string {
	g := b.half(b.geluTanh(b.half(x)))
	if _, ok := b.g.Initializers["gelu_lo"]; !ok {
		b.f32("gelu_lo", []int{}, []float32{-10})
		b.f32("gelu_hi", []int{}, []float32{10})
		b.f32("gelu_zero", []int{}, []float32{0})
	}
	g = b.node("Where", "", nil, b.node("LessOrEqual", "", nil, x, "gelu_lo"), "gelu_zero", g)
	return b.node("Where", "", nil, b.node("GreaterOrEqual", "", nil, x, "gelu_hi"), x, g)
}

// softcap is c·tanh(x/c).
func (b *builder) softcap(x, name string, c float64) string {
	t := b.node("Tanh", "", nil, b.node("Mul", "", nil, x, b.f32(name+".inv", []int{}, []float32{float32(1 / c)})))
	return b.node("Mul", "", nil, t, b.f32(name, []int{}, []float32{float32(c)}))
}
