package llama

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// KVType is the element type of a SharedCache graph's key/value cache
// buffers, named as llama.cpp's --cache-type-k/v and the peer kit's
// generate.mjs --kv name them.
type KVType string

const (
	// KVFloat32 keeps the cache in float32 (exact: the keys and values
	// the attention computed).
	KVFloat32 KVType = "f32"
	// KVFloat16 keeps it in float16 (IEEE half, rounded to nearest even):
	// half the memory of float32; llama.cpp's default.
	KVFloat16 KVType = "f16"
	// KVQ8_0 keeps it in ggml's Q8_0 blocks: each 32 values of a head's
	// row as a float16 scale and 32 int8s (34 bytes, 8.5 bits a value).
	// The head size must be a multiple of 32.
	KVQ8_0 KVType = "q8_0"
)

// KVTypeAttr is the GroupQueryAttention attribute (a string) naming a
// cache held in ggml blocks: "q8_0" says the pasts and presents are
// uint8 [B, KV, P, H/32·34], each head's row Q8_0 blocks. Float16 and
// float32 caches need no attribute (their dtype says it).
const KVTypeAttr = "kv_cache_type"

// ParseKVType reads a cache type's name ("" is f32: the graph's own
// default; formats/llama's loader picks f16 for GGUF files itself).
func ParseKVType(s string) (KVType, error) {
	switch KVType(s) {
	case "", KVFloat32:
		return KVFloat32, nil
	case KVFloat16, KVQ8_0:
		return KVType(s), nil
	}
	return "", fmt.Errorf("%w: KV cache type %q (want f32, f16 or q8_0)", ErrUnsupported, s)
}

// q8Block is the size of a Q8_0 block: 32 values, 34 bytes.
const (
	q8Values = 32
	q8Bytes  = 34
)

// kvLayout is a cache type's graph form: the dtype of the buffers, the
// width of a head's row in elements, and its bytes a position per
// key/value head.
func (k KVType) layout(headSize int) (dt graph.DType, width, rowBytes int, err error) {
	switch k {
	case "", KVFloat32:
		return graph.Float32, headSize, 4 * headSize, nil
	case KVFloat16:
		return graph.Float16, headSize, 2 * headSize, nil
	case KVQ8_0:
		if headSize%q8Values != 0 {
			return 0, 0, 0, fmt.Errorf("%w: a q8_0 KV cache needs a head size that is a multiple of %d, not %d", ErrUnsupported, q8Values, headSize)
		}
		w := headSize / q8Values * q8Bytes
		return graph.Uint8, w, w, nil
	}
	return 0, 0, 0, fmt.Errorf("%w: KV cache type %q (want f32, f16 or q8_0)", ErrUnsupported, string(k))
}

// KVBytesPerPosition is the memory one position of the cache takes
// across every layer, keys and values, with cache type k.
func (c *Config) KVBytesPerPosition(k KVType) (int64, error) {
	_, _, row, err := k.layout(c.HeadSize)
	if err != nil {
		return 0, err
	}
	return 2 * int64(c.Layers) * int64(c.KVHeads) * int64(row), nil
}
