package native

import (
	"fmt"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// BenchmarkHandDWSmall runs hand_landmark_full's and pose_detection's 3×3
// and 5×5 depthwise convolutions over small planes (14×14, 7×7 and their stride-2
// inputs) at one thread by the packed path, by the row kernels (dw3.go,
// whatever dw3MinIW says) and by the flat kernel (hand_dwflat.go; at
// stride 2 the parity-plane one, dws2.go; where it takes the shape,
// whatever handDWFlatMaxW and dws2MaxW3 say), in CPU time per run:
//
//	go test ./plugins/native -run '^$' -bench HandDWSmall -benchtime 200x
func BenchmarkHandDWSmall(b *testing.B) {
	if dw3Kernels == nil {
		b.Skip("no 3×3 depthwise row kernels on this CPU")
	}
	pl := newPool(1)
	defer pl.close()
	defer func(v bool, m, f, f2 int) { useDW3Rows, dw3MinIW, handDWFlatMaxW, dws2MaxW3 = v, m, f, f2 }(useDW3Rows, dw3MinIW, handDWFlatMaxW, dws2MaxW3)
	handDWFlatMaxW, dws2MaxW3 = 1<<20, 1<<20
	for _, sh := range [][5]int{ // c, h, w, stride (2: TensorFlow's SAME, k/2−1 rows and columns of padding at the top and left), k
		{672, 14, 14, 1, 3}, {480, 14, 14, 1, 3}, {1152, 7, 7, 1, 3}, {144, 56, 56, 1, 3}, {24, 112, 112, 1, 3}, {96, 33, 33, 1, 3},
		{672, 14, 14, 2, 3}, {240, 28, 28, 2, 3}, {240, 28, 28, 1, 3}, {128, 15, 20, 1, 3},
		{672, 14, 14, 1, 5}, {480, 14, 14, 1, 5}, {1152, 7, 7, 1, 5}, {240, 28, 28, 1, 5}, {96, 56, 56, 1, 5}, {32, 112, 112, 1, 5}, {128, 64, 64, 1, 5},
		{144, 56, 56, 2, 5}, {672, 14, 14, 2, 5}, {240, 28, 28, 2, 5}, {96, 112, 112, 2, 5}, {144, 56, 56, 2, 3}, {240, 28, 28, 2, 3},
	} {
		c, h, w, s, k := sh[0], sh[1], sh[2], sh[3], sh[4]
		p, _, _ := dwBenchPlan(b, c, h, w, k, s)
		if s == 2 {
			p.win.pt, p.win.pl, p.win.pb, p.win.pr = k/2-1, k/2-1, k/2, k/2
		}
		xt := &graph.Tensor{DType: graph.Float32, Shape: []int{1, c, h, w}}
		var shapes [3]*convShape
		for i, on := range []bool{false, true, true} {
			useDW3Rows, dw3MinIW, useHandDWFlat = on, 1, i == 2
			p.shape.Store(nil)
			cs, err := p.shapeFor(xt)
			if err != nil {
				b.Fatal(err)
			}
			shapes[i] = cs
		}
		x := make([]float32, c*h*w)
		y := make([]float32, c*shapes[0].g.oh*shapes[0].g.ow)
		name := fmt.Sprintf("%dx%dx%d-s%d-k%d", c, h, w, s, k)
		b.Run("other/"+name, func(b *testing.B) {
			cpuLoop(b, func() { depthwise(pl, p, shapes[0], x, y, 1) })
		})
		b.Run("rows/"+name, func(b *testing.B) {
			useHandDWFlat = false
			defer func() { useHandDWFlat = true }()
			cpuLoop(b, func() { depthwise(pl, p, shapes[1], x, y, 1) })
		})
		if handDWFlat(&shapes[2].g) || dws2Take(&shapes[2].g) {
			b.Run("flat/"+name, func(b *testing.B) {
				cpuLoop(b, func() { depthwise(pl, p, shapes[2], x, y, 1) })
			})
		}
	}
}
