package kernels

import (
	"math"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func TestSatInt(t *testing.T) {
	if got := SatInt[int8](200); got != math.MaxInt8 {
		t.Errorf("SatInt[int8](200) = %d", got)
	}
	if got := SatInt[int8](-200); got != math.MinInt8 {
		t.Errorf("SatInt[int8](-200) = %d", got)
	}
	if got := SatInt[uint8](-3); got != 0 {
		t.Errorf("SatInt[uint8](-3) = %d", got)
	}
	if got := SatInt[uint64](1e30); got != math.MaxUint64 {
		t.Errorf("SatInt[uint64](1e30) = %d", got)
	}
	if got := SatInt[int64](math.Ldexp(1, 63)); got != math.MaxInt64 {
		t.Errorf("SatInt[int64](2^63) = %d", got)
	}
	if got := SatInt[int32](math.NaN()); got != 0 {
		t.Errorf("SatInt[int32](NaN) = %d", got)
	}
	if got := SatInt[int16](-7); got != -7 {
		t.Errorf("SatInt[int16](-7) = %d", got)
	}
}

func TestStoreRounded(t *testing.T) {
	vals := []float64{2.5, -2.5, 1e9, math.NaN()}
	tr := &graph.Tensor{DType: graph.Int8, Shape: []int{4}, Data: make([]int8, 4)}
	StoreRounded(tr, vals, math.Trunc)
	if want := []int8{2, -2, 127, 0}; !slices.Equal(tr.Data.([]int8), want) {
		t.Errorf("trunc: %v, want %v", tr.Data, want)
	}
	StoreRounded(tr, vals, math.Round)
	if want := []int8{3, -3, 127, 0}; !slices.Equal(tr.Data.([]int8), want) {
		t.Errorf("round: %v, want %v", tr.Data, want)
	}
	f := &graph.Tensor{DType: graph.Float32, Shape: []int{4}, Data: make([]float32, 4)}
	StoreRounded(f, vals[:3], math.Trunc)
	if want := []float32{2.5, -2.5, 1e9}; !slices.Equal(f.Data.([]float32)[:3], want) {
		t.Errorf("float: %v, want %v", f.Data, want)
	}
}

func TestMoves(t *testing.T) {
	src := []string{"a", "b", "c"}
	dst := []string{"x", "y", "z", "w"}
	if !Gather(dst, src, []int{2, -1, 0, 1}) || !slices.Equal(dst, []string{"c", "y", "a", "b"}) {
		t.Errorf("Gather: %v", dst)
	}
	GatherFunc(dst, src, func(i int) int { return i%3 - 1 })
	if !slices.Equal(dst, []string{"c", "a", "b", "b"}) {
		t.Errorf("GatherFunc: %v", dst)
	}
	d := make([]int32, 4)
	Scatter(d, []int32{7, 8, 9}, []int{3, 0, 3})
	if !slices.Equal(d, []int32{8, 0, 0, 9}) {
		t.Errorf("Scatter: %v", d)
	}
	b := make([]bool, 3)
	if !Gather(b, []bool{false, true}, []int{1, 0, 1}) || !slices.Equal(b, []bool{true, false, true}) {
		t.Errorf("Gather bool: %v", b)
	}
	h := []graph.F16{graph.F16FromFloat32(1), graph.F16FromFloat32(-2)}
	hd := make([]graph.F16, 2)
	if !Gather(hd, h, []int{1, 0}) || hd[0].Float32() != -2 || hd[1].Float32() != 1 {
		t.Errorf("Gather f16: %v", hd)
	}
	if Gather(make([]int8, 1), []uint8{1}, []int{0}) {
		t.Error("Gather accepted two element types")
	}
	if Gather([]complex64{0}, []complex64{1}, []int{0}) {
		t.Error("Gather accepted an unknown element type")
	}
}

func TestStridedOffsets(t *testing.T) {
	// broadcast a [3] row over [2,3]
	if got := BroadcastIndex([]int{2, 3}, []int{3}); !slices.Equal(got, []int{0, 1, 2, 0, 1, 2}) {
		t.Errorf("BroadcastIndex row: %v", got)
	}
	// reduce axis 1 of [2,3]: output strides [1, 0]
	if got := StridedOffsets([]int{2, 3}, []int{1, 0}); !slices.Equal(got, []int{0, 0, 0, 1, 1, 1}) {
		t.Errorf("StridedOffsets: %v", got)
	}
	if got := StridedOffsets([]int{2, 0}, []int{1, 1}); len(got) != 0 {
		t.Errorf("empty shape: %v", got)
	}
}
