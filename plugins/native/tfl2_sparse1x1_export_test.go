package native

import (
	"math"
	"math/rand/v2"
	"os"
)

// SPARSE1X1=0 compiles the package's tests and benchmarks with the sparse
// 1×1 path off (to measure models both ways: TestZooNodeCosts,
// BenchmarkZooThreads).
func init() {
	if os.Getenv("SPARSE1X1") == "0" {
		useSparse1x1 = false
	}
}

// UseSparse1x1 turns the sparse 1×1 path (tfl2_sparse1x1.go) on or off
// for plans compiled afterwards and reports whether the machine has its
// kernels.
func UseSparse1x1(on bool) bool {
	useSparse1x1 = on
	return spmm1x1Kernels != nil
}

// Sparse1x1Density is the share of nonzeros up to which a 1×1 is sparse.
const Sparse1x1Density = sparse1x1MaxDensity

// Sparse1x1Agrees computes a random 1×1 convolution (cout←cin over hw
// positions, batch images, a quarter of its weights nonzero, some rows
// without any) by the kernels on a pool of threads and by their Go
// definition (spmm1x1Go, block by block as the kernels go), and returns
// the largest difference relative to the output's magnitude and whether
// the sparse path took it (false where the machine has no kernels).
func Sparse1x1Agrees(cout, cin, hw, batch, threads int, clamp bool) (float64, bool) {
	rng := rand.New(rand.NewPCG(uint64(cout), uint64(cin*hw)))
	w := make([]float32, cout*cin)
	for i := range w {
		if rng.IntN(4) == 0 && (i/cin)%7 != 3 {
			w[i] = float32(rng.NormFloat64())
		}
	}
	bias := make([]float32, cout)
	for i := range bias {
		bias[i] = float32(rng.NormFloat64())
	}
	s := newSparse1x1(w, bias, cout, cin, clamp, -1, 1.5)
	if s == nil {
		return 0, false
	}
	x := make([]float32, batch*cin*hw)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	got := make([]float32, batch*cout*hw)
	for i := range got {
		got[i] = float32(math.NaN())
	}
	pl := newPool(threads)
	defer pl.close()
	if !s.run(pl, x, got, batch, hw) {
		return 0, false
	}
	want := make([]float32, len(got))
	o := s.offsFor(hw)
	nvec := (hw + 15) / 16
	nblk := (nvec + 3) / 4
	for b := 0; b < batch; b++ {
		for k := 0; k < nblk; k++ {
			p0 := 16 * (nvec * k / nblk)
			n := min(16*(nvec*(k+1)/nblk), hw) - p0
			spmm1x1Go(x[b*cin*hw+p0:], want[b*cout*hw+p0:], hw, n, cout, s.cnt, o.nz, s.bias, s.lo, s.hi)
		}
	}
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if got[i] != got[i] {
			d = math.Inf(1)
		}
		worst = max(worst, d/(1+math.Abs(float64(want[i]))))
	}
	return worst, true
}

// Sparse1x1Runner returns a call of a random sparse 1×1 (a quarter of
// the weights nonzero) over one image on one thread, and its count of
// vector multiply-adds (nonzeros times vectors of positions).
func Sparse1x1Runner(cout, cin, hw int) (func(), int) {
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, cout*cin)
	for i := range w {
		if rng.IntN(4) == 0 {
			w[i] = float32(rng.NormFloat64())
		}
	}
	s := newSparse1x1(w, make([]float32, cout), cout, cin, true, 0, 6)
	if s == nil {
		return nil, 0
	}
	x := make([]float32, cin*hw)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	y := make([]float32, cout*hw)
	return func() { s.run(nil, x, y, 1, hw) }, s.start[cout] * ((hw + 15) / 16)
}
