// Package llama builds the Llama decoder (RMSNorm, rotary position
// embedding, grouped-query attention, SwiGLU feed-forward) as a Switchyard
// graph from its weights, and reads those weights from GGUF files
// (architecture "llama") and llama2.c checkpoints (the float32 .bin and
// the version-2 int8 "Q8_0" export). It registers both as model formats
// with formats, so a .gguf or llama2.c .bin opens like an .onnx
// file and is placed on backends like any other graph.
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
// pairs as llama2.c and llama.cpp do, and, for quantized weights, the
// switchyard.blockquant BlockQuantMatMul op, which keeps each weight
// matrix quantized (int8 or 4-bit with per-block scales) in the graph.
package llama

import (
	"errors"
	"fmt"
	"github.com/switchyard-hal/switchyard/core/ggml"
	"math"
)

// ErrFormat marks a checkpoint that is not a well-formed Llama model.
var ErrFormat = errors.New("llama: malformed model")

// Config is the model's hyper-parameters.
type Config struct {
	Dim, Hidden     int // model width and feed-forward width
	Layers          int
	Heads, KVHeads  int // query heads and key/value heads (grouped-query attention)
	Vocab           int
	ContextLength   int     // the longest sequence (positions the rotary table covers)
	RMSEps          float64 // RMSNorm epsilon (llama2.c: 1e-5)
	RopeTheta       float64 // rotary base (10000)
	HeadSize        int     // Dim / Heads
	SharedEmbedding bool    // the classifier is the embedding table
}

func (c *Config) check() error {
	if c.Dim <= 0 || c.Hidden <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.Vocab <= 0 || c.ContextLength <= 0 {
		return fmt.Errorf("%w: every size must be positive: %+v", ErrFormat, *c)
	}
	const big = 1 << 20
	if c.Dim > big || c.Hidden > big || c.Layers > 4096 || c.Heads > 4096 || c.Vocab > 1<<22 || c.ContextLength > 1<<22 {
		return fmt.Errorf("%w: sizes out of range: %+v", ErrFormat, *c)
	}
	if c.Dim%c.Heads != 0 || c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("%w: dim %d, %d heads, %d key/value heads do not divide", ErrFormat, c.Dim, c.Heads, c.KVHeads)
	}
	c.HeadSize = c.Dim / c.Heads
	if c.HeadSize%2 != 0 {
		return fmt.Errorf("%w: head size %d is odd (rotary pairs)", ErrFormat, c.HeadSize)
	}
	if c.ContextLength*c.HeadSize > 1<<24 {
		return fmt.Errorf("%w: context %d × head size %d: rotary tables too large", ErrFormat, c.ContextLength, c.HeadSize)
	}
	if c.RMSEps <= 0 {
		c.RMSEps = 1e-5
	}
	if c.RopeTheta <= 0 {
		c.RopeTheta = 10000
	}
	return nil
}

// KVDim is the width of the keys and values of one position.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadSize }

// Matrix is a weight matrix [Rows, Cols] in row-major nn.Linear layout
// (Rows output features, Cols input features), either float32 (F32) or
// quantized: Bits 8 (Q8 int8 values) or 4 (Q4 packed nibbles, stored
// q+8, element i in byte i/2, the low nibble for even i), with one scale
// per Block consecutive elements of the row-major matrix; or, when Raw is
// set, in ggml's own block layout of type GGML (Q4_1, Q5_0, Q5_1, Q2_K …
// Q6_K: core/ggml), Rows rows of whole blocks as the GGUF file stores them.
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
}

// Quantized reports whether the matrix is kept quantized.
func (m *Matrix) Quantized() bool { return m.Bits != 0 || m.Raw != nil }

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
		if err != nil || !m.GGML.Quantized() || len(m.Raw) != rows*rb {
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

// Layer is one transformer block's weights.
type Layer struct {
	AttnNorm, FFNNorm []float32 // [Dim]
	Q, K, V, O        Matrix    // [Dim, Dim], [KVDim, Dim], [KVDim, Dim], [Dim, Dim]
	Gate, Up, Down    Matrix    // w1 [Hidden, Dim], w3 [Hidden, Dim], w2 [Dim, Hidden]
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
	kv := c.KVDim()
	for i := range w.Layers {
		l := &w.Layers[i]
		if len(l.AttnNorm) != c.Dim || len(l.FFNNorm) != c.Dim {
			return fmt.Errorf("%w: layer %d norms have %d and %d values, want %d", ErrFormat, i, len(l.AttnNorm), len(l.FFNNorm), c.Dim)
		}
		for _, m := range []struct {
			name       string
			m          *Matrix
			rows, cols int
		}{{"wq", &l.Q, c.Dim, c.Dim}, {"wk", &l.K, kv, c.Dim}, {"wv", &l.V, kv, c.Dim}, {"wo", &l.O, c.Dim, c.Dim},
			{"w1", &l.Gate, c.Hidden, c.Dim}, {"w3", &l.Up, c.Hidden, c.Dim}, {"w2", &l.Down, c.Dim, c.Hidden}} {
			if err := m.m.check(fmt.Sprintf("layer %d %s", i, m.name), m.rows, m.cols); err != nil {
				return err
			}
		}
	}
	return nil
}

// WeightBytes is the memory the weights take as the graph holds them:
// every matrix as stored (quantized ones quantized), the classifier (the
// embedding's transpose or quantized copy when shared) and the float32
// embedding table the token lookup gathers from.
func (w *Weights) WeightBytes() int {
	n := 4*w.Config.Vocab*w.Config.Dim + 4*len(w.Norm) // the float32 table Gather reads
	cls := w.Output
	if cls == nil {
		cls = &w.Embed
	}
	n += cls.Bytes()
	for i := range w.Layers {
		l := &w.Layers[i]
		n += 4 * (len(l.AttnNorm) + len(l.FFNNorm))
		for _, m := range []*Matrix{&l.Q, &l.K, &l.V, &l.O, &l.Gate, &l.Up, &l.Down} {
			n += m.Bytes()
		}
	}
	return n
}

// ropeTables returns cos and sin [ContextLength, HeadSize/2] as llama2.c
// computes them: frequency θ^(-2i/HeadSize) for pair i, angle pos·freq,
// in float32.
func ropeTables(c *Config) (cos, sin []float32) {
	half := c.HeadSize / 2
	cos, sin = make([]float32, c.ContextLength*half), make([]float32, c.ContextLength*half)
	freq := make([]float32, half)
	for i := range freq {
		freq[i] = float32(1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadSize)))
	}
	for p := 0; p < c.ContextLength; p++ {
		for i, f := range freq {
			v := float64(float32(p) * f)
			cos[p*half+i], sin[p*half+i] = float32(math.Cos(v)), float32(math.Sin(v))
		}
	}
	return cos, sin
}
