package native

import (
	"math/rand/v2"
	"testing"
)

// naiveTranspose is the definition: y[i0..] = x[at perm].
func naiveTranspose(x []float32, dims, perm []int) []float32 {
	r := len(dims)
	out := make([]int, r)
	for i, p := range perm {
		out[i] = dims[p]
	}
	xs := make([]int, r)
	s := 1
	for ax := r - 1; ax >= 0; ax-- {
		xs[ax] = s
		s *= dims[ax]
	}
	y := make([]float32, s)
	idx := make([]int, r)
	for o := range y {
		off := 0
		for i := range idx {
			off += idx[i] * xs[perm[i]]
		}
		y[o] = x[off]
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < out[d] {
				break
			}
			idx[d] = 0
		}
	}
	return y
}

func permutations(r int) [][]int {
	if r == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(r - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), r-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

// Every permutation of ranks 1 to 5, dims of 1 (dropped), small and
// larger than a tile, against the definition.
func TestTransposeAllPerms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{1, 2, 3, 5, 17, 33}
	for r := 1; r <= 5; r++ {
		for _, perm := range permutations(r) {
			for trial := 0; trial < 4; trial++ {
				dims := make([]int, r)
				n := 1
				for i := range dims {
					dims[i] = sizes[rng.IntN(len(sizes))]
					if r >= 4 && dims[i] > 5 {
						dims[i] = 5
					}
					n *= dims[i]
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(i)
				}
				want := naiveTranspose(x, dims, perm)
				got := make([]float32, n)
				transposeF32(nil, got, x, dims, perm)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("dims %v perm %v: y[%d] = %v, want %v", dims, perm, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// transpose2D at sizes on and around the 8×8 blocks and the 64-column
// strips (the register path and its edges), against the definition.
func TestTranspose2DBlocks(t *testing.T) {
	sizes := []int{1, 7, 8, 9, 16, 63, 64, 65, 85, 130}
	for _, rows := range sizes {
		for _, cols := range sizes {
			x := make([]float32, rows*cols)
			for i := range x {
				x[i] = float32(i)
			}
			got := make([]float32, rows*cols)
			transpose2D(got, x, rows, cols)
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					if got[j*rows+i] != x[i*cols+j] {
						t.Fatalf("%d×%d: y[%d][%d] = %v, want %v", rows, cols, j, i, got[j*rows+i], x[i*cols+j])
					}
				}
			}
		}
	}
}

func BenchmarkTranspose2D(b *testing.B) {
	rows, cols := 85, 3549 // YOLOX's head output
	x := make([]float32, rows*cols)
	y := make([]float32, rows*cols)
	b.SetBytes(int64(8 * len(x)))
	b.Run("blocks", func(b *testing.B) {
		for b.Loop() {
			transpose2D(y, x, rows, cols)
		}
	})
	b.Run("tiles", func(b *testing.B) {
		for b.Loop() {
			transposeTiles(y, x, rows, cols, 0, rows, 0, cols)
		}
	})
}

// transpose2DPar over two threads (column ranges of each batch, the
// ranges' edges inside blocks and strips) and transpose2DCols of any
// column range, against the definition.
func TestTranspose2DPar(t *testing.T) {
	p := newPool(2)
	defer p.close()
	for _, sh := range [][3]int{{1, 21, 4099}, {2, 9, 8195}, {3, 257, 130}, {1, 3, 20000}, {1, 64, 1024}} {
		batch, rows, cols := sh[0], sh[1], sh[2]
		x := make([]float32, batch*rows*cols)
		for i := range x {
			x[i] = float32(i)
		}
		got := make([]float32, len(x))
		transpose2DPar(p, got, x, batch, rows, cols)
		for b := 0; b < batch; b++ {
			xb, yb := x[b*rows*cols:], got[b*rows*cols:]
			for i := 0; i < rows; i++ {
				for j := 0; j < cols; j++ {
					if yb[j*rows+i] != xb[i*cols+j] {
						t.Fatalf("%v: batch %d y[%d][%d] = %v, want %v", sh, b, j, i, yb[j*rows+i], xb[i*cols+j])
					}
				}
			}
		}
	}
	rows, cols := 13, 300
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i)
	}
	for _, r := range [][2]int{{0, 300}, {3, 77}, {64, 128}, {5, 6}, {290, 300}, {100, 100}} {
		got := make([]float32, len(x))
		transpose2DCols(got, x, rows, cols, r[0], r[1])
		for j := 0; j < cols; j++ {
			for i := 0; i < rows; i++ {
				want := float32(0)
				if j >= r[0] && j < r[1] {
					want = x[i*cols+j]
				}
				if got[j*rows+i] != want {
					t.Fatalf("columns %v: y[%d][%d] = %v, want %v", r, j, i, got[j*rows+i], want)
				}
			}
		}
	}
}
