package native

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestThrBandsIdentical: indirect convolutions of the zoo's shapes (rows
// and wide output, strides 1 and 2, dilations) and depthwise ones give
// bit for bit the same output at 2 and 3 threads, split in row bands and
// by channels, as at 1 thread.
func TestThrBandsIdentical(t *testing.T) {
	if igemmKernels == nil {
		t.Skip("no indirect kernels on this machine")
	}
	defer func(v bool) { rowBands = v }(rowBands)
	type conv struct{ cin, cout, group, h, w, k, s, d int }
	for _, c := range []conv{
		{3, 16, 1, 240, 320, 3, 2, 1},
		{16, 16, 1, 30, 40, 3, 1, 3},
		{16, 16, 1, 30, 40, 3, 1, 5},
		{16, 6, 1, 480, 40, 3, 1, 3}, // wide, its copy split in bands
		{8, 16, 1, 30, 40, 3, 1, 1},
		{3, 16, 1, 120, 160, 3, 2, 1},
		{12, 16, 1, 104, 104, 3, 1, 1},
		{5, 7, 1, 37, 23, 3, 2, 2},
		{256, 12, 1, 4, 5, 3, 1, 1},
		{128, 128, 128, 15, 20, 3, 1, 1}, // depthwise (dwBands)
		{256, 256, 256, 8, 10, 3, 1, 1},
		{64, 64, 64, 30, 40, 3, 2, 1},
		{32, 32, 32, 60, 80, 3, 1, 1},
		{24, 24, 24, 9, 13, 3, 1, 2},
	} {
		t.Run(fmt.Sprintf("%d-%d-g%d-%dx%d-k%ds%dd%d", c.cin, c.cout, c.group, c.h, c.w, c.k, c.s, c.d), func(t *testing.T) {
			var want []float32
			for _, threads := range []int{1, 2, 3} {
				for _, bands := range []bool{true, false} {
					rowBands = bands
					exe, in := thrConvGroupExe(t, threads, c.cin, c.cout, c.group, c.h, c.w, c.k, c.s, c.d)
					out := []*graph.Tensor{{}}
					for call := 0; call < 2; call++ { // a second call reuses the scratch planes
						if err := exe.Execute(context.Background(), in, out); err != nil {
							t.Fatal(err)
						}
					}
					got := f32(out[0])
					if want == nil {
						want = append([]float32(nil), got...)
						continue
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%d threads, bands %v: y[%d] = %v, 1 thread %v", threads, bands, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}
