package xnnpack

import (
	"math/rand/v2"
	"testing"
)

// naiveTranspose is the definition: every logical index read from src's
// layout and written to dst's.
func naiveTranspose(src []float32, shape, srcPerm, dstPerm []int) []float32 {
	r := len(shape)
	if srcPerm == nil {
		srcPerm = identity(r)
	}
	if dstPerm == nil {
		dstPerm = identity(r)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	dst := make([]float32, n)
	idx := make([]int, r) // logical
	for k := 0; k < n; k++ {
		rem := k
		for i := r - 1; i >= 0; i-- {
			idx[i] = rem % shape[i]
			rem /= shape[i]
		}
		off := func(perm []int) int {
			o := 0
			for _, l := range perm {
				o = o*shape[l] + idx[l]
			}
			return o
		}
		dst[off(dstPerm)] = src[off(srcPerm)]
	}
	return dst
}

func TestTransposeIntoLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	perms := [][]int{nil, nhwc, {0, 3, 1, 2}, {1, 0, 2, 3}, {0, 2, 1, 3}, {3, 2, 1, 0}}
	shapes := [][]int{{1, 3, 5, 7}, {2, 12, 20, 21}, {1, 85, 13, 13}, {1, 1, 40, 33}, {3, 17, 1, 19}, {1, 64, 1, 1}, {2, 33, 18, 17}}
	for _, sh := range shapes {
		n := 1
		for _, d := range sh {
			n *= d
		}
		src := make([]float32, n)
		for i := range src {
			src[i] = rng.Float32()
		}
		for _, sp := range perms {
			for _, dp := range perms {
				want := naiveTranspose(src, sh, sp, dp)
				got := make([]float32, n)
				transposeInto(got, src, sh, sp, dp)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("shape %v %v→%v: element %d is %v, want %v", sh, sp, dp, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestStridedCopyMatchesSlices(t *testing.T) {
	// a [2,6,5] source sliced with steps (1, 2, -2) from (0, 1, 4)
	src := make([]float32, 60)
	for i := range src {
		src[i] = float32(i)
	}
	dims := []int{2, 3, 3}
	str := []int{30, 2 * 5, -2}
	off := 1*5 + 4
	dst := make([]float32, 18)
	stridedCopy(dst, src, dims, str, off)
	k := 0
	for a := 0; a < 2; a++ {
		for b := 0; b < 3; b++ {
			for c := 0; c < 3; c++ {
				want := src[a*30+(1+2*b)*5+(4-2*c)]
				if dst[k] != want {
					t.Fatalf("element (%d,%d,%d) is %v, want %v", a, b, c, dst[k], want)
				}
				k++
			}
		}
	}
}

func TestReshapePermKeepsBytes(t *testing.T) {
	cases := []struct {
		from, perm, to []int
		ok             bool
	}{
		{[]int{1, 85, 13, 13}, nhwc, []int{1, 85, 169}, true},
		{[]int{1, 85, 13, 13}, nhwc, []int{85, 169}, true},
		{[]int{1, 8, 4, 6}, nhwc, []int{1, 8, 24, 1}, true},
		{[]int{1, 8, 4, 6}, nhwc, []int{1, 2, 4, 24}, true}, // splits C, merges H·W
		{[]int{1, 8, 4, 6}, nhwc, []int{1, 32, 6}, false},   // merges C with H: not adjacent in NHWC
		{[]int{2, 3, 4, 5}, []int{0, 2, 3, 1}, []int{6, 20}, false},
		{[]int{1, 12, 1, 1}, nhwc, []int{1, 12}, true},
	}
	for _, c := range cases {
		np, ok := reshapePerm(c.from, c.perm, c.to)
		if ok != c.ok {
			t.Fatalf("%v %v → %v: ok %v, want %v", c.from, c.perm, c.to, ok, c.ok)
		}
		if !ok {
			continue
		}
		n := 1
		for _, d := range c.from {
			n *= d
		}
		logical := make([]float32, n)
		for i := range logical {
			logical[i] = float32(i)
		}
		before := transposeData(logical, c.from, nil, c.perm)
		after := transposeData(logical, c.to, nil, np)
		for i := range before {
			if before[i] != after[i] {
				t.Fatalf("%v %v → %v as %v: element %d moved (%v vs %v)", c.from, c.perm, c.to, np, i, before[i], after[i])
			}
		}
	}
}
