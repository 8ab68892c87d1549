package llama

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// ggufArch is what a GGUF architecture's block is, in the terms of
// llama.cpp's graph for it (src/models/<arch>.cpp): the Block fields that
// follow from the architecture alone, and the tensors and keys it reads.
type ggufArch struct {
	neox        bool // GPT-NeoX rotation (llama.cpp's LLAMA_ROPE_TYPE_NEOX)
	qkNorm      bool // attn_q_norm, attn_k_norm
	postNorms   bool // post_attention_norm, post_ffw_norm
	gelu        bool // GeGLU
	embedScale  bool // embeddings × √dim
	fusedGateUp bool // ffn_up holds the gate's rows, then the up projection's (no ffn_gate)
	// rotary dimension: llama requires the head size; the others take
	// rope.dimension_count as it is
	fullRotary bool
	// ropeFactors: "freqs" (rope_freqs, or LongRoPE's pair with
	// rope.scaling.type longrope), "longrope" (rope_factors_long/short
	// always), "" (none)
	ropeFactors string
	// sliding windows: swaPeriod is the default pattern period (every
	// period-th layer global); swaAlways: windowed even without the
	// sliding_window key (with swaDefault positions)
	swaPeriod  int
	swaAll     bool // every layer windowed when the key is set (Mistral)
	swaAlways  bool
	swaDefault int
	// softcaps: attention and final soft-capping always on with these
	// defaults (gemma2); finalSoftcapKey: final soft-capping only from the
	// key (gemma3)
	attnSoftcap, finalSoftcap float64
	finalSoftcapKey           bool
	// tiedOnly: the classifier is always the embedding table (gemma2)
	tiedOnly bool
	// bigAttnScaleLayers: with this many layers, llama.cpp takes the model
	// for the 27B one and scales scores by 1/√(dim/heads) instead of
	// 1/√head_size (GGUF has no key for query_pre_attn_scalar)
	bigAttnScaleLayers int
}

// ggufArchs are the GGUF architectures built here, by general.architecture.
var ggufArchs = map[string]ggufArch{
	"llama":  {fullRotary: true, ropeFactors: "freqs", swaAll: true},
	"qwen2":  {neox: true},
	"qwen3":  {neox: true, qkNorm: true},
	"phi3":   {neox: true, fusedGateUp: true, ropeFactors: "longrope"},
	"gemma2": {neox: true, postNorms: true, gelu: true, embedScale: true, swaPeriod: 2, swaAlways: true, swaDefault: 4096, attnSoftcap: 50, finalSoftcap: 30, tiedOnly: true, bigAttnScaleLayers: 46},
	"gemma3": {neox: true, qkNorm: true, postNorms: true, gelu: true, embedScale: true, swaPeriod: 6, finalSoftcapKey: true, bigAttnScaleLayers: 62},
}

// Architectures lists the GGUF architectures FromGGUF builds.
func Architectures() []string {
	var a []string
	for k := range ggufArchs {
		a = append(a, k)
	}
	sort.Strings(a)
	return a
}

// ggufMeta reads an architecture's hyper-parameters, naming the key in
// every error.
type ggufMeta struct {
	f    *gguf.File
	arch string
	err  error
}

func (m *ggufMeta) key(k string) string { return m.arch + "." + k }

func (m *ggufMeta) fail(format string, a ...any) {
	if m.err == nil {
		m.err = fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)
	}
}

// uint reads key k (arch-prefixed): def when absent; an error when
// present but not a non-negative integer below 2^31.
func (m *ggufMeta) uint(k string, def int, required bool) int {
	v, present := m.f.Meta[m.key(k)]
	if !present {
		if required {
			m.fail("no %s", m.key(k))
		}
		return def
	}
	switch x := v.(type) {
	case uint64:
		if x <= math.MaxInt32 {
			return int(x)
		}
	case int64:
		if x >= 0 && x <= math.MaxInt32 {
			return int(x)
		}
	case []any, []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64, []float32, []float64, []bool, []string:
		m.fail("%s is an array (%T; per-layer values are not built)", m.key(k), v)
		return def
	}
	m.fail("%s is %v (%T), want an integer in [0, 2^31)", m.key(k), v, v)
	return def
}

// float reads key k: def when absent; an error when not a finite number.
func (m *ggufMeta) float(k string, def float64) float64 {
	v, present := m.f.Meta[m.key(k)]
	if !present {
		return def
	}
	var x float64
	switch t := v.(type) {
	case float64:
		x = t
	case uint64:
		x = float64(t)
	case int64:
		x = float64(t)
	default:
		m.fail("%s is %T, want a number", m.key(k), v)
		return def
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		m.fail("%s is %v, want a finite non-negative number", m.key(k), x)
		return def
	}
	return x
}

// ggufTensors hands out a file's tensors by name, checking each one's
// dims before its data is read, and remembers which were taken, so that
// a tensor the graph would leave out is refused rather than ignored.
type ggufTensors struct {
	f    *gguf.File
	used map[string]bool
	err  error
}

func (t *ggufTensors) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// has reports whether the file has tensor name.
func (t *ggufTensors) has(name string) bool {
	_, ok := t.f.Tensor(name)
	return ok
}

// info returns tensor name checked against want (GGUF order, innermost
// first; why says where want comes from); ok false when it is absent
// (an error too when required) or wrong.
func (t *ggufTensors) info(name string, required bool, why string, want ...int) (*gguf.TensorInfo, bool) {
	if t.err != nil {
		return nil, false
	}
	ti, ok := t.f.Tensor(name)
	if !ok {
		if required {
			t.fail(fmt.Errorf("%w: no tensor %s", ErrFormat, name))
		}
		return nil, false
	}
	t.used[name] = true
	same := len(ti.Dims) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = ti.Dims[i] == uint64(want[i])
	}
	if !same {
		t.fail(fmt.Errorf("%w: tensor %s has dims %v, want %v (%s)", ErrFormat, name, ti.Dims, want, why))
		return nil, false
	}
	return ti, true
}

// vec reads a 1-D tensor of n values (nil when absent and not required).
func (t *ggufTensors) vec(name string, required bool, why string, n int) []float32 {
	ti, ok := t.info(name, required, why, n)
	if !ok {
		return nil
	}
	v, err := t.f.Float32s(ti)
	if err != nil {
		t.fail(fmt.Errorf("%w: %s: %v", ErrFormat, name, err))
		return nil
	}
	return v
}

// mat reads a matrix of rows × cols (nil when absent and not required).
func (t *ggufTensors) mat(name string, required bool, why string, rows, cols int) *Matrix {
	if _, ok := t.info(name, required, why, cols, rows); !ok {
		return nil
	}
	m, err := ggufMatrix(t.f, name)
	if err != nil {
		t.fail(err)
		return nil
	}
	return &m
}

// unused names the tensors nothing took.
func (t *ggufTensors) unused() []string {
	var names []string
	for _, ti := range t.f.Tensors {
		if !t.used[ti.Name] {
			names = append(names, ti.Name)
		}
	}
	return names
}

// FromGGUF collects the weights of a GGUF decoder: architecture llama
// (Llama 2 and 3.x, SmolLM2, Mistral), qwen2, qwen3, phi3, gemma2 or
// gemma3, read as llama.cpp reads them (its keys, their defaults, its
// tensor names). Any other architecture is refused by name before
// anything is read; metadata that contradicts itself or the tensors
// (head counts that do not divide, dims that disagree, a tensor the graph
// would not use) is refused naming the key or tensor, before the tensor
// data is read. Matrices of every type stay in the file's own bytes
// (ggml's layout: F32, F16, BF16 values or quantized blocks), slices of
// its mapping; 1-D tensors (norms, biases) become float32 slices.
func FromGGUF(f *gguf.File) (*Weights, error) {
	name, _ := f.String("general.architecture")
	a, ok := ggufArchs[name]
	if !ok {
		return nil, fmt.Errorf("%w: GGUF architecture %q is not built (built: %s)", ErrUnsupported, name, strings.Join(Architectures(), ", "))
	}
	m := &ggufMeta{f: f, arch: name}
	c := Config{
		Dim: m.uint("embedding_length", 0, true), Hidden: m.uint("feed_forward_length", 0, true),
		Layers: m.uint("block_count", 0, true), Heads: m.uint("attention.head_count", 0, true),
		ContextLength: m.uint("context_length", 0, true),
	}
	c.KVHeads = m.uint("attention.head_count_kv", c.Heads, false)
	c.RMSEps = m.float("attention.layer_norm_rms_epsilon", 0)
	c.RopeTheta = m.float("rope.freq_base", 10000)
	if m.err != nil {
		return nil, m.err
	}
	switch {
	case c.Dim == 0 || c.Hidden == 0 || c.Layers == 0 || c.Heads == 0 || c.KVHeads == 0 || c.ContextLength == 0:
		return nil, fmt.Errorf("%w: %s, %s, %s, %s, %s and %s must be positive (%d, %d, %d, %d, %d, %d)", ErrFormat,
			m.key("embedding_length"), m.key("feed_forward_length"), m.key("block_count"), m.key("attention.head_count"),
			m.key("attention.head_count_kv"), m.key("context_length"), c.Dim, c.Hidden, c.Layers, c.Heads, c.KVHeads, c.ContextLength)
	case c.Layers > 4096 || c.Heads > 4096:
		return nil, fmt.Errorf("%w: %s %d or %s %d out of range", ErrFormat, m.key("block_count"), c.Layers, m.key("attention.head_count"), c.Heads)
	case c.Heads%c.KVHeads != 0:
		return nil, fmt.Errorf("%w: %s %d is not a multiple of %s %d", ErrFormat, m.key("attention.head_count"), c.Heads, m.key("attention.head_count_kv"), c.KVHeads)
	}
	c.HeadSize = m.uint("attention.key_length", 0, false)
	if c.HeadSize == 0 {
		if c.Dim%c.Heads != 0 {
			return nil, fmt.Errorf("%w: %s %d is not a multiple of %s %d (and no %s)", ErrFormat, m.key("embedding_length"), c.Dim, m.key("attention.head_count"), c.Heads, m.key("attention.key_length"))
		}
		c.HeadSize = c.Dim / c.Heads
	}
	if v := m.uint("attention.value_length", c.HeadSize, false); v != c.HeadSize {
		return nil, fmt.Errorf("%w: %s %d differs from the key length %d (not built)", ErrUnsupported, m.key("attention.value_length"), v, c.HeadSize)
	}
	b := &c.Block
	b.Arch, b.NeoxRope, b.QKNorm, b.PostNorms, b.GELU = name, a.neox, a.qkNorm, a.postNorms, a.gelu
	b.RotaryDim = m.uint("rope.dimension_count", c.HeadSize, false)
	if b.RotaryDim > c.HeadSize || b.RotaryDim%2 != 0 || b.RotaryDim == 0 {
		return nil, fmt.Errorf("%w: %s %d: zero, odd or wider than the head size %d", ErrFormat, m.key("rope.dimension_count"), b.RotaryDim, c.HeadSize)
	}
	if a.fullRotary && b.RotaryDim != c.HeadSize {
		return nil, fmt.Errorf("%w: %s %d is not the head size %d (%s rotates whole heads)", ErrFormat, m.key("rope.dimension_count"), b.RotaryDim, c.HeadSize, name)
	}
	if a.embedScale {
		b.EmbedScale = float64(float32(math.Sqrt(float64(c.Dim))))
	}
	// rotary scaling: llama.cpp's "linear" default, a factor from
	// rope.scaling.factor (or the older rope.scale_linear)
	scaling, _ := f.String(m.key("rope.scaling.type"))
	switch scaling {
	case "", "linear", "none", "longrope":
	default:
		return nil, fmt.Errorf("%w: %s %q (built: none, linear, longrope)", ErrUnsupported, m.key("rope.scaling.type"), scaling)
	}
	factor := m.float("rope.scaling.factor", 0)
	if factor == 0 {
		factor = m.float("rope.scale_linear", 0)
	}
	if factor != 0 && scaling != "none" {
		b.RopeFreqScale = 1 / factor
	}
	b.RopeAttnFactor = m.float("rope.scaling.attn_factor", 1)
	b.RopeOrigContext = m.uint("rope.scaling.original_context_length", c.ContextLength, false)
	// sliding windows
	window := m.uint("attention.sliding_window", 0, false)
	if a.swaAlways && window == 0 {
		window = a.swaDefault
	}
	if window > 0 && a.swaAll {
		// Mistral 7B v0.1's window on every layer. llama.cpp's llama graph
		// has no sliding window and ignores the key (its converter does not
		// write it for Mistral): built here where a file states it.
		b.SlidingWindow = window
	}
	if window > 0 && a.swaPeriod > 0 {
		b.SlidingWindow = window
		b.RopeThetaLocal = m.float("rope.freq_base_swa", 10000)
		if a.swaAlways { // gemma2: the local layers' base and scaling are the global ones unless given
			b.RopeThetaLocal = m.float("rope.freq_base_swa", c.RopeTheta)
			b.RopeFreqScaleLocal = b.RopeFreqScale
		}
		local, err := swaPattern(m, a.swaPeriod, c.Layers)
		if err != nil {
			return nil, err
		}
		b.Local = local
	}
	// qwen2 and qwen3 have no sliding window in llama.cpp, and phi3's is
	// switched off there: the key is ignored on those as llama.cpp does
	if a.attnSoftcap > 0 {
		b.AttnSoftcap = m.float("attn_logit_softcapping", a.attnSoftcap)
	}
	if a.finalSoftcap > 0 || a.finalSoftcapKey {
		b.FinalSoftcap = m.float("final_logit_softcapping", a.finalSoftcap)
	}
	if a.bigAttnScaleLayers > 0 && c.Layers == a.bigAttnScaleLayers {
		b.AttnScale = 1 / math.Sqrt(float64(c.Dim/c.Heads))
	}
	if m.err != nil {
		return nil, m.err
	}

	t := &ggufTensors{f: f, used: map[string]bool{}}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 || emb.Dims[1] == 0 || emb.Dims[1] > 1<<22 {
		return nil, fmt.Errorf("%w: no 2-D token_embd.weight with a vocabulary of at most 2^22 rows", ErrFormat)
	}
	c.Vocab = int(emb.Dims[1])
	if v := m.uint("vocab_size", c.Vocab, false); v != c.Vocab {
		return nil, fmt.Errorf("%w: %s %d, token_embd.weight has %d rows", ErrFormat, m.key("vocab_size"), v, c.Vocab)
	}
	if m.err != nil {
		return nil, m.err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	// every tensor's dims are checked before any data is read
	if err := t.walk(&c, &a, false, nil); err != nil {
		return nil, err
	}
	if u := t.unused(); len(u) > 0 {
		if len(u) > 5 {
			u = append(u[:5], fmt.Sprintf("and %d more", len(u)-5))
		}
		return nil, fmt.Errorf("%w: tensors the %s graph does not use: %s", ErrUnsupported, name, strings.Join(u, ", "))
	}
	t.used = map[string]bool{}
	w := &Weights{Config: c}
	if err := t.walk(&w.Config, &a, true, w); err != nil {
		return nil, err
	}
	return w, w.Check()
}

// swaPattern is which layers are local: sliding_window_pattern as a
// period n (layer l local unless l%n == n-1, llama.cpp's
// set_swa_pattern) or as one bool per layer (true: local).
func swaPattern(m *ggufMeta, period, layers int) ([]bool, error) {
	local := make([]bool, layers)
	k := m.key("attention.sliding_window_pattern")
	if _, isArray := m.f.Meta[k].([]bool); isArray {
		arr, _ := m.f.Bools(k)
		if len(arr) != layers {
			return nil, fmt.Errorf("%w: %s has %d values for %d layers", ErrFormat, k, len(arr), layers)
		}
		copy(local, arr)
		return local, nil
	}
	switch m.f.Meta[k].(type) {
	case []uint8, []int8, []uint16, []int16, []uint32, []int32, []uint64, []int64, []float32, []float64, []string, []any:
		return nil, fmt.Errorf("%w: %s is %T, want bool per layer or a period", ErrFormat, k, m.f.Meta[k])
	}
	period = m.uint("attention.sliding_window_pattern", period, false)
	if m.err != nil {
		return nil, m.err
	}
	for l := range local {
		local[l] = period == 0 || l%period < period-1
	}
	return local, nil
}

// walk checks (read false) or reads (read true, into w) every tensor of
// the architecture, the same calls both times.
func (t *ggufTensors) walk(c *Config, a *ggufArch, read bool, w *Weights) error {
	D, V, H := c.Dim, c.Vocab, c.Hidden
	q, kv := c.QDim(), c.KVDim()
	b := &c.Block
	arch := b.name()
	key := func(k string) string { return arch + "." + k }
	vec := func(name string, required bool, why string, n int) []float32 {
		if !read {
			t.info(name, required, why, n)
			return nil
		}
		return t.vec(name, required, why, n)
	}
	mat := func(name string, required bool, why string, rows, cols int) *Matrix {
		if !read {
			if _, ok := t.info(name, required, why, cols, rows); ok {
				return &Matrix{}
			}
			return nil
		}
		return t.mat(name, required, why, rows, cols)
	}
	dims := key("embedding_length")
	embed := mat("token_embd.weight", true, "["+dims+", vocabulary]", V, D)
	norm := vec("output_norm.weight", true, dims, D)
	var out *Matrix
	if !a.tiedOnly {
		out = mat("output.weight", false, "["+dims+", vocabulary]", V, D)
	}
	pairs := b.RotaryDim / 2
	rot := key("rope.dimension_count") + " / 2"
	var factors, long, short []float32
	switch {
	case a.ropeFactors == "longrope" || a.ropeFactors == "freqs" && t.has("rope_factors_long.weight"):
		long = vec("rope_factors_long.weight", false, rot, pairs)
		short = vec("rope_factors_short.weight", false, rot, pairs)
	case a.ropeFactors == "freqs":
		factors = vec("rope_freqs.weight", false, rot, pairs)
	}
	layers := make([]Layer, c.Layers)
	for l := range layers {
		L := &layers[l]
		p := fmt.Sprintf("blk.%d.", l)
		L.AttnNorm = vec(p+"attn_norm.weight", true, dims, D)
		qkvWhy := fmt.Sprintf("[%s, head_count × key_length + 2 × head_count_kv × key_length]", dims)
		if t.has(p + "attn_qkv.weight") {
			L.QKV = mat(p+"attn_qkv.weight", true, qkvWhy, q+2*kv, D)
			if bias := vec(p+"attn_qkv.bias", false, qkvWhy, q+2*kv); bias != nil {
				L.QBias, L.KBias, L.VBias = bias[:q], bias[q:q+kv], bias[q+kv:]
			}
		} else {
			qWhy := fmt.Sprintf("[%s, %s × head size %d]", dims, key("attention.head_count"), c.HeadSize)
			kvWhy := fmt.Sprintf("[%s, %s × head size %d]", dims, key("attention.head_count_kv"), c.HeadSize)
			if m := mat(p+"attn_q.weight", true, qWhy, q, D); m != nil {
				L.Q = *m
			}
			if m := mat(p+"attn_k.weight", true, kvWhy, kv, D); m != nil {
				L.K = *m
			}
			if m := mat(p+"attn_v.weight", true, kvWhy, kv, D); m != nil {
				L.V = *m
			}
			L.QBias = vec(p+"attn_q.bias", false, qWhy, q)
			L.KBias = vec(p+"attn_k.bias", false, kvWhy, kv)
			L.VBias = vec(p+"attn_v.bias", false, kvWhy, kv)
		}
		if b.QKNorm {
			L.QNorm = vec(p+"attn_q_norm.weight", true, "head size", c.HeadSize)
			L.KNorm = vec(p+"attn_k_norm.weight", true, "head size", c.HeadSize)
		}
		if m := mat(p+"attn_output.weight", true, fmt.Sprintf("[head_count × head size, %s]", dims), D, q); m != nil {
			L.O = *m
		}
		if b.PostNorms {
			L.PostAttnNorm = vec(p+"post_attention_norm.weight", true, dims, D)
		}
		L.FFNNorm = vec(p+"ffn_norm.weight", true, dims, D)
		ffn := key("feed_forward_length")
		if a.fusedGateUp {
			L.GateUp = mat(p+"ffn_up.weight", true, fmt.Sprintf("[%s, 2 × %s]", dims, ffn), 2*H, D)
		} else {
			if m := mat(p+"ffn_gate.weight", true, fmt.Sprintf("[%s, %s]", dims, ffn), H, D); m != nil {
				L.Gate = *m
			}
			if m := mat(p+"ffn_up.weight", true, fmt.Sprintf("[%s, %s]", dims, ffn), H, D); m != nil {
				L.Up = *m
			}
		}
		if m := mat(p+"ffn_down.weight", true, fmt.Sprintf("[%s, %s]", ffn, dims), D, H); m != nil {
			L.Down = *m
		}
		if b.PostNorms {
			L.PostFFNNorm = vec(p+"post_ffw_norm.weight", true, dims, D)
		}
		if t.err != nil {
			return t.err
		}
	}
	if t.err != nil || !read {
		return t.err
	}
	w.Config.SharedEmbedding = out == nil
	w.Embed, w.Norm, w.Output, w.Layers = *embed, norm, out, layers
	switch {
	case long != nil || short != nil:
		if long == nil || short == nil {
			return fmt.Errorf("%w: LongRoPE needs both rope_factors_long.weight and rope_factors_short.weight", ErrFormat)
		}
		b.RopeFactors, b.LongRopeLong = short, long
	case factors != nil:
		b.RopeFactors = factors
	}
	return nil
}
