// Package graph is Switchyard's model intermediate representation: data types,
// tensors, shapes with static and symbolic dimensions, nodes with typed
// attributes, graphs (including nested If/Loop bodies) and models.
//
// Contracts:
//   - DType values use the ONNX TensorProto.DataType numbering, so importers
//     and wire formats can carry them unchanged.
//   - A Tensor's Data is always a Go slice whose element type matches its
//     DType (see DType.GoType) and whose length equals the product of Shape.
//   - Validate reports structural problems (dangling references, cycles,
//     duplicate definitions, type mismatches) as errors; it never panics.
package graph

import "fmt"

// DType is an element type. Values follow ONNX TensorProto.DataType.
type DType int32

const (
	Undefined  DType = 0
	Float32    DType = 1
	Uint8      DType = 2
	Int8       DType = 3
	Uint16     DType = 4
	Int16      DType = 5
	Int32      DType = 6
	Int64      DType = 7
	String     DType = 8
	Bool       DType = 9
	Float16    DType = 10
	Float64    DType = 11
	Uint32     DType = 12
	Uint64     DType = 13
	Complex64  DType = 14
	Complex128 DType = 15
	BFloat16   DType = 16
)

var dtypeNames = map[DType]string{
	Undefined: "undefined", Float32: "float32", Uint8: "uint8", Int8: "int8",
	Uint16: "uint16", Int16: "int16", Int32: "int32", Int64: "int64",
	String: "string", Bool: "bool", Float16: "float16", Float64: "float64",
	Uint32: "uint32", Uint64: "uint64", Complex64: "complex64",
	Complex128: "complex128", BFloat16: "bfloat16",
	// types Switchyard recognises by name but cannot hold
	17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
	21: "uint4", 22: "int4", 23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2",
}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("dtype(%d)", int32(d))
}

// ParseDType maps a name such as "float32" back to its DType.
func ParseDType(s string) (DType, bool) {
	for d, n := range dtypeNames {
		if n == s {
			return d, true
		}
	}
	return Undefined, false
}

// Supported reports whether tensors of this dtype can be created and computed
// on by Switchyard (complex types and 8-bit floats are not).
func (d DType) Supported() bool {
	switch d {
	case Float32, Uint8, Int8, Uint16, Int16, Int32, Int64, String, Bool,
		Float16, Float64, Uint32, Uint64, BFloat16:
		return true
	}
	return false
}

// Size is the element size in bytes; 0 for String and unsupported types.
func (d DType) Size() int {
	switch d {
	case Bool, Uint8, Int8:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float32, Int32, Uint32:
		return 4
	case Float64, Int64, Uint64:
		return 8
	}
	return 0
}

// IsFloat reports float16, bfloat16, float32 and float64.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float64 || d == Float16 || d == BFloat16
}

// IsInteger reports signed and unsigned integer types (not bool).
func (d DType) IsInteger() bool {
	switch d {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Uint32, Uint64:
		return true
	}
	return false
}

// IsSigned reports signed integers and floats.
func (d DType) IsSigned() bool {
	switch d {
	case Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64:
		return true
	}
	return false
}

// IsNumeric reports integer and float types.
func (d DType) IsNumeric() bool { return d.IsFloat() || d.IsInteger() }
