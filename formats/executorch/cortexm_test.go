package executorch

import "testing"

func TestRequantize(t *testing.T) {
	cases := []struct{ v, m, s, want int32 }{
		{100, 1 << 30, 0, 50},      // ×0.5
		{3, 1 << 30, 0, 2},         // 1.5: the positive nudge rounds up
		{-3, 1 << 30, 0, -1},       // -1.5: nudge 1-2^30, then truncation
		{101, 1 << 30, -1, 26},     // 51 / 2 = 25.5 rounds away from zero
		{-101, 1 << 30, -1, -25},   // the nudge gives -50, then exact / 2
		{100, 1 << 30, -2, 13},     // 50 / 4 = 12.5 → 13
		{5, 1 << 30, 2, 10},        // left shift first: 20 × 0.5
		{1000, 2077939072, -4, 61}, // round(967.6) = 968, / 16 = 60.5 → 61
	}
	for _, c := range cases {
		if got := requantize(c.v, c.m, c.s); got != c.want {
			t.Errorf("requantize(%d, %d, %d) = %d, want %d", c.v, c.m, c.s, got, c.want)
		}
	}
}

func TestPromote(t *testing.T) {
	i32 := operand{dt: 6, rank: 1}
	cases := []struct {
		ops  []operand
		want string
	}{
		{[]operand{i32, {dt: 1, rank: 1}}, "float32"},
		{[]operand{i32, {dt: 7, scalar: true}}, "int32"},    // int scalar keeps int32
		{[]operand{i32, {dt: 11, scalar: true}}, "float32"}, // float scalar: default dtype
		{[]operand{i32, {dt: 7, rank: 0}}, "int32"},         // 0-d tensor of the same category
		{[]operand{i32, {dt: 11, rank: 0}}, "float64"},      // 0-d float tensor of a higher category
		{[]operand{{dt: 2, rank: 1}, {dt: 3, rank: 1}}, "int16"},
		{[]operand{{dt: 9, rank: 1}, {dt: 9, scalar: true}}, "bool"},
		{[]operand{{dt: 9, rank: 1}, {dt: 7, scalar: true}}, "int64"},
	}
	for i, c := range cases {
		if got := resultType(c.ops).String(); got != c.want {
			t.Errorf("case %d: %s, want %s", i, got, c.want)
		}
	}
}

// TestDimOrderConstant: a constant stored channels-last (dim order
// [0,2,3,1]) or transposed comes out in logical row-major order.
func TestDimOrderConstant(t *testing.T) {
	// logical [2,3]: a[i][j] = 10*i + j; stored with dim order [1,0].
	phys := []byte{0, 10, 1, 11, 2, 12}
	got, err := tensorFromBytes(&Tensor{ScalarType: TypeChar, Sizes: []int32{2, 3}, DimOrder: []uint8{1, 0}}, phys, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 1, 2, 10, 11, 12}
	for i, v := range got.Int64s() {
		if v != want[i] {
			t.Fatalf("got %v, want %v", got.Int64s(), want)
		}
	}
	// NCHW [1,2,1,2] stored NHWC: memory order h, w, c.
	phys = []byte{0, 100, 1, 101} // (w0,c0) (w0,c1) (w1,c0) (w1,c1)
	got, err = tensorFromBytes(&Tensor{ScalarType: TypeByte, Sizes: []int32{1, 2, 1, 2}, DimOrder: []uint8{0, 2, 3, 1}}, phys, 0)
	if err != nil {
		t.Fatal(err)
	}
	want = []int64{0, 1, 100, 101}
	for i, v := range got.Int64s() {
		if v != want[i] {
			t.Fatalf("got %v, want %v", got.Int64s(), want)
		}
	}
	if _, err := tensorFromBytes(&Tensor{ScalarType: TypeFloat, Sizes: []int32{4}}, phys, 0); err == nil {
		t.Fatal("short data accepted")
	}
}
