// Package gguf reads GGUF files (the llama.cpp model format, versions 2
// and 3): the metadata key-value pairs, the tensor directory and the
// tensor data, with exact dequantisation of the tensor types llama.cpp's
// quantizer writes for the common presets: F32, F16, BF16, Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (core/ggml describes
// their block layouts). It knows nothing of model architectures
// (formats/llama builds graphs from what it reads) beyond the conventions
// every GGUF file follows and llama.cpp's loader checks:
// <arch>.block_count against the blk.N tensors, the tokenizer's size
// against token_embd.weight.
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
	"math/bits"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// ErrFormat marks a malformed GGUF file.
var ErrFormat = errors.New("gguf: malformed file")

// Tensor types (ggml_type) this package reads.
const (
	TypeF32  = uint32(ggml.F32)
	TypeF16  = uint32(ggml.F16)
	TypeQ4_0 = uint32(ggml.Q4_0)
	TypeQ4_1 = uint32(ggml.Q4_1)
	TypeQ5_0 = uint32(ggml.Q5_0)
	TypeQ5_1 = uint32(ggml.Q5_1)
	TypeQ8_0 = uint32(ggml.Q8_0)
	TypeQ2_K = uint32(ggml.Q2_K)
	TypeQ3_K = uint32(ggml.Q3_K)
	TypeQ4_K = uint32(ggml.Q4_K)
	TypeQ5_K = uint32(ggml.Q5_K)
	TypeQ6_K = uint32(ggml.Q6_K)
	TypeBF16 = uint32(ggml.BF16)
)

// TypeName names a ggml tensor type ("Q4_K", or ggml_type(N) for one this
// package does not know).
func TypeName(t uint32) string { return ggml.Type(t).String() }

// readable reports whether t is a tensor type this package reads.
func readable(t uint32) bool {
	g := ggml.Type(t)
	return g == ggml.F32 || g == ggml.F16 || g == ggml.BF16 || g.Quantized()
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
	// Meta holds the metadata: scalars uint8..int64 as uint64/int64,
	// float32/64 as float64, bool, string; arrays as typed slices of
	// their element type ([]uint8 … []float64, []bool, []string; []any
	// of arrays for nested ones).
	Meta    map[string]any
	Keys    []string // metadata keys in file order
	Tensors []TensorInfo
	byName  map[string]int
	data    []byte // the data section
}

// IsGGUF reports whether head starts with the GGUF magic.
func IsGGUF(head []byte) bool { return len(head) >= 4 && string(head[:4]) == Magic }

// ReadFile reads and parses a GGUF file.
func ReadFile(path string) (*File, error) {
	data, err := regular.ReadFile(path, 0)
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
		return r.array(et, int(n), key, depth)
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

// fixed reads n elements of size bytes each with get (nil, and r.err
// set, when they do not fit).
func fixed[T any](r *reader, n, size int, key string, get func([]byte) T) []T {
	if !r.need(uint64(n)*uint64(size), key) {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(r.b[r.off+i*size:])
	}
	r.off += n * size
	return out
}

// array reads an array of n elements of type et as a typed slice —
// []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
// []bool, []string, []uint64, []int64, []float64, or []any of arrays —
// so it takes about as much memory as it does in the file (an []any of
// boxed values took ~57 times a uint8 array's size). n was checked
// against the bytes left.
func (r *reader) array(et uint32, n int, key string, depth int) any {
	le := binary.LittleEndian
	switch et {
	case 0:
		return fixed(r, n, 1, key, func(b []byte) uint8 { return b[0] })
	case 1:
		return fixed(r, n, 1, key, func(b []byte) int8 { return int8(b[0]) })
	case 2:
		return fixed(r, n, 2, key, func(b []byte) uint16 { return le.Uint16(b) })
	case 3:
		return fixed(r, n, 2, key, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case 4:
		return fixed(r, n, 4, key, func(b []byte) uint32 { return le.Uint32(b) })
	case 5:
		return fixed(r, n, 4, key, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case 6:
		return fixed(r, n, 4, key, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case 7:
		return fixed(r, n, 1, key, func(b []byte) bool { return b[0] != 0 })
	case 10:
		return fixed(r, n, 8, key, func(b []byte) uint64 { return le.Uint64(b) })
	case 11:
		return fixed(r, n, 8, key, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case 12:
		return fixed(r, n, 8, key, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	case 8:
		// every string takes at least its 8-byte length
		if !r.need(uint64(n)*8, key) {
			return nil
		}
		out := make([]string, n)
		for i := range out {
			if out[i] = r.str(key); r.err != nil {
				return nil
			}
		}
		return out
	case 9:
		// every array takes at least its 12-byte header
		if !r.need(uint64(n)*12, key) {
			return nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i] = r.value(9, key, depth+1); r.err != nil {
				return nil
			}
		}
		return out
	}
	r.err = fmt.Errorf("%w: %s: array of unknown element type %d", ErrFormat, key, et)
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
			if _, dup := f.Meta[k]; dup {
				return nil, fmt.Errorf("%w: metadata key %q appears twice", ErrFormat, k)
			}
			if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
				return nil, fmt.Errorf("%w: metadata %s is %v", ErrFormat, k, x)
			}
			f.Keys = append(f.Keys, k)
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
		// at least one bit per element, whatever the type: the count
		// is checked (and cannot overflow) before any size is computed
		n := uint64(1)
		for _, d := range ti.Dims {
			hi, lo := bits.Mul64(n, d)
			if hi != 0 || lo > 8*uint64(len(data)) {
				return nil, fmt.Errorf("%w: tensor %q: dims %v hold more elements than a %d-byte file can", ErrFormat, ti.Name, ti.Dims, len(data))
			}
			n = lo
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
	if len(f.Tensors) == 0 && start > uint64(len(data)) {
		// no tensors (a vocabulary-only file): llama.cpp writes no padding
		// after the metadata, so the empty data section is the file's end
		start = uint64(len(data))
	}
	if start > uint64(len(data)) {
		return nil, fmt.Errorf("%w: the data section starts past the end of the file", ErrFormat)
	}
	f.data = data[start:]
	for _, ti := range f.Tensors {
		if ti.Offset > uint64(len(f.data)) || ti.Size > uint64(len(f.data))-ti.Offset {
			return nil, fmt.Errorf("%w: tensor %q (%d bytes at %d) runs past the end of the data (%d bytes)", ErrFormat, ti.Name, ti.Size, ti.Offset, len(f.data))
		}
		if ti.Offset%align != 0 {
			return nil, fmt.Errorf("%w: tensor %q at offset %d is not aligned to %d bytes", ErrFormat, ti.Name, ti.Offset, align)
		}
	}
	if err := f.validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// validate refuses what llama.cpp's loader refuses beyond the layout:
// tensors whose data overlap, a block count other than the layers whose
// tensors are present, a vocabulary whose size is not the embedding's
// row count.
func (f *File) validate() error {
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return f.Tensors[order[a]].Offset < f.Tensors[order[b]].Offset })
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if q.Offset < p.Offset+p.Size && q.Size > 0 && p.Size > 0 {
			return fmt.Errorf("%w: tensors %q (%d bytes at %d) and %q (at %d) overlap", ErrFormat, p.Name, p.Size, p.Offset, q.Name, q.Offset)
		}
	}
	arch, _ := f.String("general.architecture")
	if bc, ok := f.Meta[arch+".block_count"]; ok && arch != "" {
		n, ok := f.Uint(arch + ".block_count")
		if !ok {
			return fmt.Errorf("%w: %s.block_count is %v", ErrFormat, arch, bc)
		}
		layers := uint64(0)
		for _, ti := range f.Tensors {
			rest, ok := strings.CutPrefix(ti.Name, "blk.")
			if !ok {
				continue
			}
			num, _, _ := strings.Cut(rest, ".")
			l, err := strconv.ParseUint(num, 10, 32)
			if err != nil {
				continue
			}
			layers = max(layers, l+1)
		}
		if layers > 0 && layers != n {
			return fmt.Errorf("%w: %s.block_count is %d, the file has tensors for %d layers", ErrFormat, arch, n, layers)
		}
	}
	if toks, ok := f.Meta["tokenizer.ggml.tokens"].([]string); ok {
		if emb, ok := f.Tensor("token_embd.weight"); ok && len(emb.Dims) == 2 && emb.Dims[1] != uint64(len(toks)) {
			return fmt.Errorf("%w: tokenizer.ggml.tokens has %d tokens, token_embd.weight has %d rows", ErrFormat, len(toks), emb.Dims[1])
		}
	}
	return nil
}

func byteSize(t uint32, n uint64, dims []uint64) (uint64, error) {
	if !readable(t) {
		return 0, fmt.Errorf("tensor type %s is not supported (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K are)", TypeName(t))
	}
	g := ggml.Type(t)
	bs := uint64(g.BlockSize())
	if len(dims) == 0 || dims[0]%bs != 0 {
		return 0, fmt.Errorf("%s rows of %v are not whole %d-element blocks", g, dims, bs)
	}
	return n / bs * uint64(g.BlockBytes()), nil
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

// Float32s dequantises a tensor to float32, exactly as ggml does (F16,
// BF16 and the block scales convert without rounding; core/ggml's
// Dequantize gives each type's values).
func (f *File) Float32s(t *TensorInfo) ([]float32, error) {
	if !readable(t.Type) {
		return nil, fmt.Errorf("gguf: tensor %q: type %s cannot be read", t.Name, TypeName(t.Type))
	}
	out := make([]float32, t.Elements())
	if err := ggml.Dequantize(ggml.Type(t.Type), f.Raw(t), out); err != nil {
		return nil, fmt.Errorf("gguf: tensor %q: %v", t.Name, err)
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

// Strings is a string-array metadata value (ok false when absent or of
// another type).
func (f *File) Strings(key string) ([]string, bool) {
	v, ok := f.Meta[key].([]string)
	return v, ok
}

// Bools is a bool-array metadata value (ok false when absent or of another
// type).
func (f *File) Bools(key string) ([]bool, bool) {
	v, ok := f.Meta[key].([]bool)
	return v, ok
}

// Numbers is a numeric-array metadata value of any element type, as
// float64 (ok false when absent or not numeric). It copies: call it once
// per key.
func (f *File) Numbers(key string) ([]float64, bool) {
	a := reflect.ValueOf(f.Meta[key])
	if a.Kind() != reflect.Slice {
		return nil, false
	}
	// the reader holds arrays as typed slices ([]uint8 … []float64)
	var get func(reflect.Value) float64
	switch a.Type().Elem().Kind() {
	case reflect.Float32, reflect.Float64:
		get = reflect.Value.Float
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		get = func(v reflect.Value) float64 { return float64(v.Int()) }
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		get = func(v reflect.Value) float64 { return float64(v.Uint()) }
	default:
		return nil, false
	}
	out := make([]float64, a.Len())
	for i := range out {
		out[i] = get(a.Index(i))
	}
	return out, true
}
