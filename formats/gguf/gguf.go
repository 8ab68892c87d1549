// Package gguf reads GGUF files (the llama.cpp model format, versions 2
// and 3): the metadata key-value pairs, the tensor directory and the
// tensor data, with dequantisation of the F32, F16, Q8_0 and Q4_0 tensor
// types. It knows nothing of model architectures (formats/llama builds graphs
// from what it reads).
//
// Contracts: every length, count, offset and size read from the file is
// checked against the file's size before it is used, so a truncated or
// hostile file is an error naming the field, never a panic or a huge
// allocation.
package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// ErrFormat marks a malformed GGUF file.
var ErrFormat = errors.New("gguf: malformed file")

// Tensor types (ggml_type) this package reads.
const (
	TypeF32  = 0
	TypeF16  = 1
	TypeQ4_0 = 2
	TypeQ8_0 = 8
)

// TypeName names a ggml tensor type.
func TypeName(t uint32) string {
	switch t {
	case TypeF32:
		return "F32"
	case TypeF16:
		return "F16"
	case TypeQ4_0:
		return "Q4_0"
	case 3:
		return "Q4_1"
	case 6:
		return "Q5_0"
	case 7:
		return "Q5_1"
	case TypeQ8_0:
		return "Q8_0"
	case 30:
		return "BF16"
	}
	return fmt.Sprintf("ggml_type(%d)", t)
}

// TensorInfo is one entry of the tensor directory. Dims are in GGUF order:
// Dims[0] is the innermost (contiguous) dimension, so a [rows, cols]
// matrix has Dims {cols, rows}.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   uint32
	Offset uint64 // from the start of the data section
	Size   uint64 // bytes
}

// Elements is the tensor's element count.
func (t *TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// File is a GGUF file read into memory.
type File struct {
	Version uint32
	Meta    map[string]any // uint8..int64 as uint64/int64, float32/64 as float64, bool, string, []any
	Keys    []string       // metadata keys in file order
	Tensors []TensorInfo
	byName  map[string]int
	data    []byte // the data section
}

// IsGGUF reports whether head starts with the GGUF magic.
func IsGGUF(head []byte) bool { return len(head) >= 4 && string(head[:4]) == Magic }

// ReadFile reads and parses a GGUF file.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) need(n uint64, what string) bool {
	if r.err != nil {
		return false
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("%w: %s at offset %d needs %d bytes, %d left", ErrFormat, what, r.off, n, len(r.b)-r.off)
		return false
	}
	return true
}

func (r *reader) u32(what string) uint32 {
	if !r.need(4, what) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64(what string) uint64 {
	if !r.need(8, what) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) str(what string) string {
	n := r.u64(what + " length")
	if !r.need(n, what) {
		return ""
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s
}

// value reads one metadata value of type t (depth bounds nested arrays).
func (r *reader) value(t uint32, key string, depth int) any {
	if r.err != nil {
		return nil
	}
	switch t {
	case 0, 1: // uint8, int8
		if !r.need(1, key) {
			return nil
		}
		v := r.b[r.off]
		r.off++
		if t == 1 {
			return int64(int8(v))
		}
		return uint64(v)
	case 2, 3: // uint16, int16
		if !r.need(2, key) {
			return nil
		}
		v := binary.LittleEndian.Uint16(r.b[r.off:])
		r.off += 2
		if t == 3 {
			return int64(int16(v))
		}
		return uint64(v)
	case 4:
		return uint64(r.u32(key))
	case 5:
		return int64(int32(r.u32(key)))
	case 6:
		return float64(math.Float32frombits(r.u32(key)))
	case 7:
		if !r.need(1, key) {
			return nil
		}
		v := r.b[r.off] != 0
		r.off++
		return v
	case 8:
		return r.str(key)
	case 9:
		if depth > 4 {
			r.err = fmt.Errorf("%w: %s: arrays nested too deep", ErrFormat, key)
			return nil
		}
		et := r.u32(key + " element type")
		n := r.u64(key + " element count")
		if r.err == nil && n > uint64(len(r.b)-r.off) { // every element takes >= 1 byte
			r.err = fmt.Errorf("%w: %s: %d elements in %d bytes", ErrFormat, key, n, len(r.b)-r.off)
			return nil
		}
		arr := make([]any, 0, min(n, 1<<20))
		for i := uint64(0); i < n && r.err == nil; i++ {
			arr = append(arr, r.value(et, key, depth+1))
		}
		return arr
	case 10:
		return r.u64(key)
	case 11:
		return int64(r.u64(key))
	case 12:
		return math.Float64frombits(r.u64(key))
	}
	r.err = fmt.Errorf("%w: %s has unknown value type %d", ErrFormat, key, t)
	return nil
}

// Parse parses a GGUF file held in memory; the tensors refer to data.
func Parse(data []byte) (*File, error) {
	if !IsGGUF(data) {
		return nil, fmt.Errorf("%w: no GGUF magic", ErrFormat)
	}
	r := &reader{b: data, off: 4}
	f := &File{Meta: map[string]any{}, byName: map[string]int{}}
	f.Version = r.u32("version")
	if r.err == nil && (f.Version < 2 || f.Version > 3) {
		return nil, fmt.Errorf("%w: version %d (this reader knows 2 and 3)", ErrFormat, f.Version)
	}
	nt := r.u64("tensor count")
	nkv := r.u64("metadata count")
	if r.err == nil && (nt > uint64(len(data)) || nkv > uint64(len(data))) {
		return nil, fmt.Errorf("%w: %d tensors and %d metadata entries in a %d-byte file", ErrFormat, nt, nkv, len(data))
	}
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		k := r.str("metadata key")
		t := r.u32(k + " type")
		v := r.value(t, k, 0)
		if r.err == nil {
			if _, dup := f.Meta[k]; !dup {
				f.Keys = append(f.Keys, k)
			}
			f.Meta[k] = v
		}
	}
	for i := uint64(0); i < nt && r.err == nil; i++ {
		var ti TensorInfo
		ti.Name = r.str("tensor name")
		nd := r.u32(ti.Name + " rank")
		if nd > 8 {
			return nil, fmt.Errorf("%w: tensor %q has rank %d", ErrFormat, ti.Name, nd)
		}
		for d := uint32(0); d < nd; d++ {
			ti.Dims = append(ti.Dims, r.u64(ti.Name+" dim"))
		}
		ti.Type = r.u32(ti.Name + " type")
		ti.Offset = r.u64(ti.Name + " offset")
		if r.err != nil {
			break
		}
		if _, dup := f.byName[ti.Name]; dup {
			return nil, fmt.Errorf("%w: tensor %q listed twice", ErrFormat, ti.Name)
		}
		for _, d := range ti.Dims {
			if d == 0 || d > uint64(len(data))*2 {
				return nil, fmt.Errorf("%w: tensor %q has dims %v", ErrFormat, ti.Name, ti.Dims)
			}
		}
		size, err := byteSize(ti.Type, ti.Elements(), ti.Dims)
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, ti.Name, err)
		}
		ti.Size = size
		f.byName[ti.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, ti)
	}
	if r.err != nil {
		return nil, r.err
	}
	align := uint64(32)
	if a, ok := f.Meta["general.alignment"].(uint64); ok {
		if a == 0 || a&(a-1) != 0 || a > 1<<16 {
			return nil, fmt.Errorf("%w: general.alignment %d is not a power of two", ErrFormat, a)
		}
		align = a
	}
	start := (uint64(r.off) + align - 1) / align * align
	if start > uint64(len(data)) && len(f.Tensors) == 0 {
		start = uint64(len(data)) // a vocabulary-only file ends after its metadata, unpadded
	}
	if start > uint64(len(data)) {
		return nil, fmt.Errorf("%w: the data section starts past the end of the file", ErrFormat)
	}
	f.data = data[start:]
	for _, ti := range f.Tensors {
		if ti.Offset > uint64(len(f.data)) || ti.Size > uint64(len(f.data))-ti.Offset {
			return nil, fmt.Errorf("%w: tensor %q (%d bytes at %d) runs past the end of the data (%d bytes)", ErrFormat, ti.Name, ti.Size, ti.Offset, len(f.data))
		}
	}
	return f, nil
}

func byteSize(t uint32, n uint64, dims []uint64) (uint64, error) {
	switch t {
	case TypeF32:
		return n * 4, nil
	case TypeF16, 30:
		return n * 2, nil
	case TypeQ8_0, TypeQ4_0:
		if len(dims) == 0 || dims[0]%32 != 0 {
			return 0, fmt.Errorf("%s rows of %v are not whole 32-element blocks", TypeName(t), dims)
		}
		if t == TypeQ8_0 {
			return n / 32 * 34, nil
		}
		return n / 32 * 18, nil
	}
	return 0, fmt.Errorf("tensor type %s is not supported (F32, F16, BF16, Q8_0, Q4_0 are)", TypeName(t))
}

// Tensor returns the directory entry of a named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.byName[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Raw returns the bytes of a tensor in the file's encoding.
func (f *File) Raw(t *TensorInfo) []byte { return f.data[t.Offset : t.Offset+t.Size] }

// Float32s dequantises a tensor to float32 (exactly: F16, BF16 and the
// block scales convert without rounding; Q8_0 and Q4_0 values are
// scale·q).
func (f *File) Float32s(t *TensorInfo) ([]float32, error) {
	raw := f.Raw(t)
	n := t.Elements()
	out := make([]float32, n)
	switch t.Type {
	case TypeF32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case TypeF16:
		for i := range out {
			out[i] = graph.F16(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	case 30:
		for i := range out {
			out[i] = graph.BF16(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	case TypeQ8_0:
		q, s := Q8_0(raw)
		for i := range out {
			out[i] = s[i/32] * float32(q[i])
		}
	case TypeQ4_0:
		q, s := Q4_0(raw)
		for i := range out {
			out[i] = s[i/32] * float32(int(q[i/2]>>(4*(i%2))&15)-8)
		}
	default:
		return nil, fmt.Errorf("gguf: tensor %q: type %s cannot be read", t.Name, TypeName(t.Type))
	}
	return out, nil
}

// Q8_0 splits Q8_0 blocks (a float16 scale and 32 int8 values each) into
// the values and one float32 scale per block.
func Q8_0(raw []byte) ([]int8, []float32) {
	nb := len(raw) / 34
	q := make([]int8, nb*32)
	s := make([]float32, nb)
	for b := 0; b < nb; b++ {
		blk := raw[b*34:]
		s[b] = graph.F16(binary.LittleEndian.Uint16(blk)).Float32()
		for j := 0; j < 32; j++ {
			q[b*32+j] = int8(blk[2+j])
		}
	}
	return q, s
}

// Q4_0 splits Q4_0 blocks (a float16 scale and 32 4-bit values, element j
// in the low nibble of byte j and element j+16 in its high nibble) into
// packed values in element order (element i in byte i/2, the low nibble
// for even i; the stored nibble is q+8) and one float32 scale per block.
func Q4_0(raw []byte) ([]uint8, []float32) {
	nb := len(raw) / 18
	q := make([]uint8, nb*16)
	s := make([]float32, nb)
	for b := 0; b < nb; b++ {
		blk := raw[b*18:]
		s[b] = graph.F16(binary.LittleEndian.Uint16(blk)).Float32()
		var vals [32]uint8
		for j := 0; j < 16; j++ {
			vals[j] = blk[2+j] & 15
			vals[j+16] = blk[2+j] >> 4
		}
		for j := 0; j < 16; j++ {
			q[b*16+j] = vals[2*j] | vals[2*j+1]<<4
		}
	}
	return q, s
}

// Uint returns an unsigned or non-negative integer metadata value.
func (f *File) Uint(key string) (uint64, bool) {
	switch v := f.Meta[key].(type) {
	case uint64:
		return v, true
	case int64:
		if v >= 0 {
			return uint64(v), true
		}
	}
	return 0, false
}

// Float returns a float metadata value.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Meta[key].(float64)
	return v, ok
}

// String returns a string metadata value.
func (f *File) String(key string) (string, bool) {
	v, ok := f.Meta[key].(string)
	return v, ok
}
