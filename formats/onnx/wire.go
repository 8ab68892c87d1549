package onnx

import (
	"errors"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one decoded protobuf field.
type field struct {
	num protowire.Number
	typ protowire.Type
	u   uint64 // varint, fixed32, fixed64 payloads
	b   []byte // bytes payload (aliases the input)
}

// pick returns, in slot i, the last field of message b numbered nums[i]
// (the zero field when absent), as proto3 merges a repeated scalar.
func pick(b []byte, nums ...protowire.Number) ([]field, error) {
	out := make([]field, len(nums))
	err := forEach(b, func(e field) error {
		for i, n := range nums {
			if e.num == n {
				out[i] = e
			}
		}
		return nil
	})
	return out, err
}

var errTruncated = errors.New("truncated or malformed protobuf")

// forEach walks the fields of a message, calling fn for each.
func forEach(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: bad tag: %v", errTruncated, protowire.ParseError(n))
		}
		b = b[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errTruncated, num, protowire.ParseError(n))
			}
			f.u, b = v, b[n:]
		case protowire.Fixed32Type:
			v, n := protowire.ConsumeFixed32(b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errTruncated, num, protowire.ParseError(n))
			}
			f.u, b = uint64(v), b[n:]
		case protowire.Fixed64Type:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errTruncated, num, protowire.ParseError(n))
			}
			f.u, b = v, b[n:]
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errTruncated, num, protowire.ParseError(n))
			}
			f.b, b = v, b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %v", errTruncated, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// appendInts decodes a repeated int64/int32/uint64 field in packed or
// unpacked form.
func appendInts(dst []int64, f field) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.u)), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: packed varints", errTruncated)
			}
			dst = append(dst, int64(v))
			b = b[n:]
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%w: field %d has wire type %d, want varint", errTruncated, f.num, f.typ)
}

func appendFloats(dst []float32, f field) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.u))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("%w: packed floats length %d", errTruncated, len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			dst = append(dst, math.Float32frombits(le32(f.b[i:])))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%w: field %d has wire type %d, want fixed32", errTruncated, f.num, f.typ)
}

func appendDoubles(dst []float64, f field) ([]float64, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return append(dst, math.Float64frombits(f.u)), nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return nil, fmt.Errorf("%w: packed doubles length %d", errTruncated, len(f.b))
		}
		for i := 0; i < len(f.b); i += 8 {
			dst = append(dst, math.Float64frombits(le64(f.b[i:])))
		}
		return dst, nil
	}
	return nil, fmt.Errorf("%w: field %d has wire type %d, want fixed64", errTruncated, f.num, f.typ)
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

func wantBytes(f field, what string) error {
	if f.typ != protowire.BytesType {
		return fmt.Errorf("%w: %s (field %d) has wire type %d, want bytes", errTruncated, what, f.num, f.typ)
	}
	return nil
}

func wantVarint(f field, what string) error {
	if f.typ != protowire.VarintType {
		return fmt.Errorf("%w: %s (field %d) has wire type %d, want varint", errTruncated, what, f.num, f.typ)
	}
	return nil
}
