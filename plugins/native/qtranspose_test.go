package native

import (
	"math/rand/v2"
	"testing"
)

// transposeBytes against the definition, on shapes with and without
// edges, with and without the flip, on the assembly path and the Go one.
func TestTransposeBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range archQFamilies() {
		t.Setenv(qkernelEnv, f)
		for _, sh := range [][2]int{{1, 1}, {3, 50176}, {8, 16}, {16, 49}, {49, 1280}, {24, 3136}, {7, 9}, {9, 17}, {33, 100}, {8, 15}} {
			for _, flip := range []int8{0, -128} {
				rows, cols := sh[0], sh[1]
				src := make([]int8, rows*cols)
				for i := range src {
					src[i] = int8(rng.IntN(256))
				}
				dst := make([]int8, rows*cols)
				transposeBytes(dst, src, rows, cols, flip)
				for i := 0; i < rows; i++ {
					for j := 0; j < cols; j++ {
						if got, want := dst[j*rows+i], src[i*cols+j]^flip; got != want {
							t.Fatalf("%s %dx%d flip %d: [%d][%d] = %d, want %d", f, rows, cols, flip, j, i, got, want)
						}
					}
				}
			}
		}
	}
}
