package wire_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// Descriptors from the other process are checked, never trusted.
func TestHostileDescriptors(t *testing.T) {
	mem := make([]byte, 128)
	for _, s := range []*halv1.RegionSlice{nil, {Offset: 129}, {Offset: 64, Length: 65}, {Offset: 1 << 63, Length: 1 << 63}} {
		if _, err := wire.Slice(mem, s); err == nil {
			t.Errorf("slice %v accepted", s)
		}
	}
	if _, err := wire.ViewTensor(int32(graph.Float32), []int64{33}, mem, false); err == nil {
		t.Error("33 float32 accepted in 128 bytes")
	}
	if _, err := wire.ViewTensor(int32(graph.Float32), []int64{-1}, mem, false); err == nil {
		t.Error("negative dim accepted")
	}
	if _, err := wire.ViewTensor(999, []int64{1}, mem, false); err == nil {
		t.Error("unknown dtype accepted")
	}
	if _, err := wire.ViewTensor(int32(graph.String), []int64{2}, []byte{200, 1}, false); err == nil {
		t.Error("malformed string accepted")
	}
}

func TestTensorRoundTrip(t *testing.T) {
	for _, x := range []*graph.Tensor{
		graph.MustFromSlice([]int{2, 2}, []float32{1, -2, 3.5, 4}),
		graph.MustFromSlice([]int{3}, []bool{true, false, true}),
		graph.MustFromSlice([]int{2}, []string{"a", "héllo"}),
		graph.MustFromSlice([]int{0}, []int64{}),
	} {
		buf := make([]byte, wire.ByteSize(x)+8)
		n, err := wire.WriteTensor(buf, x)
		if err != nil {
			t.Fatal(err)
		}
		y, err := wire.ViewTensor(int32(x.DType), wire.Dims(x.Shape), buf[:n], true)
		if err != nil {
			t.Fatal(err)
		}
		if x.String() != y.String() {
			t.Errorf("%v came back as %v", x, y)
		}
	}
}
