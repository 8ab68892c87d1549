package llama

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/ggml"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

func init() {
	formats.Register(formats.Format{
		Name: "gguf", Extensions: []string{".gguf"}, Match: gguf.IsGGUF,
		LoadFile: func(path string, o formats.Options) (*graph.Model, error) {
			// Mapped read-only, not read: the quantized weights kept in
			// ggml's block layout are slices of the mapping (the page
			// cache's pages, never copied), which stays mapped for the
			// life of the process (regular.Map); nothing writes into
			// initializers.
			data, err := regular.Map(path, 0)
			if err != nil {
				return nil, err
			}
			m, err := decodeGGUF(data, o)
			if err != nil {
				// nothing kept a slice of a file that did not decode
				_ = regular.Unmap(data)
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return m, nil
		},
		Decode: func(data []byte, o formats.Options) (*graph.Model, error) { return decodeGGUF(data, o) },
	})
	formats.Register(formats.Format{
		Name: "llama2c", Extensions: []string{".bin"}, Match: IsLlama2cExport,
		LoadFile: func(path string, o formats.Options) (*graph.Model, error) {
			data, err := regular.ReadFile(path, 0)
			if err != nil {
				return nil, err
			}
			m, err := decodeLlama2c(data, o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return m, nil
		},
		Decode: func(data []byte, o formats.Options) (*graph.Model, error) { return decodeLlama2c(data, o) },
	})
}

func decodeGGUF(data []byte, o formats.Options) (*graph.Model, error) {
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, err
	}
	w, err := FromGGUF(f)
	if err != nil {
		return nil, err
	}
	m, err := build(w, o, KVFloat16)
	if err == nil && w.quantized() {
		// llama.cpp's default for quantized weights: int8 activations
		m.Metadata[formats.MetaPrecision] = "int8"
	}
	return m, err
}

func decodeLlama2c(data []byte, o formats.Options) (*graph.Model, error) {
	w, err := ReadLlama2c(data)
	if err != nil {
		return nil, err
	}
	return build(w, o, KVFloat32)
}

// smallKV is the size under which a float32 key/value cache is kept
// float32 when the caller names no type.
const smallKV = 4 << 20

// build is Build with the cache type o.KVCache (def where o names none:
// f16 for GGUF files, as llama.cpp, f32 for llama2.c's and for any cache
// whose float32 form at the context asked is under smallKV) and the context
// capped at o.ContextLength and at what the tensor limit (the engine's
// memory budget) holds of the shared key/value cache: a file declaring a
// context of 2^21 positions made a run allocate a 5 GB cache however
// short the sequence.
func build(w *Weights, o formats.Options, def KVType) (*graph.Model, error) {
	c := &w.Config
	if o.ContextLength > 0 && o.ContextLength < c.ContextLength {
		c.ContextLength = o.ContextLength
	}
	c.KVCache = def
	if f32, err := c.KVBytesPerPosition(KVFloat32); err == nil && f32*int64(c.ContextLength) < smallKV {
		// a cache this small stays in the CPU's caches: float16 would
		// save nothing worth its conversions (stories260K's decode took
		// 1.4 to 3 times as long with it)
		c.KVCache = KVFloat32
	}
	if o.KVCache != "" {
		k, err := ParseKVType(o.KVCache)
		if err != nil {
			return nil, err
		}
		c.KVCache = k
	}
	// keys and values of every layer, per position
	perPos, err := c.KVBytesPerPosition(c.KVCache)
	if err != nil {
		return nil, err
	}
	if fit := graph.EffectiveLimit(o.MaxTensorBytes) / max(perPos, 1); fit < int64(c.ContextLength) {
		if fit < 1 {
			return nil, fmt.Errorf("%w: one position of the key/value cache (%d layers × %d × 2 %s, %d bytes) is more than the memory limit of %d bytes", graph.ErrTooLarge, c.Layers, c.KVDim(), c.KVCache, perPos, graph.EffectiveLimit(o.MaxTensorBytes))
		}
		c.ContextLength = int(fit)
	}
	switch o.Precision {
	case "int8", "float16", "bfloat16":
		// reduced precision allowed: F16/BF16 products as llama.cpp's
		c.RoundActivations = true
	case "":
		// no precision asked for: a quantized GGUF's default is int8
		// (decodeGGUF's MetaPrecision, which the engine compiles at), so
		// it gets int8's graph too, the one `generate` builds
		c.RoundActivations = w.quantized()
	}
	if o.Method == BatchMethod {
		return BuildBatch(w)
	}
	return Build(w)
}

// f32Copies makes F32 matrices float32 copies (MatMuls of their
// transposes, the packed GEMM) instead of the file's rows read in place:
// what the loader did before, for tests comparing with it.
var f32Copies atomic.Bool

func ggufMatrix(f *gguf.File, name string) (Matrix, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return Matrix{}, fmt.Errorf("%w: no tensor %s", ErrFormat, name)
	}
	if len(t.Dims) != 2 || t.Dims[0] > math.MaxInt32 || t.Dims[1] > math.MaxInt32 {
		return Matrix{}, fmt.Errorf("%w: %s has dims %v, want 2", ErrFormat, name, t.Dims)
	}
	m := Matrix{Rows: int(t.Dims[1]), Cols: int(t.Dims[0])}
	if t.Type == gguf.TypeF32 && f32Copies.Load() {
		v, err := f.Float32s(t)
		m.F32 = v
		return m, err
	}
	switch t.Type {
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		// kept in the file's own block layout, not copied
		m.GGML, m.Raw = ggml.Type(t.Type), f.Raw(t)
	case gguf.TypeF16, gguf.TypeBF16:
		// the file's 16-bit values, not widened: slices of the mapping
		// (BlockQuantMatMul of type F16/BF16 reads them in place)
		m.GGML, m.Raw, m.VecDot = ggml.F16, f.Raw(t), graph.Float16
		if t.Type == gguf.TypeBF16 {
			m.GGML, m.VecDot = ggml.BF16, graph.BFloat16
		}
	case gguf.TypeF32:
		// the file's float32 values in its own [rows, cols] layout, a
		// slice of the mapping (BlockQuantMatMul of type F32 reads the
		// rows in place): no transposed or packed copy
		m.GGML, m.Raw = ggml.F32, f.Raw(t)
	default:
		v, err := f.Float32s(t)
		if err != nil {
			return Matrix{}, err
		}
		m.F32 = v
	}
	return m, nil
}

// llama2cMagic is the first four bytes of llama2.c's versioned exports
// (uint32 0x616b3432, "ak42", little-endian).
const llama2cMagic = "24ka"

// IsLlama2cExport reports whether head starts like a versioned llama2.c
// export. The legacy float32 checkpoint has no magic: it is recognised by
// its .bin extension and checked by its size.
func IsLlama2cExport(head []byte) bool { return len(head) >= 4 && string(head[:4]) == llama2cMagic }

type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) f32s(n int, what string) []float32 {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > (len(c.b)-c.off)/4 {
		c.err = fmt.Errorf("%w: %s: %d float32 values at offset %d, the file has %d bytes", ErrFormat, what, n, c.off, len(c.b))
		return nil
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(c.b[c.off+4*i:]))
	}
	c.off += 4 * n
	return out
}

func (c *cursor) i8s(n int, what string) []int8 {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b)-c.off {
		c.err = fmt.Errorf("%w: %s: %d int8 values at offset %d, the file has %d bytes", ErrFormat, what, n, c.off, len(c.b))
		return nil
	}
	out := make([]int8, n)
	for i := range out {
		out[i] = int8(c.b[c.off+i])
	}
	c.off += n
	return out
}

func header(b []byte) (Config, error) {
	if len(b) < 28 {
		return Config{}, fmt.Errorf("%w: %d bytes, shorter than the llama2.c header", ErrFormat, len(b))
	}
	v := make([]int, 7)
	for i := range v {
		v[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	c := Config{Dim: v[0], Hidden: v[1], Layers: v[2], Heads: v[3], KVHeads: v[4], Vocab: v[5], ContextLength: v[6], SharedEmbedding: true}
	if c.Vocab < 0 {
		c.Vocab, c.SharedEmbedding = -c.Vocab, false
	}
	return c, c.check()
}

// ReadLlama2c reads a llama2.c checkpoint: the legacy float32 format (a
// header of 7 int32 — dim, hidden, layers, heads, kv heads, vocab
// (negative: an unshared classifier follows), max sequence — then the
// weights in run.c's order, the rotary tables and the classifier) or the
// version-2 export (256-byte header: magic, version, the 7 int32, a
// shared-classifier byte, the group size; float32 norms, then every
// weight as int8 values followed by one float32 scale per group).
func ReadLlama2c(b []byte) (*Weights, error) {
	if IsLlama2cExport(b) {
		if len(b) < 256 {
			return nil, fmt.Errorf("%w: %d bytes, shorter than the 256-byte export header", ErrFormat, len(b))
		}
		version := int32(binary.LittleEndian.Uint32(b[4:]))
		if version != 2 {
			return nil, fmt.Errorf("%w: llama2.c export version %d (version 2, int8 Q8_0, is read; the legacy float32 .bin too)", ErrFormat, version)
		}
		return readQ80(b)
	}
	c, err := header(b)
	if err != nil {
		return nil, err
	}
	D, H, L, KV, V := c.Dim, c.Hidden, c.Layers, c.KVDim(), c.Vocab
	hs := c.HeadSize
	want := 28 + 4*(V*D+L*D+L*D*D+2*L*KV*D+L*D*D+L*D+3*L*H*D+D+c.ContextLength*hs)
	if !c.SharedEmbedding {
		want += 4 * V * D
	}
	if len(b) != want {
		return nil, fmt.Errorf("%w: a llama2.c checkpoint with header %+v has %d bytes, this file %d", ErrFormat, c, want, len(b))
	}
	cur := &cursor{b: b, off: 28}
	w := &Weights{Config: c, Layers: make([]Layer, L)}
	w.Embed = Matrix{Rows: V, Cols: D, F32: cur.f32s(V*D, "token embedding")}
	each := func(what string, rows, cols int, set func(l *Layer, m Matrix)) {
		for l := range w.Layers {
			set(&w.Layers[l], Matrix{Rows: rows, Cols: cols, F32: cur.f32s(rows*cols, what)})
		}
	}
	for l := range w.Layers {
		w.Layers[l].AttnNorm = cur.f32s(D, "attention norm")
	}
	each("wq", D, D, func(l *Layer, m Matrix) { l.Q = m })
	each("wk", KV, D, func(l *Layer, m Matrix) { l.K = m })
	each("wv", KV, D, func(l *Layer, m Matrix) { l.V = m })
	each("wo", D, D, func(l *Layer, m Matrix) { l.O = m })
	for l := range w.Layers {
		w.Layers[l].FFNNorm = cur.f32s(D, "ffn norm")
	}
	each("w1", H, D, func(l *Layer, m Matrix) { l.Gate = m })
	each("w2", D, H, func(l *Layer, m Matrix) { l.Down = m })
	each("w3", H, D, func(l *Layer, m Matrix) { l.Up = m })
	w.Norm = cur.f32s(D, "final norm")
	cur.f32s(c.ContextLength*hs, "rotary tables") // the graph computes its own
	if !c.SharedEmbedding {
		w.Output = &Matrix{Rows: V, Cols: D, F32: cur.f32s(V*D, "classifier")}
	}
	if cur.err != nil {
		return nil, cur.err
	}
	return w, w.Check()
}

func readQ80(b []byte) (*Weights, error) {
	c, err := header(b[8:])
	if err != nil {
		return nil, err
	}
	c.SharedEmbedding = b[36] != 0
	G := int(int32(binary.LittleEndian.Uint32(b[37:])))
	if G <= 0 || G > 1<<16 {
		return nil, fmt.Errorf("%w: group size %d", ErrFormat, G)
	}
	D, H, L, KV, V := c.Dim, c.Hidden, c.Layers, c.KVDim(), c.Vocab
	cur := &cursor{b: b, off: 256}
	w := &Weights{Config: c, Layers: make([]Layer, L)}
	for l := range w.Layers {
		w.Layers[l].AttnNorm = cur.f32s(D, "attention norm")
	}
	for l := range w.Layers {
		w.Layers[l].FFNNorm = cur.f32s(D, "ffn norm")
	}
	w.Norm = cur.f32s(D, "final norm")
	q := func(what string, rows, cols int) Matrix {
		n := rows * cols
		if n%G != 0 && cur.err == nil {
			cur.err = fmt.Errorf("%w: %s has %d values, not whole groups of %d", ErrFormat, what, n, G)
		}
		m := Matrix{Rows: rows, Cols: cols, Bits: 8, Block: G}
		m.Q8 = cur.i8s(n, what)
		m.Scales = cur.f32s(n/G, what+" scales")
		return m
	}
	w.Embed = q("token embedding", V, D)
	each := func(what string, rows, cols int, set func(l *Layer, m Matrix)) {
		for l := range w.Layers {
			set(&w.Layers[l], q(what, rows, cols))
		}
	}
	each("wq", D, D, func(l *Layer, m Matrix) { l.Q = m })
	each("wk", KV, D, func(l *Layer, m Matrix) { l.K = m })
	each("wv", KV, D, func(l *Layer, m Matrix) { l.V = m })
	each("wo", D, D, func(l *Layer, m Matrix) { l.O = m })
	each("w1", H, D, func(l *Layer, m Matrix) { l.Gate = m })
	each("w2", D, H, func(l *Layer, m Matrix) { l.Down = m })
	each("w3", H, D, func(l *Layer, m Matrix) { l.Up = m })
	if !c.SharedEmbedding {
		o := q("classifier", V, D)
		w.Output = &o
	}
	if cur.err != nil {
		return nil, cur.err
	}
	if cur.off != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the last weight", ErrFormat, len(b)-cur.off)
	}
	return w, w.Check()
}
