// Package llama builds Llama-family decoders (RMSNorm, rotary position
// embedding, grouped-query attention, gated feed-forward) as Switchyard
// graphs from their weights, and reads those weights from GGUF files and
// llama2.c checkpoints (the float32 .bin and the version-2 int8 "Q8_0"
// export). It registers both as model formats with formats, so a .gguf
// or llama2.c .bin opens like an .onnx file and is placed on backends
// like any other graph.
//
// The GGUF architectures built are llama (Llama 2, Llama 3.x with its
// rope_freqs factors, SmolLM2, Mistral), qwen2 (q/k/v biases), qwen3
// (per-head q/k RMSNorm), phi3 (fused qkv and gate/up, partial rotation,
// LongRoPE factors, attn_factor) and gemma2/gemma3 (embedding scale,
// GeGLU, post-norms, q/k norms, interleaved sliding-window and global
// layers with their own rotary bases, soft-capping), read as llama.cpp
// reads them. They differ only in a Block description that one graph
// builder follows; any other architecture is refused by name.
//
// The graph has the interface of an ONNX decoder with a KV cache, which
// package llm drives: input_ids int64 [1, seq] and, for every layer N,
// past_key.N and past_value.N float32 caches in, logits float32 [1, seq,
// vocab] and present_key.N / present_value.N out. Build's form
// (SharedCache) takes caches as buffers of the whole context [1,
// kv_heads, context, head_size] with an int32 past_sequence_length [1]
// input saying how many positions they hold; its present outputs are
// those buffers with the new positions written after them, so a caller
// that binds each present output to its past tensor (RunInto) has the
// cache updated in place, one row per token. BuildWith(w, ConcatCache)
// gives the ONNX exporters' form instead: past [1, kv_heads, past,
// head_size] (past may be 0), present [1, kv_heads, past+seq,
// head_size]. It uses standard ONNX ops (opset 17),
// SimplifiedLayerNormalization, com.microsoft GroupQueryAttention
// (SharedCache) or RotaryEmbedding (ConcatCache) rotating interleaved
// pairs as llama2.c and llama.cpp's llama do (halves for GPT-NeoX-style
// architectures), and, for quantized weights, the
// switchyard.blockquant BlockQuantMatMul op, which keeps each weight
// matrix quantized (int8 or 4-bit with per-block scales) in the graph.
package llama

import (
	"errors"
	"fmt"
	"github.com/switchyard-hal/switchyard/core/ggml"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// ErrFormat marks a checkpoint that is not a well-formed Llama model.
var ErrFormat = errors.New("llama: malformed model")

// ErrUnsupported marks a well-formed model this package does not build
// (another architecture, a feature of one it builds); it wraps
// graph.ErrUnsupported.
var ErrUnsupported = fmt.Errorf("llama: %w", graph.ErrUnsupported)

// Config is the model's hyper-parameters.
type Config struct {
	Dim, Hidden     int // model width and feed-forward width
	Layers          int
	Heads, KVHeads  int // query heads and key/value heads (grouped-query attention)
	Vocab           int
	ContextLength   int     // the longest sequence (positions the rotary table covers)
	RMSEps          float64 // RMSNorm epsilon (llama2.c: 1e-5)
	RopeTheta       float64 // rotary base (10000)
	HeadSize        int     // width of one head (0: Dim / Heads)
	SharedEmbedding bool    // the classifier is the embedding table
	// KVCache is the element type of the SharedCache graph's key/value
	// buffers: a choice of the build, not the file's ("" is f32; the
	// GGUF loader defaults to f16, as llama.cpp does).
	KVCache KVType
	// RoundActivations rounds the activations of each product with an
	// F16 or BF16 matrix of the file to that type first (Matrix.VecDot),
	// as llama.cpp's CPU backend does: a build choice (the loader sets it
	// when the engine allows reduced precision), not the file's. The
	// gated SiLU of the feed-forward layers is then llama.cpp's too
	// (blockquant.SwiGLUOpType: ggml's exponential, its order).
	RoundActivations bool
	// Block says how the architecture's transformer block differs from
	// Llama's; its zero value is Llama's block.
	Block Block
}

// Block describes the parts of a decoder block that differ between the
// architectures built here (the zero value is Llama 2's: interleaved
// rotary pairs over the whole head, SwiGLU, RMSNorm before attention and
// feed-forward, no biases). The graph builder reads only this
// description: there is no per-architecture builder.
type Block struct {
	Arch string // the architecture's name, for messages and metadata ("llama" when empty)
	// NeoxRope rotates pairs (i, i+RotaryDim/2) of each head, as GPT-NeoX
	// does, instead of interleaved pairs (2i, 2i+1).
	NeoxRope bool
	// RotaryDim is how many leading dims of each head are rotated (0: all).
	RotaryDim int
	// RopeFactors divide the rotary frequencies pair by pair (Llama 3's
	// rope_freqs); with LongRopeLong set, RopeFactors are LongRoPE's short
	// factors, used while the context stays within RopeOrigContext, and
	// LongRopeLong the long ones used beyond it (as llama.cpp chooses).
	RopeFactors, LongRopeLong []float32
	RopeOrigContext           int
	// RopeFreqScale multiplies the frequencies (linear RoPE scaling: 1 /
	// the scaling factor; 0 means 1); RopeAttnFactor multiplies cos and
	// sin (0 means 1).
	RopeFreqScale, RopeAttnFactor float64
	// QKNorm: an RMSNorm over each head of the queries and keys, before
	// the rotation (Qwen 3, Gemma 3).
	QKNorm bool
	// PostNorms: RMSNorms of the attention and feed-forward outputs before
	// they are added to the residual stream (Gemma 2 and 3).
	PostNorms bool
	// GELU: the feed-forward gate is GELU (tanh approximation) instead of
	// SiLU (GeGLU, Gemma).
	GELU bool
	// EmbedScale multiplies the token embeddings (Gemma: √Dim; 0 means 1).
	EmbedScale float64
	// AttnScale scales q·k (0: 1/√HeadSize).
	AttnScale float64
	// AttnSoftcap and FinalSoftcap cap attention scores and the logits:
	// c·tanh(x/c) (0: none; Gemma 2).
	AttnSoftcap, FinalSoftcap float64
	// SlidingWindow is how many positions a query of a local layer sees,
	// itself included (0: none); Local marks those layers (nil with a
	// window: every layer). RopeThetaLocal is their rotary base (0: RopeTheta).
	SlidingWindow  int
	Local          []bool
	RopeThetaLocal float64
	// RopeFreqScaleLocal is the local layers' linear scaling (0 means 1:
	// Gemma 3 scales its global layers only; Gemma 2 both).
	RopeFreqScaleLocal float64
}

func (c *Config) check() error {
	if c.Dim <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.Vocab <= 0 || c.ContextLength <= 0 || c.HeadSize < 0 {
		return fmt.Errorf("%w: every size must be positive: %+v", ErrFormat, *c)
	}
	const big = 1 << 20
	if c.Dim > big || c.Hidden > big || c.Layers > 4096 || c.Heads > 4096 || c.Vocab > 1<<22 || c.ContextLength > 1<<22 || c.HeadSize > 1<<16 {
		return fmt.Errorf("%w: sizes out of range: %+v", ErrFormat, *c)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%w: %d heads are not a multiple of %d key/value heads", ErrFormat, c.Heads, c.KVHeads)
	}
	if c.HeadSize == 0 {
		if c.Dim%c.Heads != 0 {
			return fmt.Errorf("%w: dim %d is not a multiple of %d heads", ErrFormat, c.Dim, c.Heads)
		}
		c.HeadSize = c.Dim / c.Heads
	}
	if c.Heads*c.HeadSize > big {
		return fmt.Errorf("%w: %d heads of %d: too wide", ErrFormat, c.Heads, c.HeadSize)
	}
	b := &c.Block
	if b.RotaryDim == 0 {
		b.RotaryDim = c.HeadSize
	}
	if b.RotaryDim%2 != 0 || b.RotaryDim > c.HeadSize || b.RotaryDim < 0 {
		return fmt.Errorf("%w: rotary dimension %d: odd, negative or wider than the head (%d)", ErrFormat, b.RotaryDim, c.HeadSize)
	}
	for _, f := range [][]float32{b.RopeFactors, b.LongRopeLong} {
		if f != nil && len(f) != b.RotaryDim/2 {
			return fmt.Errorf("%w: %d rotary frequency factors for %d rotary pairs", ErrFormat, len(f), b.RotaryDim/2)
		}
		for _, v := range f {
			if !(v > 0) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%w: rotary frequency factor %v (must be positive and finite)", ErrFormat, v)
			}
		}
	}
	if b.Local != nil && len(b.Local) != c.Layers {
		return fmt.Errorf("%w: %d sliding-window layer flags for %d layers", ErrFormat, len(b.Local), c.Layers)
	}
	for _, v := range []float64{b.RopeFreqScale, b.RopeAttnFactor, b.EmbedScale, b.AttnScale, b.AttnSoftcap, b.FinalSoftcap, b.RopeThetaLocal, b.RopeFreqScaleLocal} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: block parameter %v (must be finite and not negative)", ErrFormat, v)
		}
	}
	if b.SlidingWindow < 0 {
		return fmt.Errorf("%w: sliding window %d", ErrFormat, b.SlidingWindow)
	}
	if c.RMSEps <= 0 {
		c.RMSEps = 1e-5
	}
	if c.RopeTheta <= 0 {
		c.RopeTheta = 10000
	}
	return nil
}

// checkTables refuses a context whose rotary tables would be too large
// (checked when the graph is built: the context may be capped first).
func (c *Config) checkTables() error {
	if c.ContextLength*c.Block.RotaryDim > 1<<24 {
		return fmt.Errorf("%w: context %d × rotary dimension %d: rotary tables too large (cap the context)", ErrUnsupported, c.ContextLength, c.Block.RotaryDim)
	}
	return nil
}

// local reports whether layer l attends through the sliding window.
func (c *Config) local(l int) bool {
	return c.Block.SlidingWindow > 0 && (c.Block.Local == nil || c.Block.Local[l])
}

// QDim is the width of the queries of one position (Heads × HeadSize).
func (c *Config) QDim() int { return c.Heads * c.HeadSize }

// KVDim is the width of the keys and values of one position.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadSize }

// Matrix is a weight matrix [Rows, Cols] in row-major nn.Linear layout
// (Rows output features, Cols input features), either float32 (F32) or
// quantized: Bits 8 (Q8 int8 values) or 4 (Q4 packed nibbles, stored
// q+8, element i in byte i/2, the low nibble for even i), with one scale
// per Block consecutive elements of the row-major matrix; or, when Raw is
// set, in ggml's own layout of type GGML (Q4_1, Q5_0, Q5_1, Q2_K … Q6_K:
// core/ggml's blocks; F16 and BF16: 16-bit values; F32: the file's
// little-endian float32s, row-major), Rows rows as the GGUF file stores
// them (a slice of the file's mapping, never copied).
type Matrix struct {
	Rows, Cols int
	F32        []float32
	Bits       int
	Block      int
	Q8         []int8
	Q4         []uint8
	Scales     []float32
	GGML       ggml.Type
	Raw        []byte
	// VecDot is the dtype llama.cpp rounds the activations to for its
	// products with this matrix (ggml's vec_dot_type): Float16 and
	// BFloat16 for a file's F16 and BF16 matrices, else Undefined (the
	// activations stay float32, or quantized blocks for ggml types).
	VecDot graph.DType
}

// Quantized reports whether the matrix is kept quantized (an F16 or BF16
// matrix kept as the file's 16-bit values in Raw is not).
func (m *Matrix) Quantized() bool { return m.Bits != 0 || m.Raw != nil && m.GGML.Quantized() }

// Typed reports whether the matrix is kept in the file's own encoding
// (Raw, of ggml type GGML: block-quantized, F16 or BF16), read in place.
func (m *Matrix) Typed() bool { return m.Raw != nil }

// Bytes is the memory the matrix's values and scales take.
func (m *Matrix) Bytes() int {
	return 4*len(m.F32) + len(m.Q8) + len(m.Q4) + 4*len(m.Scales) + len(m.Raw)
}

func (m *Matrix) check(name string, rows, cols int) error {
	if m.Rows != rows || m.Cols != cols {
		return fmt.Errorf("%w: %s is [%d %d], want [%d %d]", ErrFormat, name, m.Rows, m.Cols, rows, cols)
	}
	n := rows * cols
	if m.Raw != nil {
		rb, err := m.GGML.RowBytes(cols)
		if err != nil || !(m.GGML.Quantized() || m.GGML == ggml.F32 || m.GGML == ggml.F16 || m.GGML == ggml.BF16) || len(m.Raw) != rows*rb {
			return fmt.Errorf("%w: %s: %d bytes of %s for [%d %d]", ErrFormat, name, len(m.Raw), m.GGML, rows, cols)
		}
		return nil
	}
	switch m.Bits {
	case 0:
		if len(m.F32) != n {
			return fmt.Errorf("%w: %s has %d values, want %d", ErrFormat, name, len(m.F32), n)
		}
	case 8, 4:
		if m.Block <= 0 || n%m.Block != 0 || len(m.Scales) != n/m.Block {
			return fmt.Errorf("%w: %s: %d scales for %d values in blocks of %d", ErrFormat, name, len(m.Scales), n, m.Block)
		}
		if m.Bits == 8 && len(m.Q8) != n || m.Bits == 4 && 2*len(m.Q4) != n {
			return fmt.Errorf("%w: %s: wrong quantized value count", ErrFormat, name)
		}
	default:
		return fmt.Errorf("%w: %s: %d-bit weights", ErrFormat, name, m.Bits)
	}
	return nil
}

// Float32s returns the matrix's values (dequantised: scale·q).
func (m *Matrix) Float32s() []float32 {
	out := make([]float32, m.Rows*m.Cols)
	if m.Raw != nil {
		if err := ggml.Dequantize(m.GGML, m.Raw, out); err != nil {
			panic(err) // check accepted the matrix
		}
		return out
	}
	if m.Bits == 0 {
		return m.F32
	}
	for i := range out {
		var q int
		if m.Bits == 8 {
			q = int(m.Q8[i])
		} else {
			q = int(m.Q4[i>>1]>>(4*(i&1))&15) - 8
		}
		out[i] = float32(float64(m.Scales[i/m.Block]) * float64(q))
	}
	return out
}

// Layer is one transformer block's weights. Q, K, V are separate, or
// QKV holds them fused (rows: the queries', then the keys', then the
// values'); Gate and Up likewise, or GateUp (the gate's rows first). The
// optional parts are nil where the architecture has none.
type Layer struct {
	AttnNorm, FFNNorm []float32 // [Dim]
	Q, K, V, O        Matrix    // [QDim, Dim], [KVDim, Dim], [KVDim, Dim], [Dim, QDim]
	Gate, Up, Down    Matrix    // w1 [Hidden, Dim], w3 [Hidden, Dim], w2 [Dim, Hidden]
	QKV               *Matrix   // fused [QDim + 2·KVDim, Dim] instead of Q, K, V
	GateUp            *Matrix   // fused [2·Hidden, Dim] instead of Gate, Up

	QBias, KBias, VBias       []float32 // [QDim], [KVDim], [KVDim]
	QNorm, KNorm              []float32 // [HeadSize] (Block.QKNorm)
	PostAttnNorm, PostFFNNorm []float32 // [Dim] (Block.PostNorms)
}

// Weights is a whole model.
type Weights struct {
	Config Config
	Embed  Matrix // [Vocab, Dim]
	Layers []Layer
	Norm   []float32 // [Dim]
	Output *Matrix   // [Vocab, Dim]; nil: the classifier is Embed
}

// Check validates every shape against the config.
func (w *Weights) Check() error {
	c := &w.Config
	if err := c.check(); err != nil {
		return err
	}
	if len(w.Layers) != c.Layers {
		return fmt.Errorf("%w: %d layers, the config says %d", ErrFormat, len(w.Layers), c.Layers)
	}
	if err := w.Embed.check("embedding", c.Vocab, c.Dim); err != nil {
		return err
	}
	if len(w.Norm) != c.Dim {
		return fmt.Errorf("%w: final norm has %d values, want %d", ErrFormat, len(w.Norm), c.Dim)
	}
	if w.Output != nil {
		if err := w.Output.check("classifier", c.Vocab, c.Dim); err != nil {
			return err
		}
	}
	kv, q := c.KVDim(), c.QDim()
	for i := range w.Layers {
		l := &w.Layers[i]
		vecs := []struct {
			name string
			v    []float32
			n    int
			want bool // must be present (else: must be absent or of n values)
		}{{"attention norm", l.AttnNorm, c.Dim, true}, {"ffn norm", l.FFNNorm, c.Dim, true},
			{"q bias", l.QBias, q, false}, {"k bias", l.KBias, kv, false}, {"v bias", l.VBias, kv, false},
			{"q norm", l.QNorm, c.HeadSize, c.Block.QKNorm}, {"k norm", l.KNorm, c.HeadSize, c.Block.QKNorm},
			{"post-attention norm", l.PostAttnNorm, c.Dim, c.Block.PostNorms}, {"post-ffn norm", l.PostFFNNorm, c.Dim, c.Block.PostNorms}}
		for _, v := range vecs {
			if (v.want || v.v != nil) && len(v.v) != v.n {
				return fmt.Errorf("%w: layer %d %s has %d values, want %d", ErrFormat, i, v.name, len(v.v), v.n)
			}
		}
		if !c.Block.QKNorm && (l.QNorm != nil || l.KNorm != nil) || !c.Block.PostNorms && (l.PostAttnNorm != nil || l.PostFFNNorm != nil) {
			return fmt.Errorf("%w: layer %d has norms its block (%s) does not use", ErrFormat, i, c.Block.name())
		}
		type mat struct {
			name       string
			m          *Matrix
			rows, cols int
		}
		ms := []mat{{"wo", &l.O, c.Dim, q}, {"w2", &l.Down, c.Dim, c.Hidden}}
		if l.QKV != nil {
			ms = append(ms, mat{"wqkv", l.QKV, q + 2*kv, c.Dim})
		} else {
			ms = append(ms, mat{"wq", &l.Q, q, c.Dim}, mat{"wk", &l.K, kv, c.Dim}, mat{"wv", &l.V, kv, c.Dim})
		}
		if l.GateUp != nil {
			ms = append(ms, mat{"w13", l.GateUp, 2 * c.Hidden, c.Dim})
		} else {
			ms = append(ms, mat{"w1", &l.Gate, c.Hidden, c.Dim}, mat{"w3", &l.Up, c.Hidden, c.Dim})
		}
		for _, m := range ms {
			if err := m.m.check(fmt.Sprintf("layer %d %s", i, m.name), m.rows, m.cols); err != nil {
				return err
			}
		}
	}
	return nil
}

// name is the block's architecture name.
func (b *Block) name() string {
	if b.Arch == "" {
		return "llama"
	}
	return b.Arch
}

// WeightBytes is the memory the weights take as the graph holds them:
// every matrix as stored (quantized ones quantized), the classifier (the
// embedding's transpose or quantized copy when shared) and the embedding
// table the token lookup gathers from (float32, or the file's blocks when
// the table is in ggml's block layout: BlockQuantGather reads those, the
// same bytes as a shared classifier's).
func (w *Weights) WeightBytes() int {
	n := 4*w.Config.Vocab*w.Config.Dim + 4*len(w.Norm) // the float32 table Gather reads
	if w.Embed.Raw != nil {
		n = 4 * len(w.Norm)
		if w.Output != nil {
			n += len(w.Embed.Raw) // else counted once, as the classifier
		}
	}
	cls := w.Output
	if cls == nil {
		cls = &w.Embed
	}
	n += cls.Bytes()
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, v := range [][]float32{l.AttnNorm, l.FFNNorm, l.QBias, l.KBias, l.VBias, l.QNorm, l.KNorm, l.PostAttnNorm, l.PostFFNNorm} {
			n += 4 * len(v)
		}
		for _, m := range []*Matrix{&l.Q, &l.K, &l.V, &l.O, &l.Gate, &l.Up, &l.Down, l.QKV, l.GateUp} {
			if m != nil {
				n += m.Bytes()
			}
		}
	}
	return n
}

// quantized reports whether any matrix of w is kept quantized.
func (w *Weights) quantized() bool {
	if w.Embed.Quantized() || (w.Output != nil && w.Output.Quantized()) {
		return true
	}
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, m := range []*Matrix{&l.Q, &l.K, &l.V, &l.O, &l.Gate, &l.Up, &l.Down, l.QKV, l.GateUp} {
			if m != nil && m.Quantized() {
				return true
			}
		}
	}
	return false
}

// ropeTables returns cos and sin [ContextLength, RotaryDim/2] for rotary
// base theta: pair i of position p turns by p·theta^(-2i/RotaryDim),
// divided by its frequency factor (Llama 3, LongRoPE: the long factors
// when the context passes the original one) and multiplied by
// RopeFreqScale (linear scaling), and cos and sin are multiplied by
// RopeAttnFactor. local selects the sliding-window layers' scaling
// (RopeFreqScaleLocal, no frequency factors). Every step is float32 and
// in ggml's order (ggml_rope_cache_init): the angle of pair i is p
// multiplied i times by theta_scale = theta^(-2/RotaryDim), each product
// rounded, then divided by the factor and multiplied by the scale;
// cos and sin of the float32 angle as the C library's cosf and sinf
// give them to llama.cpp (ggml.Cosf, ggml.Sinf: glibc's, not correctly
// rounded), times the attention factor. The same tables to the last bit
// as llama.cpp's, so the rotated queries and keys are too (a rounding
// apart shifts Q8_0 activations downstream by a step: with correctly
// rounded cos and sin, one table entry in ~90 differed by a unit, and
// the Qwen2.5-0.5B-shape Q8_0 model's logits parted from llama.cpp's at
// position 60 of 64).
func ropeTables(c *Config, theta float64, local bool) (cos, sin []float32) {
	b := &c.Block
	half := b.RotaryDim / 2
	cos, sin = make([]float32, c.ContextLength*half), make([]float32, c.ContextLength*half)
	factors := b.RopeFactors
	if b.LongRopeLong != nil && c.ContextLength > b.RopeOrigContext {
		factors = b.LongRopeLong
	}
	scale, attn := float32(b.RopeFreqScale), float32(b.RopeAttnFactor)
	if local {
		scale = float32(b.RopeFreqScaleLocal)
	}
	if scale == 0 {
		scale = 1
	}
	if attn == 0 {
		attn = 1
	}
	if local {
		factors = nil
	}
	step := float32(math.Pow(float64(float32(theta)), float64(float32(-2)/float32(b.RotaryDim))))
	for p := 0; p < c.ContextLength; p++ {
		a := float32(p)
		for i := 0; i < half; i++ {
			t := a
			if factors != nil {
				t /= factors[i]
			}
			t *= scale
			cos[p*half+i], sin[p*half+i] = ggml.Cosf(t)*attn, ggml.Sinf(t)*attn
			a *= step
		}
	}
	return cos, sin
}
