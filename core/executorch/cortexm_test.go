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
