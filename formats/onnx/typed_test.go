package onnx

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestTypedFields decodes a two-element tensor of every element type
// from the typed field ONNX keeps it in (int32_data, int64_data,
// uint64_data, float_data, double_data, string_data).
func TestTypedFields(t *testing.T) {
	tensor := func(dt graph.DType, field protowire.Number, vals ...uint64) []byte {
		var b []byte
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, 2)
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(dt))
		for _, v := range vals {
			switch field {
			case 4:
				b = protowire.AppendTag(b, field, protowire.Fixed32Type)
				b = protowire.AppendFixed32(b, uint32(v))
			case 10:
				b = protowire.AppendTag(b, field, protowire.Fixed64Type)
				b = protowire.AppendFixed64(b, v)
			default:
				b = protowire.AppendTag(b, field, protowire.VarintType)
				b = protowire.AppendVarint(b, v)
			}
		}
		return b
	}
	neg := func(v int64) uint64 { return uint64(v) }
	cases := []struct {
		dt    graph.DType
		field protowire.Number
		vals  []uint64
		want  string
	}{
		{graph.Int8, 5, []uint64{neg(-128), 127}, "[-128 127]"},
		{graph.Int16, 5, []uint64{neg(-2), 300}, "[-2 300]"},
		{graph.Int32, 5, []uint64{neg(-1 << 31), 7}, "[-2147483648 7]"},
		{graph.Uint8, 5, []uint64{255, 0}, "[255 0]"},
		{graph.Uint16, 5, []uint64{65535, 1}, "[65535 1]"},
		{graph.Bool, 5, []uint64{1, 0}, "[true false]"},
		{graph.Float16, 5, []uint64{0x3c00, 0xc000}, "[1 -2]"},
		{graph.BFloat16, 5, []uint64{0x3f80, 0x4040}, "[1 3]"},
		{graph.Int64, 7, []uint64{neg(-1 << 40), 5}, "[-1099511627776 5]"},
		{graph.Uint32, 11, []uint64{1 << 31, 2}, "[2147483648 2]"},
		{graph.Uint64, 11, []uint64{1 << 63, 3}, "[9223372036854775808 3]"},
		{graph.Float32, 4, []uint64{0x3fc00000, 0xbf800000}, "[1.5 -1]"},
		{graph.Float64, 10, []uint64{0x4002000000000000, 0}, "[2.25 0]"},
	}
	for _, c := range cases {
		x, _, err := DecodeTensor(tensor(c.dt, c.field, c.vals...))
		if err != nil {
			t.Errorf("%v: %v", c.dt, err)
			continue
		}
		got := fmt.Sprint(x.Data)
		if c.dt.IsFloat() {
			got = fmt.Sprint(x.Float64s())
		}
		if x.DType != c.dt || got != c.want {
			t.Errorf("%v: %v %s, want %s", c.dt, x.DType, got, c.want)
		}
	}
	// strings
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(graph.String))
	for _, s := range []string{"a", "bc"} {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	if x, _, err := DecodeTensor(b); err != nil || fmt.Sprint(x.Data) != "[a bc]" {
		t.Errorf("strings: %v %v", x, err)
	}
	// a count that does not match the shape is refused before allocating
	if _, _, err := DecodeTensor(tensor(graph.Uint32, 5, 1, 2)); err == nil {
		t.Error("uint32 values in int32_data accepted")
	}
}
