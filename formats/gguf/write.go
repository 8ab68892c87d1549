package gguf

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// WriteTensor is one tensor to write: Dims in GGUF order (innermost
// first), Type one of the Type constants and Data its encoded bytes (see
// EncodeF32, QuantizeQ8_0, QuantizeQ4_0).
type WriteTensor struct {
	Name string
	Dims []uint64
	Type uint32
	Data []byte
}

// Write writes a version-3 GGUF file: meta's keys in sorted order (values
// string, bool, uint32, int32, float32, uint64, int64, float64, []any
// of one of those, and the typed slices Parse returns for arrays), then the tensors, 32-byte aligned. It is meant for
// tests and conversion tools; Parse reads what it writes.
func Write(w io.Writer, meta map[string]any, tensors []WriteTensor) error {
	var b []byte
	u32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	u64 := func(v uint64) { b = binary.LittleEndian.AppendUint64(b, v) }
	str := func(s string) { u64(uint64(len(s))); b = append(b, s...) }
	var val func(v any, typed bool) error
	val = func(v any, typed bool) error {
		t := func(n uint32) {
			if typed {
				u32(n)
			}
		}
		switch x := v.(type) {
		case uint32:
			t(4)
			u32(x)
		case int32:
			t(5)
			u32(uint32(x))
		case float32:
			t(6)
			u32(math.Float32bits(x))
		case bool:
			t(7)
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case string:
			t(8)
			str(x)
		case uint64:
			t(10)
			u64(x)
		case int64:
			t(11)
			u64(uint64(x))
		case float64:
			t(12)
			u64(math.Float64bits(x))
		case []uint8:
			typedArray(t, u32, u64, 0, len(x), func(i int) { b = append(b, x[i]) })
		case []int8:
			typedArray(t, u32, u64, 1, len(x), func(i int) { b = append(b, byte(x[i])) })
		case []uint16:
			typedArray(t, u32, u64, 2, len(x), func(i int) { b = binary.LittleEndian.AppendUint16(b, x[i]) })
		case []int16:
			typedArray(t, u32, u64, 3, len(x), func(i int) { b = binary.LittleEndian.AppendUint16(b, uint16(x[i])) })
		case []uint32:
			typedArray(t, u32, u64, 4, len(x), func(i int) { u32(x[i]) })
		case []int32:
			typedArray(t, u32, u64, 5, len(x), func(i int) { u32(uint32(x[i])) })
		case []float32:
			typedArray(t, u32, u64, 6, len(x), func(i int) { u32(math.Float32bits(x[i])) })
		case []bool:
			typedArray(t, u32, u64, 7, len(x), func(i int) {
				if x[i] {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
			})
		case []string:
			typedArray(t, u32, u64, 8, len(x), func(i int) { str(x[i]) })
		case []uint64:
			typedArray(t, u32, u64, 10, len(x), func(i int) { u64(x[i]) })
		case []int64:
			typedArray(t, u32, u64, 11, len(x), func(i int) { u64(uint64(x[i])) })
		case []float64:
			typedArray(t, u32, u64, 12, len(x), func(i int) { u64(math.Float64bits(x[i])) })
		case []any:
			t(9)
			et := uint32(4)
			if len(x) > 0 {
				var probe []byte
				saved := b
				b = probe
				if err := val(x[0], true); err != nil {
					return err
				}
				et = binary.LittleEndian.Uint32(b)
				b = saved
			}
			u32(et)
			u64(uint64(len(x)))
			for _, e := range x {
				if err := val(e, false); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("gguf: cannot write a %T metadata value", v)
		}
		return nil
	}
	b = append(b, Magic...)
	u32(3)
	u64(uint64(len(tensors)))
	u64(uint64(len(meta)))
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		str(k)
		if err := val(meta[k], true); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	const align = 32
	off := uint64(0)
	for _, t := range tensors {
		str(t.Name)
		u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			u64(d)
		}
		u32(t.Type)
		u64(off)
		off += (uint64(len(t.Data)) + align - 1) / align * align
	}
	for len(b)%align != 0 {
		b = append(b, 0)
	}
	for _, t := range tensors {
		b = append(b, t.Data...)
		for len(b)%align != 0 {
			b = append(b, 0)
		}
	}
	_, err := w.Write(b)
	return err
}

// EncodeF32 encodes float32 values as an F32 tensor's bytes.
func EncodeF32(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// QuantizeQ8_0 encodes x (a multiple of 32 values) as Q8_0 blocks the way
// llama.cpp's reference quantizer does: scale d = max|x|/127 stored as
// float16, q = round(x/d).
func QuantizeQ8_0(x []float32) ([]byte, error) {
	if len(x)%32 != 0 {
		return nil, fmt.Errorf("gguf: Q8_0 needs a multiple of 32 values, got %d", len(x))
	}
	out := make([]byte, 0, len(x)/32*34)
	for b := 0; b < len(x); b += 32 {
		amax := float32(0)
		for _, v := range x[b : b+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(graph.F16FromFloat32(d)))
		for _, v := range x[b : b+32] {
			out = append(out, byte(int8(math.Round(float64(v*id)))))
		}
	}
	return out, nil
}

// QuantizeQ4_0 encodes x (a multiple of 32 values) as Q4_0 blocks the way
// llama.cpp's reference quantizer does: d = m/-8 where m is the value of
// largest magnitude, stored as float16, nibble = min(15, ⌊x/d + 8.5⌋),
// element j in the low nibble of byte j and element j+16 in the high.
func QuantizeQ4_0(x []float32) ([]byte, error) {
	if len(x)%32 != 0 {
		return nil, fmt.Errorf("gguf: Q4_0 needs a multiple of 32 values, got %d", len(x))
	}
	out := make([]byte, 0, len(x)/32*18)
	for b := 0; b < len(x); b += 32 {
		amax, m := float32(0), float32(0)
		for _, v := range x[b : b+32] {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, m = a, v
			}
		}
		d := m / -8
		id := float32(0)
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(graph.F16FromFloat32(d)))
		nib := func(v float32) byte { return byte(min(15, int8(v*id+8.5))) }
		for j := 0; j < 16; j++ {
			out = append(out, nib(x[b+j])|nib(x[b+16+j])<<4)
		}
	}
	return out, nil
}

// typedArray writes an array's type (when typed), element type, count and
// elements (put writes element i).
func typedArray(t func(uint32), u32 func(uint32), u64 func(uint64), et uint32, n int, put func(i int)) {
	t(9)
	u32(et)
	u64(uint64(n))
	for i := range n {
		put(i)
	}
}
