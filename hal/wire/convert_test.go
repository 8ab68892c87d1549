package wire_test

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
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

// A plugin's error message of any size arrives bounded, with a note.
func TestErrorMessagesBounded(t *testing.T) {
	huge := strings.Repeat("é", 32<<20) // 64 MiB, multi-byte characters
	for name, err := range map[string]error{
		"status":    wire.ErrorOf(&halv1.Status{Code: int32(hal.CodeInternal), Message: huge}),
		"transport": wire.TransportError(context.Background(), status.Error(codes.Internal, huge)),
		"bounded":   wire.Bounded(errors.New(huge)),
	} {
		msg := err.Error()
		if len(msg) > wire.MaxErrorMessage+200 || !strings.Contains(msg, "truncated") || !utf8.ValidString(msg) {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", name, len(msg), utf8.ValidString(msg))
		}
	}
	once := wire.TruncateMessage(huge)
	if wire.TruncateMessage(once) != once {
		t.Error("a truncated message is truncated again")
	}
	if s := wire.StatusOf(errors.New(huge)); len(s.Message) > wire.MaxErrorMessage+200 {
		t.Errorf("StatusOf: %d bytes", len(s.Message))
	}
	if err := wire.ErrorOf(&halv1.Status{Code: 77, Message: "x"}); !errors.Is(err, hal.ErrInternal) || !strings.Contains(err.Error(), "77") {
		t.Errorf("unknown code: %v", err)
	}
}

// Output descriptors are checked against the inferred type, and their
// size bounded, before anything is read.
func TestCheckOutput(t *testing.T) {
	f32x4 := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}
	dyn := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}}}
	desc := func(dt graph.DType, length uint64, dims ...int64) *halv1.TensorDesc {
		return &halv1.TensorDesc{Dtype: int32(dt), Shape: dims, Data: &halv1.RegionSlice{Region: 1, Length: length}}
	}
	for _, tc := range []struct {
		d    *halv1.TensorDesc
		want graph.ValueType
		err  string
	}{
		{desc(graph.Float32, 16, 4), f32x4, ""},
		{desc(graph.Float32, 64, 16), dyn, ""},
		{desc(graph.Float64, 32, 4), f32x4, "returned float64[4], the subgraph declares float32[4]"},
		{desc(graph.Float32, 16, 1, 4), f32x4, "rank"},
		{desc(graph.Float32, 20, 5), f32x4, "dim 0"},
		{desc(graph.Float32, 1<<30, 1<<28), f32x4, "float32[268435456]"},
		{desc(graph.Float32, 12, 4), f32x4, "in 12 bytes, it takes 16"},
		{desc(graph.Float32, 1<<40, 1<<38), dyn, "too large"},
		{desc(graph.Float32, 16, -4), dyn, "bad shape"},
		{desc(99, 16, 4), dyn, "unknown dtype"},
		{&halv1.TensorDesc{Dtype: int32(graph.Float32)}, f32x4, "no descriptor"},
	} {
		_, _, _, err := wire.CheckOutput(tc.d, tc.want)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v vs %v: %v, want %q", tc.d, tc.want, err, tc.err)
		}
	}
}

// A string tensor claiming more elements than its bytes can hold is
// refused before the element slice is allocated.
func TestViewTensorStringCountBounded(t *testing.T) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	if _, err := wire.ViewTensor(int32(graph.String), []int64{1 << 28}, make([]byte, 64), false); err == nil {
		t.Fatal("2^28 strings in 64 bytes accepted")
	}
	runtime.ReadMemStats(&ms)
	if d := ms.TotalAlloc - before; d > 1<<20 {
		t.Fatalf("%d bytes allocated before refusing", d)
	}
}

func TestShapeBoundsChecks(t *testing.T) {
	in := map[string][]hal.DimRange{"b": {{Min: 1, Max: 8}}, "a": {{Min: 0, Max: 0}, {Min: 3, Max: 3}}}
	w := wire.ShapeBoundsTo(in)
	if len(w) != 2 || w[0].Input != "a" || w[1].Input != "b" {
		t.Fatalf("not sorted by name: %v", w)
	}
	back, err := wire.ShapeBoundsFrom(w)
	if err != nil || !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	for name, bad := range map[string][]*halv1.ShapeBound{
		"min > max": {{Input: "x", Dims: []*halv1.DimRange{{Min: 3, Max: 2}}}},
		"negative":  {{Input: "x", Dims: []*halv1.DimRange{{Min: -1, Max: 2}}}},
		"huge":      {{Input: "x", Dims: []*halv1.DimRange{{Min: 1, Max: 1 << 40}}}},
		"twice":     {{Input: "x"}, {Input: "x"}},
		"nil dim":   {{Input: "x", Dims: []*halv1.DimRange{nil}}},
		"nil bound": {nil},
		"rank":      {{Input: "x", Dims: make([]*halv1.DimRange, wire.MaxBoundDims+1)}},
	} {
		if _, err := wire.ShapeBoundsFrom(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
