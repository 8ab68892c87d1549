package switchyard

import (
	"fmt"
	"reflect"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Tensor is a dense, row-major tensor: DType, Shape and Data, a slice of
// the Go type of DType ([]float32 for Float32, …). It is the runtime's own
// tensor type, so passing one costs no conversion.
type Tensor = graph.Tensor

// Tensors maps input or output names to tensors.
type Tensors = map[string]*Tensor

// DType is an element type (the values of ONNX TensorProto.DataType).
type DType = graph.DType

// Elem is the set of Go element types a Tensor can hold.
type Elem = graph.Elem

// The element types.
const (
	// Undefined: an element type the model does not declare.
	Undefined DType = graph.Undefined
	Float32   DType = graph.Float32
	Float64   DType = graph.Float64
	Float16   DType = graph.Float16
	Int8      DType = graph.Int8
	Int16     DType = graph.Int16
	Int32     DType = graph.Int32
	Int64     DType = graph.Int64
	Uint8     DType = graph.Uint8
	Uint16    DType = graph.Uint16
	Uint32    DType = graph.Uint32
	Uint64    DType = graph.Uint64
	Bool      DType = graph.Bool
	String    DType = graph.String
)

// NewTensor makes a tensor of shape over data (not copied: the tensor
// uses data itself). It fails with ErrInvalidTensor when len(data) is not
// the product of shape or a dimension is negative.
func NewTensor[T Elem](shape []int, data []T) (*Tensor, error) {
	t, err := graph.FromSlice(shape, data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTensor, err)
	}
	return t, nil
}

// Zeros makes a zero-filled tensor of dtype and shape.
func Zeros(dt DType, shape []int) (*Tensor, error) {
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTensor, err)
	}
	return t, nil
}

// Values returns the tensor's elements as a []T (the tensor's own slice,
// not a copy). It fails with ErrDType when T is not the tensor's element
// type.
func Values[T Elem](t *Tensor) ([]T, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrInvalidTensor)
	}
	v, ok := t.Data.([]T)
	if !ok {
		var zero T
		return nil, &TensorError{Err: ErrDType, Want: t.DType.String(), Got: fmt.Sprintf("%T", []T{zero})}
	}
	return v, nil
}

// copyInto copies src into dst, which must have its dtype and shape.
func copyInto(name string, dst, src *Tensor) error {
	if dst == nil {
		return &TensorError{Name: name, Err: ErrInvalidTensor, Got: "nil tensor"}
	}
	if dst.DType != src.DType {
		return &TensorError{Name: name, Err: ErrDType, Want: src.DType.String(), Got: dst.DType.String()}
	}
	if !equalShape(dst.Shape, src.Shape) {
		return &TensorError{Name: name, Err: ErrShape, Want: fmt.Sprint(src.Shape), Got: fmt.Sprint(dst.Shape)}
	}
	d, s := reflect.ValueOf(dst.Data), reflect.ValueOf(src.Data)
	if d.Kind() != reflect.Slice || d.Type() != s.Type() || d.Len() != s.Len() {
		return &TensorError{Name: name, Err: ErrInvalidTensor, Want: fmt.Sprintf("%d elements of %v", s.Len(), s.Type()), Got: fmt.Sprintf("%T of length %d", dst.Data, d.Len())}
	}
	reflect.Copy(d, s)
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
