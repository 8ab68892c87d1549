package gguf

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

// rawKV and rawTensor describe a GGUF file byte for byte, so tests can
// write what Write never would (duplicate keys, chosen offsets, dims
// whose product overflows).
type rawKV struct {
	key string
	typ uint32
	val []byte // the encoded value
}

type rawTensor struct {
	name   string
	dims   []uint64
	typ    uint32
	offset uint64
}

// rawGGUF writes a version-3 file: the pairs, the directory, padding to
// 32 bytes and data bytes of zeros.
func rawGGUF(kvs []rawKV, ts []rawTensor, data int) []byte {
	le := binary.LittleEndian
	b := []byte(Magic)
	b = le.AppendUint32(b, 3)
	b = le.AppendUint64(b, uint64(len(ts)))
	b = le.AppendUint64(b, uint64(len(kvs)))
	str := func(s string) { b = le.AppendUint64(b, uint64(len(s))); b = append(b, s...) }
	for _, kv := range kvs {
		str(kv.key)
		b = le.AppendUint32(b, kv.typ)
		b = append(b, kv.val...)
	}
	for _, t := range ts {
		str(t.name)
		b = le.AppendUint32(b, uint32(len(t.dims)))
		for _, d := range t.dims {
			b = le.AppendUint64(b, d)
		}
		b = le.AppendUint32(b, t.typ)
		b = le.AppendUint64(b, t.offset)
	}
	for len(b)%32 != 0 {
		b = append(b, 0)
	}
	return append(b, make([]byte, data)...)
}

func kvU32(k string, v uint32) rawKV {
	return rawKV{k, 4, binary.LittleEndian.AppendUint32(nil, v)}
}

func kvF32(k string, v float32) rawKV {
	return rawKV{k, 6, binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

func kvStr(k, v string) rawKV {
	return rawKV{k, 8, append(binary.LittleEndian.AppendUint64(nil, uint64(len(v))), v...)}
}

// kvArray is an array of n elements of type et, each the bytes elem.
func kvArray(k string, et uint32, n int, elem []byte) rawKV {
	v := binary.LittleEndian.AppendUint32(nil, et)
	v = binary.LittleEndian.AppendUint64(v, uint64(n))
	for range n {
		v = append(v, elem...)
	}
	return rawKV{k, 9, v}
}

func kvTokens(n int) rawKV {
	return kvArray("tokenizer.ggml.tokens", 8, n, append(binary.LittleEndian.AppendUint64(nil, 1), 'a'))
}

// hostileFiles are issue #32's GGUF classes: each must be refused by
// Parse with an error naming want.
func hostileFiles() map[string]struct {
	data []byte
	want string
} {
	f32 := uint32(TypeF32)
	type c = struct {
		data []byte
		want string
	}
	return map[string]c{
		"duplicate-key": {rawGGUF([]rawKV{kvU32("llama.block_count", 1), kvU32("llama.block_count", 2)}, nil, 0), `"llama.block_count" appears twice`},
		"overlapping-tensors": {rawGGUF(nil, []rawTensor{{"a", []uint64{8}, f32, 0}, {"b", []uint64{8}, f32, 0}}, 64),
			"overlap"},
		"misaligned-tensor": {rawGGUF(nil, []rawTensor{{"a", []uint64{8}, f32, 4}}, 64), "not aligned"},
		"element-overflow": {rawGGUF(nil, []rawTensor{{"a", []uint64{256, 256, 256, 256, 256, 256, 256, 256}, f32, 0}}, 64),
			`tensor "a": dims`},
		"block-count-below-layers": {rawGGUF([]rawKV{kvStr("general.architecture", "llama"), kvU32("llama.block_count", 1)},
			[]rawTensor{{"blk.0.w", []uint64{8}, f32, 0}, {"blk.1.w", []uint64{8}, f32, 32}}, 64), "llama.block_count is 1"},
		"vocab-vs-embedding": {rawGGUF([]rawKV{kvTokens(4)}, []rawTensor{{"token_embd.weight", []uint64{2, 512}, f32, 0}}, 4096),
			"4 tokens, token_embd.weight has 512 rows"},
		"nan-rms-epsilon": {rawGGUF([]rawKV{kvF32("llama.attention.layer_norm_rms_epsilon", float32(math.NaN()))}, nil, 0),
			"llama.attention.layer_norm_rms_epsilon is NaN"},
	}
}

// TestHostileRefused: each of issue #32's nonsense files, accepted by
// Parse before (the overflowing one then panicked in makeslice through
// the Go API), is refused with the field named.
func TestHostileRefused(t *testing.T) {
	for name, h := range hostileFiles() {
		_, err := Parse(h.data)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), h.want) {
			t.Errorf("%s: got %v, want an ErrFormat naming %q", name, err, h.want)
		}
	}
}

// uint8Array is a file of one uint8 array of n elements.
func uint8Array(n int) []byte { return rawGGUF([]rawKV{kvArray("a", 0, n, []byte{'x'})}, nil, 0) }

// parseBound is what Parse may allocate for an input of n bytes.
func parseBound(n int) uint64 { return allocguard.Bound(n, 8, 1<<20) }

// TestTypedArrays: a uint8 array is stored as []uint8 and takes about
// its size (boxed in []any it took ~57 times that).
func TestTypedArrays(t *testing.T) {
	data := uint8Array(4 << 20)
	var f *File
	var err error
	allocguard.Check(t, "parsing a 4 MB uint8 array", parseBound(len(data)), func() { f, err = Parse(data) })
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := f.Meta["a"].([]uint8); !ok || len(a) != 4<<20 || a[0] != 'x' {
		t.Fatalf("a is %T of %d", f.Meta["a"], len(a))
	}
}

func hostileSeeds() map[string][]byte {
	m := map[string][]byte{"uint8-array": uint8Array(1 << 15)}
	for name, h := range hostileFiles() {
		m[name] = h.data
	}
	return m
}

func TestHostileSeeds(t *testing.T) { allocguard.Seeds(t, "FuzzParse", hostileSeeds()) }
