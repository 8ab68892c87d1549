package switchyard

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Tensor is a dense, row-major tensor: an element type (DType), a shape
// and the elements, a slice of the Go type of the DType ([]float32 for
// Float32, …; Values reads it). Make one with NewTensor or Zeros; the
// zero Tensor is not valid. A tensor passed to Run is read, not copied,
// and must not be modified while the run is in flight.
type Tensor struct {
	// t is the runtime's own tensor, held by value so that a *Tensor and
	// the *graph.Tensor inside it are one address: passing tensors
	// between the API and the runtime costs no copy and no allocation,
	// and a tensor the runtime updates in place (a KV cache) is the very
	// *Tensor the caller gave.
	t graph.Tensor
}

// Tensors maps input or output names to tensors.
type Tensors map[string]*Tensor

// DType is an element type (the values of ONNX TensorProto.DataType).
type DType int32

// Elem is the set of Go element types a Tensor can hold.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~bool | ~string
}

// The element types (the values of ONNX TensorProto.DataType).
const (
	// Undefined: an element type the model does not declare.
	Undefined DType = 0
	Float32   DType = 1
	Float64   DType = 11
	Float16   DType = 10 // read with Tensor.Float64At
	BFloat16  DType = 16 // read with Tensor.Float64At
	Int8      DType = 3
	Int16     DType = 5
	Int32     DType = 6
	Int64     DType = 7
	Uint8     DType = 2
	Uint16    DType = 4
	Uint32    DType = 12
	Uint64    DType = 13
	Bool      DType = 9
	String    DType = 8
)

// String is the type's name: "float32", "int64", ….
func (d DType) String() string { return graph.DType(d).String() }

// Size is the size of one element in bytes (0 for String and Undefined).
func (d DType) Size() int { return graph.DType(d).Size() }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return graph.DType(d).IsFloat() }

// IsInteger reports whether d is an integer type (Bool is not).
func (d DType) IsInteger() bool { return graph.DType(d).IsInteger() }

// NewTensor makes a tensor of shape over data (not copied: the tensor
// uses data itself). It fails with ErrInvalidTensor when len(data) is not
// the product of shape or a dimension is negative.
func NewTensor[T Elem](shape []int, data []T) (*Tensor, error) {
	t, err := graph.FromSlice(shape, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTensor, err)
	}
	return wrap(t), nil
}

// Zeros makes a zero-filled tensor of dtype and shape.
func Zeros(dt DType, shape []int) (*Tensor, error) {
	t, err := graph.New(graph.DType(dt), shape)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTensor, err)
	}
	return wrap(t), nil
}

// Values returns the tensor's elements as a []T (the tensor's own slice,
// not a copy). It fails with ErrDType when T is not the tensor's element
// type.
func Values[T Elem](t *Tensor) ([]T, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrInvalidTensor)
	}
	v, ok := t.t.Data.([]T)
	if !ok {
		var zero T
		return nil, &TensorError{Err: ErrDType, Want: t.t.DType.String(), Got: fmt.Sprintf("%T", []T{zero})}
	}
	return v, nil
}

// DType is the element type.
func (t *Tensor) DType() DType { return DType(t.t.DType) }

// Shape is the tensor's shape (its own slice: do not modify it).
func (t *Tensor) Shape() []int { return t.t.Shape }

// Len is the number of elements.
func (t *Tensor) Len() int { return t.t.Len() }

// Clone is a deep copy of the tensor.
func (t *Tensor) Clone() *Tensor { return wrap(t.t.Clone()) }

// Float64At is element i converted to float64 (a bool is 0 or 1, a string
// NaN; Float16 and BFloat16 are decoded).
func (t *Tensor) Float64At(i int) float64 { return t.t.Float64At(i) }

// Int64At is element i converted to int64 (floats truncate toward zero).
func (t *Tensor) Int64At(i int) int64 { return t.t.Int64At(i) }

// String summarises the tensor: dtype, shape and its first values.
func (t *Tensor) String() string { return t.t.String() }

// check verifies that the elements' type and count agree with the dtype
// and shape (a tensor made by the package always does; the zero Tensor
// does not).
func (t *Tensor) check() error { return t.t.Check() }

// wrap is the API's view of a runtime tensor: the same address (see
// Tensor.t), nil for nil.
func wrap(g *graph.Tensor) *Tensor {
	return (*Tensor)(unsafe.Pointer(g))
}

// unwrap is the runtime's view of an API tensor, nil for nil.
func unwrap(t *Tensor) *graph.Tensor {
	if t == nil {
		return nil
	}
	return &t.t
}

// A Tensor is exactly a graph.Tensor (wrap and unwrap depend on it).
var _ [unsafe.Sizeof(Tensor{}) - unsafe.Sizeof(graph.Tensor{})]struct{}
var _ [unsafe.Sizeof(graph.Tensor{}) - unsafe.Sizeof(Tensor{})]struct{}

// wrapAll is the API's view of a map of runtime tensors (a new map).
func wrapAll(m map[string]*graph.Tensor) Tensors {
	if m == nil {
		return nil
	}
	out := make(Tensors, len(m))
	for k, v := range m {
		out[k] = wrap(v)
	}
	return out
}

// runtimeMap is a map of runtime tensors lent for one call (see feeds).
type runtimeMap struct{ m map[string]*graph.Tensor }

var runtimeMaps = sync.Pool{New: func() any { return &runtimeMap{m: map[string]*graph.Tensor{}} }}

// feeds is ts as runtime tensors (its m), in a map from a pool so that
// a steady-state run allocates nothing for it: release it when the
// runtime is done with the map. A nil ts gives a nil map.
func feeds(ts Tensors) *runtimeMap {
	if ts == nil {
		return nil
	}
	r := runtimeMaps.Get().(*runtimeMap)
	for k, v := range ts {
		r.m[k] = unwrap(v)
	}
	return r
}

// tensors is the map (nil for a nil r).
func (r *runtimeMap) tensors() map[string]*graph.Tensor {
	if r == nil {
		return nil
	}
	return r.m
}

// release returns the map to the pool (nothing for a nil r).
func (r *runtimeMap) release() {
	if r == nil {
		return
	}
	clear(r.m)
	runtimeMaps.Put(r)
}

// copyInto copies src into dst, which must have its dtype and shape.
func copyInto(name string, dst *Tensor, src *graph.Tensor) error {
	if dst == nil {
		return &TensorError{Name: name, Err: ErrInvalidTensor, Got: "nil tensor"}
	}
	d := &dst.t
	if d.DType != src.DType {
		return &TensorError{Name: name, Err: ErrDType, Want: src.DType.String(), Got: d.DType.String()}
	}
	if !equalShape(d.Shape, src.Shape) {
		return &TensorError{Name: name, Err: ErrShape, Want: fmt.Sprint(src.Shape), Got: fmt.Sprint(d.Shape)}
	}
	dv, sv := reflect.ValueOf(d.Data), reflect.ValueOf(src.Data)
	if dv.Kind() != reflect.Slice || dv.Type() != sv.Type() || dv.Len() != sv.Len() {
		return &TensorError{Name: name, Err: ErrInvalidTensor, Want: fmt.Sprintf("%d elements of %v", sv.Len(), sv.Type()), Got: fmt.Sprintf("%T of length %d", d.Data, dv.Len())}
	}
	reflect.Copy(dv, sv)
	return nil
}

func equalShape(a, b []int) bool {
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
