package native

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
)

// threadCPU is the calling thread's CPU time in ns (the machine is
// shared: wall time counts other processes' turns on the core).
func threadCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// cpuLoop runs f b.N times on one locked thread and reports its CPU time
// per run (cpu-ns/op).
func cpuLoop(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0 := threadCPU()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(threadCPU()-c0)/float64(b.N), "cpu-ns/op")
}

// dwBenchPlan is a depthwise plan of c channels, k×k, stride s, padding
// k/2, over h×w planes, with its planar and packed geometries.
func dwBenchPlan(tb testing.TB, c, h, w, k, s int) (p *convPlan, planar, packed *convShape) {
	win := window{autoPad: "NOTSET", nd: 2, kh: k, kw: k, sh: s, sw: s, dh: 1, dw: 1, pt: k / 2, pl: k / 2, pb: k / 2, pr: k / 2}
	g, err := win.at(h, w)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	p = &convPlan{win: win, cout: c, cin: c, group: c, kh: k, kw: k, depthwise: true, ss: &scratchSet{}, lo: negInf, hi: posInf,
		w: make([]float32, c*k*k), bias: make([]float32, c), biasStride: 1}
	for i := range p.w {
		p.w[i] = float32(rng.NormFloat64())
	}
	for i := range p.bias {
		p.bias[i] = float32(rng.NormFloat64())
	}
	planar = &convShape{batch: 1, ih: h, iw: w, g: g}
	if s == 1 && hasDWMask {
		planar.direct = newDWDirect(&planar.g)
	} else {
		planar.layout = newDWLayout(&planar.g)
	}
	if L := dwPackedLanes(c); L > 0 {
		packed = &convShape{batch: 1, ih: h, iw: w, g: g}
		packed.packed = newDWPacked(&packed.g, L)
	}
	return p, planar, packed
}

// BenchmarkDepthwisePacked: the depthwise convolutions of the zoo models'
// small planes, planar tiles vs the packed path, at one thread (CPU time
// of the running thread: cpu-ns/op; Linux):
//
//	go test ./plugins/native -run '^$' -bench DepthwisePacked -benchtime 300x
func BenchmarkDepthwisePacked(b *testing.B) {
	pl := newPool(1)
	defer pl.close()
	for _, sh := range [][5]int{ // c, h, w, k, s
		{256, 8, 10, 3, 1}, {128, 15, 20, 3, 1}, {128, 15, 20, 3, 2}, {64, 30, 40, 3, 1}, {64, 30, 40, 3, 2},
		{32, 60, 80, 3, 1}, {32, 60, 80, 3, 2}, {16, 120, 160, 3, 1}, {32, 120, 160, 3, 2},
		{128, 24, 24, 5, 1}, {256, 12, 12, 5, 1}, {64, 48, 48, 5, 2}, {32, 96, 96, 5, 1},
		{48, 129, 129, 3, 2}, {72, 65, 65, 3, 2}, {72, 65, 65, 3, 1}, {96, 33, 33, 3, 1}, {480, 33, 33, 3, 1}, {16, 129, 129, 3, 1},
		// MediaPipe's hand and pose models (224×224 inputs)
		{144, 56, 56, 3, 1}, {24, 112, 112, 3, 1}, {64, 112, 112, 3, 2}, {144, 56, 56, 5, 2}, {240, 28, 28, 5, 1}, {672, 14, 14, 5, 1},
	} {
		c, h, w, k, s := sh[0], sh[1], sh[2], sh[3], sh[4]
		p, planar, packed := dwBenchPlan(b, c, h, w, k, s)
		x := make([]float32, c*h*w)
		y := make([]float32, c*planar.g.oh*planar.g.ow)
		name := fmt.Sprintf("%dx%dx%d-k%ds%d", c, h, w, k, s)
		b.Run("planar/"+name, func(b *testing.B) {
			cpuLoop(b, func() { depthwise(pl, p, planar, x, y, 1) })
		})
		if packed != nil {
			b.Run("packed/"+name, func(b *testing.B) {
				cpuLoop(b, func() { depthwise(pl, p, packed, x, y, 1) })
			})
		}
	}
}

// The packed kernels (every N through the tails, both strides, both lane
// widths where the machine has them, clamped and not) against the
// portable dwcRunGo, to the last bit but FMA rounding (1e-5 relative).
func TestDwcRunAgainstGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, L := range []int{8, 16} {
		if dwPackedLanes(8) != 8 || L == 16 && dwPackedLanes(16) != 16 {
			continue // no such kernels here
		}
		for _, s := range []int{1, 2} {
			for ow := 1; ow <= 19; ow++ {
				rows, taps := 3, 5
				ldx := (ow*s + 7) * L
				offs := make([]int, taps)
				hi := 0
				for i := range offs {
					offs[i] = (i*3 + i/2*ldx/L) * L
					hi = max(hi, offs[i])
				}
				x := make([]float32, (rows-1)*ldx+hi+ow*s*L+L)
				w := make([]float32, taps*L)
				bias := make([]float32, L)
				for _, v := range [][]float32{x, w, bias} {
					for i := range v {
						v[i] = float32(rng.NormFloat64())
					}
				}
				for _, clampOn := range []bool{false, true} {
					got := make([]float32, rows*ow*L)
					want := make([]float32, rows*ow*L)
					dwcRun(L, s, rows, ow, offs, hi, w, bias, x, ldx, got, ow*L, clampOn, -0.5, 0.75)
					dwcRunGo(L, s, rows, ow, offs, w, bias, x, ldx, want, ow*L, clampOn, -0.5, 0.75)
					for i := range want {
						if d := got[i] - want[i]; d > 1e-5*(1+abs32(want[i])) || -d > 1e-5*(1+abs32(want[i])) {
							t.Fatalf("L %d s %d ow %d clamp %v: y[%d] = %v, want %v", L, s, ow, clampOn, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// The packed path against the planar tiles on planes of many strips (and
// one), strides 1 and 2, 3×3 and 5×5, odd sizes, clamped: the same
// outputs but FMA rounding.
func TestDepthwisePackedStrips(t *testing.T) {
	if dwPackedLanes(16) == 0 && dwPackedLanes(8) == 0 {
		t.Skip("no packed depthwise kernels here")
	}
	pl := newPool(2)
	defer pl.close()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sh := range [][5]int{{16, 129, 129, 3, 2}, {32, 61, 83, 3, 1}, {24, 40, 97, 5, 2}, {16, 9, 7, 5, 1}, {8, 200, 33, 3, 1}, {16, 20, 64, 3, 1}, {16, 21, 64, 3, 2}} {
		c, h, w, k, s := sh[0], sh[1], sh[2], sh[3], sh[4]
		p, planar, packed := dwBenchPlan(t, c, h, w, k, s)
		if packed == nil {
			continue
		}
		if packed.packed.rows >= packed.g.oh && h > 50 {
			t.Fatalf("%v: one strip of %d rows", sh, packed.packed.rows)
		}
		p.clamp, p.lo, p.hi = true, -1, 1.5
		x := make([]float32, 2*c*h*w)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		n := 2 * c * planar.g.oh * planar.g.ow
		want, got := make([]float32, n), make([]float32, n)
		depthwise(pl, p, planar, x, want, 2)
		depthwise(pl, p, packed, x, got, 2)
		for i := range want {
			if d := got[i] - want[i]; d > 1e-5*(1+abs32(want[i])) || -d > 1e-5*(1+abs32(want[i])) {
				t.Fatalf("%v: y[%d] = %v, planar %v", sh, i, got[i], want[i])
			}
		}
	}
}
