package native

import (
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"
	"math"
	"math/rand/v2"
	"testing"
)

// The layout kernels (AVX-512 where the machine has it) compute exactly
// what the portable loops compute, over lengths with and without tails,
// NaNs and infinities included (a NaN never wins a max).
func TestLayoutKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	val := func() float32 {
		switch rng.IntN(20) {
		case 0:
			return float32(math.NaN())
		case 1:
			return float32(math.Inf(-1))
		case 2:
			return float32(math.Inf(1))
		}
		return float32(rng.NormFloat64())
	}
	same := func(a, b float32) bool {
		return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
	}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 48, 100, 36864} {
		x := make([]float32, 3*n)
		for i := range x {
			x[i] = val()
		}
		got, want := make([]float32, 3*n), make([]float32, 3*n)
		deinterleave3(x, got[:n], got[n:2*n], got[2*n:])
		deinterleave3Go(x, want[:n], want[n:2*n], want[2*n:])
		for i := range want {
			if !same(got[i], want[i]) || want[i] != x[3*(i%max(n, 1))+i/max(n, 1)] && want[i] == want[i] {
				t.Fatalf("deinterleave3 n=%d: element %d %v, want %v", n, i, got[i], want[i])
			}
		}
	}
	for _, n := range []int{0, 1, 15, 16, 17, 40, 100} {
		a, b, x := make([]float32, n), make([]float32, n), make([]float32, n+2)
		for i := range a {
			a[i], b[i] = val(), val()
		}
		for i := range x {
			x[i] = val()
		}
		for _, w := range []float32{0, 0.25, 0.75, 0.3} {
			got, want := make([]float32, 2*n), make([]float32, 2*n)
			lerp(got[:n], a, b, w)
			lerpGo(want[:n], a, b, w)
			for i := range want[:n] {
				if !same(got[i], want[i]) {
					t.Fatalf("lerp n=%d w=%v: element %d %v, want %v", n, w, i, got[i], want[i])
				}
			}
			interleave2(a, b, got)
			interleave2Go(a, b, want)
			for i := range want {
				if !same(got[i], want[i]) {
					t.Fatalf("interleave2 n=%d: element %d %v, want %v", n, i, got[i], want[i])
				}
			}
			upsample2(n, x, x[1:], got, w, 1-w)
			upsample2Go(n, x, x[1:], want, w, 1-w)
			for i := range want {
				if !same(got[i], want[i]) {
					t.Fatalf("upsample2 n=%d w=%v: element %d %v, want %v", n, w, i, got[i], want[i])
				}
			}
		}
	}
	for _, ow := range []int{1, 2, 3, 6, 7, 8, 12, 15, 16, 17, 24, 31, 32, 33, 48} {
		for _, rows := range []int{1, 2, 5} {
			x := make([]float32, 4*rows*ow)
			for i := range x {
				x[i] = val()
			}
			got, want := make([]float32, rows*ow+1), make([]float32, rows*ow+1)
			got[rows*ow], want[rows*ow] = 42, 42 // past the end: untouched
			maxPool2x2Rows(rows, ow, x, got[:rows*ow])
			maxPool2x2RowsGo(rows, ow, x, want[:rows*ow])
			for i := range want {
				if !same(got[i], want[i]) {
					t.Fatalf("maxPool2x2Rows rows=%d ow=%d: element %d %v, want %v", rows, ow, i, got[i], want[i])
				}
			}
			// the definition: the largest non-NaN of the four, -Inf if none
			for k := 0; k < rows; k++ {
				for j := 0; j < ow; j++ {
					m := float32(math.Inf(-1))
					for _, v := range []float32{x[2*k*2*ow+2*j], x[2*k*2*ow+2*j+1], x[(2*k+1)*2*ow+2*j], x[(2*k+1)*2*ow+2*j+1]} {
						if v > m {
							m = v
						}
					}
					if !same(want[k*ow+j], m) {
						t.Fatalf("maxPool2x2RowsGo rows=%d ow=%d: (%d, %d) %v, want %v", rows, ow, k, j, want[k*ow+j], m)
					}
				}
			}
		}
	}
}

// The whole-tensor passes of a short-row linear Resize: assembly and Go
// agree bit for bit, row tails included.
func TestResizeRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ planes, ih, iw, oh, ow int }{{3, 7, 7, 14, 14}, {2, 14, 14, 28, 28}, {1, 5, 9, 3, 17}, {4, 3, 40, 6, 63}, {2, 4, 4, 8, 8}} {
		m := resizeMap(resizeops.Attrs{Mode: resizeops.ModeLinear, Ctm: "half_pixel"}, c.iw, c.ow, float64(c.ow)/float64(c.iw))
		rm := resizeMap(resizeops.Attrs{Mode: resizeops.ModeLinear, Ctm: "half_pixel"}, c.ih, c.oh, float64(c.oh)/float64(c.ih))
		x := make([]float32, c.planes*c.ih*c.iw)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		hs := c.ih * c.ow
		hg, hw := make([]float32, c.planes*hs), make([]float32, c.planes*hs)
		resizeRows(c.planes*c.ih, c.iw, c.ow, x, hg, m.j0, m.j1, m.w)
		resizeRowsGo(c.planes*c.ih, c.iw, c.ow, x, hw, m.j0, m.j1, m.w)
		r0, r1 := make([]int32, c.oh), make([]int32, c.oh)
		for oy := range r0 {
			r0[oy], r1[oy] = int32(rm.i0[oy]*c.ow), int32(rm.i1[oy]*c.ow)
		}
		yg, yw := make([]float32, c.planes*c.oh*c.ow+1), make([]float32, c.planes*c.oh*c.ow+1)
		yg[len(yg)-1], yw[len(yw)-1] = 7, 7 // past the end: untouched
		lerpRows(c.planes, c.oh, c.ow, hs, hw, yg[:len(yg)-1], r0, r1, rm.w)
		lerpRowsGo(c.planes, c.oh, c.ow, hs, hw, yw[:len(yw)-1], r0, r1, rm.w)
		for i := range hw {
			if math.Float32bits(hg[i]) != math.Float32bits(hw[i]) {
				t.Fatalf("%+v: resizeRows element %d %v, want %v", c, i, hg[i], hw[i])
			}
		}
		for i := range yw {
			if math.Float32bits(yg[i]) != math.Float32bits(yw[i]) {
				t.Fatalf("%+v: lerpRows element %d %v, want %v", c, i, yg[i], yw[i])
			}
		}
	}
}

// A linear resize by 2 finds its by-2 run (upsample2) with half-pixel
// centres and asymmetric coordinates; align-corners has none.
func TestResizeBy2Run(t *testing.T) {
	for _, c := range []struct {
		ctm     string
		in, out int
		scale   float64
		e, min  int
	}{
		{"half_pixel", 45, 90, 2, -1, 40},
		{resizeops.CtmAsymmetric, 37, 74, 2, 0, 35},
		{resizeops.CtmAlignCorners, 40, 80, 2, 0, 0},
	} {
		m := resizeMap(resizeops.Attrs{Mode: resizeops.ModeLinear, Ctm: c.ctm}, c.in, c.out, c.scale)
		if m.jb-m.ja < c.min || (c.min > 0 && m.e != c.e) || (c.min == 0 && m.jb != m.ja) {
			t.Errorf("%s %d→%d: run [%d, %d) e=%d, want at least %d columns at e=%d", c.ctm, c.in, c.out, m.ja, m.jb, m.e, c.min, c.e)
		}
	}
}
