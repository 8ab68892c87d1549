package graph

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"
)

// MaxTensorBytes bounds the size of any single tensor Switchyard allocates.
// Shapes whose byte size exceeds it are refused before allocation. It is a
// constant: a loader narrows it per model (runtime.Options.MaxTensorBytes,
// onnx.Options.MaxTensorBytes) through CheckAllocLimit, never process-wide.
const MaxTensorBytes int64 = 8 << 30

// ErrTooLarge is returned (wrapped) when a shape is too large to allocate.
var ErrTooLarge error = kindError{"tensor too large", ErrResourceExhausted}

// Tensor is a dense, row-major tensor. Data holds a slice of the Go type
// that matches DType (see DType.GoType); len(Data) == NumElements(Shape).
type Tensor struct {
	DType DType
	Shape []int
	Data  any
}

// Elem is the set of Go element types a Tensor can hold.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~bool | ~string
}

// Numeric are the element types with arithmetic (F16/BF16 excluded: convert
// them to float32 first).
type Numeric interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64
}

// NumElements multiplies the dims; it returns an error for negative dims or
// overflow.
func NumElements(shape []int) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("graph: negative dimension %d in shape %v", d, slices.Clone(shape))
		}
		if d == 0 {
			n = 0
			continue
		}
		// n·d overflows int64 (without a division: this runs for every
		// tensor a kernel makes)
		if hi, lo := bits.Mul64(uint64(n), uint64(d)); hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("graph: shape %v: %w (element count overflows)", slices.Clone(shape), ErrTooLarge)
		}
		n *= int64(d)
	}
	if n > math.MaxInt32*8 {
		return 0, fmt.Errorf("graph: shape %v has %d elements: %w", slices.Clone(shape), n, ErrTooLarge)
	}
	return int(n), nil
}

// CheckAlloc verifies that a tensor of this dtype and shape may be allocated
// under MaxTensorBytes.
func CheckAlloc(dt DType, shape []int) (int, error) {
	return CheckAllocLimit(dt, shape, MaxTensorBytes)
}

// EffectiveLimit is the per-tensor byte limit a caller's setting stands
// for: limit when 0 < limit < MaxTensorBytes, else MaxTensorBytes.
func EffectiveLimit(limit int64) int64 {
	if limit <= 0 || limit > MaxTensorBytes {
		return MaxTensorBytes
	}
	return limit
}

// CheckAllocLimit is CheckAlloc against a per-model limit of limit bytes
// (see EffectiveLimit: 0 means MaxTensorBytes, and nothing raises it).
func CheckAllocLimit(dt DType, shape []int, limit int64) (int, error) {
	limit = EffectiveLimit(limit)
	n, err := NumElements(shape)
	if err != nil {
		return 0, err
	}
	es := int64(dt.Size())
	if dt == String {
		es = 16
	}
	if es == 0 {
		return 0, fmt.Errorf("graph: dtype %v is not supported", dt)
	}
	if int64(n)*es > limit {
		return 0, fmt.Errorf("graph: %v tensor of shape %v needs %d bytes, limit %d: %w", dt, slices.Clone(shape), int64(n)*es, limit, ErrTooLarge)
	}
	return n, nil
}

// MakeSlice allocates a zeroed slice of n elements of dt's Go type.
func MakeSlice(dt DType, n int) (any, error) {
	switch dt {
	case Float32:
		return make([]float32, n), nil
	case Float64:
		return make([]float64, n), nil
	case Float16:
		return make([]F16, n), nil
	case BFloat16:
		return make([]BF16, n), nil
	case Int8:
		return make([]int8, n), nil
	case Int16:
		return make([]int16, n), nil
	case Int32:
		return make([]int32, n), nil
	case Int64:
		return make([]int64, n), nil
	case Uint8:
		return make([]uint8, n), nil
	case Uint16:
		return make([]uint16, n), nil
	case Uint32:
		return make([]uint32, n), nil
	case Uint64:
		return make([]uint64, n), nil
	case Bool:
		return make([]bool, n), nil
	case String:
		return make([]string, n), nil
	}
	return nil, fmt.Errorf("graph: dtype %v is not supported", dt)
}

// New allocates a zero tensor, refusing shapes that are too large.
func New(dt DType, shape []int) (*Tensor, error) {
	n, err := CheckAlloc(dt, shape)
	if err != nil {
		return nil, err
	}
	data, err := MakeSlice(dt, n)
	if err != nil {
		return nil, err
	}
	return &Tensor{DType: dt, Shape: append([]int{}, shape...), Data: data}, nil
}

// DTypeOf returns the DType for a Go slice type, or Undefined.
func DTypeOf(data any) DType {
	switch data.(type) {
	case []float32:
		return Float32
	case []float64:
		return Float64
	case []F16:
		return Float16
	case []BF16:
		return BFloat16
	case []int8:
		return Int8
	case []int16:
		return Int16
	case []int32:
		return Int32
	case []int64:
		return Int64
	case []uint8:
		return Uint8
	case []uint16:
		return Uint16
	case []uint32:
		return Uint32
	case []uint64:
		return Uint64
	case []bool:
		return Bool
	case []string:
		return String
	}
	return Undefined
}

// FromSlice wraps data (not copied) in a tensor of the given shape.
func FromSlice[T Elem](shape []int, data []T) (*Tensor, error) {
	dt := DTypeOf(any(data))
	if dt == Undefined {
		return nil, fmt.Errorf("graph: unsupported element type %T", data)
	}
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if n != len(data) {
		return nil, fmt.Errorf("graph: shape %v needs %d elements, got %d", shape, n, len(data))
	}
	return &Tensor{DType: dt, Shape: append([]int{}, shape...), Data: data}, nil
}

// MustFromSlice is FromSlice for tests and literals; it panics on mismatch.
func MustFromSlice[T Elem](shape []int, data []T) *Tensor {
	t, err := FromSlice(shape, data)
	if err != nil {
		panic(err)
	}
	return t
}

// Scalar makes a rank-0 tensor.
func Scalar[T Elem](v T) *Tensor { return MustFromSlice([]int{}, []T{v}) }

// Data returns t's elements as []T; it panics if T does not match t.DType,
// which is a programming error inside a kernel.
func Data[T Elem](t *Tensor) []T { return t.Data.([]T) }

// Len is the number of elements.
func (t *Tensor) Len() int {
	switch d := t.Data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []F16:
		return len(d)
	case []BF16:
		return len(d)
	case []int8:
		return len(d)
	case []int16:
		return len(d)
	case []int32:
		return len(d)
	case []int64:
		return len(d)
	case []uint8:
		return len(d)
	case []uint16:
		return len(d)
	case []uint32:
		return len(d)
	case []uint64:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	}
	return 0
}

// Rank is len(Shape).
func (t *Tensor) Rank() int { return len(t.Shape) }

// Check verifies that Data's type and length agree with DType and Shape.
func (t *Tensor) Check() error {
	if t == nil {
		return errors.New("graph: nil tensor")
	}
	if got := DTypeOf(t.Data); got != t.DType {
		return fmt.Errorf("graph: tensor dtype %v holds %T", t.DType, t.Data)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return err
	}
	if n != t.Len() {
		return fmt.Errorf("graph: tensor shape %v needs %d elements, holds %d", t.Shape, n, t.Len())
	}
	return nil
}

// Clone deep-copies the tensor.
func (t *Tensor) Clone() *Tensor {
	c := &Tensor{DType: t.DType, Shape: append([]int{}, t.Shape...)}
	data, _ := MakeSlice(t.DType, t.Len())
	CopyData(data, t.Data)
	c.Data = data
	return c
}

// CopyData copies src into dst (same slice type); returns elements copied.
func CopyData(dst, src any) int {
	switch d := dst.(type) {
	case []float32:
		return copy(d, src.([]float32))
	case []float64:
		return copy(d, src.([]float64))
	case []F16:
		return copy(d, src.([]F16))
	case []BF16:
		return copy(d, src.([]BF16))
	case []int8:
		return copy(d, src.([]int8))
	case []int16:
		return copy(d, src.([]int16))
	case []int32:
		return copy(d, src.([]int32))
	case []int64:
		return copy(d, src.([]int64))
	case []uint8:
		return copy(d, src.([]uint8))
	case []uint16:
		return copy(d, src.([]uint16))
	case []uint32:
		return copy(d, src.([]uint32))
	case []uint64:
		return copy(d, src.([]uint64))
	case []bool:
		return copy(d, src.([]bool))
	case []string:
		return copy(d, src.([]string))
	}
	return 0
}

// Float64At returns element i converted to float64 (bool → 0/1; string → NaN).
func (t *Tensor) Float64At(i int) float64 {
	switch d := t.Data.(type) {
	case []float32:
		return float64(d[i])
	case []float64:
		return d[i]
	case []F16:
		return float64(d[i].Float32())
	case []BF16:
		return float64(d[i].Float32())
	case []int8:
		return float64(d[i])
	case []int16:
		return float64(d[i])
	case []int32:
		return float64(d[i])
	case []int64:
		return float64(d[i])
	case []uint8:
		return float64(d[i])
	case []uint16:
		return float64(d[i])
	case []uint32:
		return float64(d[i])
	case []uint64:
		return float64(d[i])
	case []bool:
		if d[i] {
			return 1
		}
		return 0
	}
	return math.NaN()
}

// Int64At returns element i converted to int64 (floats truncate).
func (t *Tensor) Int64At(i int) int64 {
	switch d := t.Data.(type) {
	case []int64:
		return d[i]
	case []int32:
		return int64(d[i])
	case []int8:
		return int64(d[i])
	case []int16:
		return int64(d[i])
	case []uint8:
		return int64(d[i])
	case []uint16:
		return int64(d[i])
	case []uint32:
		return int64(d[i])
	case []uint64:
		return int64(d[i])
	case []bool:
		if d[i] {
			return 1
		}
		return 0
	}
	return int64(t.Float64At(i))
}

// Int64s returns all elements as int64 (for shape-like inputs).
func (t *Tensor) Int64s() []int64 {
	if d, ok := t.Data.([]int64); ok {
		return append([]int64{}, d...)
	}
	n := t.Len()
	out := make([]int64, n)
	for i := range out {
		out[i] = t.Int64At(i)
	}
	return out
}

// Float64s returns all elements converted to float64.
func (t *Tensor) Float64s() []float64 {
	n := t.Len()
	out := make([]float64, n)
	for i := range out {
		out[i] = t.Float64At(i)
	}
	return out
}

// SetFloat64 stores v (converted, with Go conversion semantics; floats to
// integers truncate toward zero) at element i.
func (t *Tensor) SetFloat64(i int, v float64) {
	switch d := t.Data.(type) {
	case []float32:
		d[i] = float32(v)
	case []float64:
		d[i] = v
	case []F16:
		d[i] = F16FromFloat64(v)
	case []BF16:
		d[i] = BF16FromFloat32(float32(v))
	case []int8:
		d[i] = int8(v)
	case []int16:
		d[i] = int16(v)
	case []int32:
		d[i] = int32(v)
	case []int64:
		d[i] = int64(v)
	case []uint8:
		d[i] = uint8(v)
	case []uint16:
		d[i] = uint16(v)
	case []uint32:
		d[i] = uint32(v)
	case []uint64:
		d[i] = uint64(v)
	case []bool:
		d[i] = v != 0
	}
}

// FromFloat64s builds a tensor of dtype dt from float64 values.
func FromFloat64s(dt DType, shape []int, vals []float64) (*Tensor, error) {
	t, err := New(dt, shape)
	if err != nil {
		return nil, err
	}
	if len(vals) != t.Len() {
		return nil, fmt.Errorf("graph: shape %v needs %d values, got %d", shape, t.Len(), len(vals))
	}
	for i, v := range vals {
		t.SetFloat64(i, v)
	}
	return t, nil
}

// String summarises the tensor (dtype, shape and up to 8 values).
func (t *Tensor) String() string {
	if t == nil {
		return "<nil tensor>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v%v[", t.DType, t.Shape)
	n := t.Len()
	for i := 0; i < n && i < 8; i++ {
		if i > 0 {
			b.WriteString(" ")
		}
		if s, ok := t.Data.([]string); ok {
			fmt.Fprintf(&b, "%q", s[i])
		} else if t.DType.IsFloat() {
			fmt.Fprintf(&b, "%g", t.Float64At(i))
		} else if t.DType == Bool {
			fmt.Fprintf(&b, "%v", t.Float64At(i) != 0)
		} else {
			fmt.Fprintf(&b, "%d", t.Int64At(i))
		}
	}
	if n > 8 {
		b.WriteString(" …")
	}
	b.WriteString("]")
	return b.String()
}

// SameShape reports whether two shapes are equal.
func SameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// RawBytes views a tensor's storage as bytes (host byte order, no copy).
// Bool tensors are one byte per element. It returns false for strings.
func RawBytes(t *Tensor) ([]byte, bool) {
	n := t.Len() * t.DType.Size()
	if n == 0 {
		_, isStr := t.Data.([]string)
		return nil, !isStr
	}
	var p unsafe.Pointer
	switch d := t.Data.(type) {
	case []float32:
		p = unsafe.Pointer(&d[0])
	case []float64:
		p = unsafe.Pointer(&d[0])
	case []F16:
		p = unsafe.Pointer(&d[0])
	case []BF16:
		p = unsafe.Pointer(&d[0])
	case []int8:
		p = unsafe.Pointer(&d[0])
	case []int16:
		p = unsafe.Pointer(&d[0])
	case []int32:
		p = unsafe.Pointer(&d[0])
	case []int64:
		p = unsafe.Pointer(&d[0])
	case []uint8:
		p = unsafe.Pointer(&d[0])
	case []uint16:
		p = unsafe.Pointer(&d[0])
	case []uint32:
		p = unsafe.Pointer(&d[0])
	case []uint64:
		p = unsafe.Pointer(&d[0])
	case []bool:
		p = unsafe.Pointer(&d[0])
	default:
		return nil, false
	}
	return unsafe.Slice((*byte)(p), n), true
}

// SliceData returns x[lo:hi] for any tensor data slice (nil for other types).
func SliceData(x any, lo, hi int) any {
	switch d := x.(type) {
	case []float32:
		return d[lo:hi]
	case []float64:
		return d[lo:hi]
	case []F16:
		return d[lo:hi]
	case []BF16:
		return d[lo:hi]
	case []int8:
		return d[lo:hi]
	case []int16:
		return d[lo:hi]
	case []int32:
		return d[lo:hi]
	case []int64:
		return d[lo:hi]
	case []uint8:
		return d[lo:hi]
	case []uint16:
		return d[lo:hi]
	case []uint32:
		return d[lo:hi]
	case []uint64:
		return d[lo:hi]
	case []bool:
		return d[lo:hi]
	case []string:
		return d[lo:hi]
	}
	return nil
}

// CopyRange copies n elements from src[so:] to dst[do:] (same slice type).
func CopyRange(dst any, do int, src any, so, n int) {
	if n <= 0 {
		return
	}
	CopyData(SliceData(dst, do, do+n), SliceData(src, so, so+n))
}
