package native

import "testing"

// deinterleave3Par at 2 threads writes what transpose2D writes on one, for
// batches of images whose positions split into ranges of whole vectors
// and not.
func TestT2cDeinterleave3Par(t *testing.T) {
	pl := newPool(2)
	defer pl.close()
	for _, c := range [][2]int{{1, 224 * 224}, {2, 192 * 192}, {1, 40000 + 7}, {3, 12289}} {
		batch, rows := c[0], c[1]
		n := rows * 3
		x := make([]float32, batch*n)
		for i := range x {
			x[i] = float32(i%1009) * 0.5
		}
		want := make([]float32, batch*n)
		for b := 0; b < batch; b++ {
			transpose2D(want[b*n:(b+1)*n], x[b*n:(b+1)*n], rows, 3)
		}
		got := make([]float32, batch*n)
		if !deinterleave3Par(pl, got, x, batch, rows) {
			t.Fatalf("%v: not split", c)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v: y[%d] = %v, want %v", c, i, got[i], want[i])
			}
		}
	}
}
