package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// t2cPointwisePlan is a constant 1×1 convolution plan of cin → cout with
// random weights and bias, clamped to [-1, 1.5].
func t2cPointwisePlan(kern *microKernel, rng *rand.Rand, cout, cin int) *convPlan {
	win := window{autoPad: "NOTSET", nd: 2, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1}
	p := &convPlan{win: win, cout: cout, cin: cin, group: 1, kh: 1, kw: 1, w: randSlice(rng, cout*cin), constW: true,
		clamp: true, lo: -1, hi: 1.5, ss: &scratchSet{}, planeSS: &scratchSet{}, wideSS: &scratchSet{}}
	p.biasStride = (cout + kern.mr - 1) / kern.mr * kern.mr
	p.bias = make([]float32, p.biasStride)
	copy(p.bias, randSlice(rng, cout))
	return p
}

// runPointwiseTA computes exactly what runPointwiseT's three loops
// compute (the same multiply-adds in the same order: its kernels read
// A's values from the planes where the packed-A ones read the packed
// copy), at one and two threads: row tiles whole and partial, a partial
// last panel, more input channels than one kc block, a batch of 2.
func TestT2cPointwiseTAExact(t *testing.T) {
	kern := bestKernel()
	if gemmATKernels == nil || kern.mr != gemmATMR || kern.nr != gemmATNR {
		t.Skip("no A-transposed kernels on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range [][4]int{{192, 1152, 7, 7}, {112, 672, 14, 14}, {80, 480, 14, 14}, {200, 300, 5, 7}, {48, 64, 13, 13}, {33, 70, 3, 5}} {
		cout, cin, h, w := c[0], c[1], c[2], c[3]
		hw := h * w
		p := t2cPointwisePlan(&kern, rng, cout, cin)
		x := randSlice(rng, 2*cin*hw)
		for _, threads := range []int{1, 2} {
			pl := newPool(threads)
			bc := &buildCtx{kern: &kern, pool: pl}
			want := make([]float32, 2*cout*hw)
			got := make([]float32, 2*cout*hw)
			usePointwiseTA = false
			p.runPointwiseT(bc, x, want, 2, hw)
			usePointwiseTA = true
			p.runPointwiseT(bc, x, got, 2, hw)
			pl.close()
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%v threads %d: y[%d] = %v, three loops %v", c, threads, i, got[i], want[i])
					break
				}
			}
		}
	}
}

// BenchmarkT2cPointwiseTA times hand_landmark_full's and pose_detection's
// 1×1 convolutions over 7×7 and 14×14 through compute, planar (the
// positions on the GEMM's columns), transposed by runPointwiseT's three
// loops and by runPointwiseTA's one, alternating in one run, at one
// thread (CPU time per run) and two (a hot pool; wall time):
//
//	go test ./plugins/native -run '^$' -bench T2cPointwiseTA -benchtime 300x
func BenchmarkT2cPointwiseTA(b *testing.B) {
	kern := bestKernel()
	if gemmATKernels == nil || kern.mr != gemmATMR || kern.nr != gemmATNR {
		b.Skip("no A-transposed kernels on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][4]int{{192, 1152, 7, 7}, {1152, 192, 7, 7}, {192, 672, 7, 7}, {480, 80, 14, 14}, {80, 480, 14, 14},
		{672, 112, 14, 14}, {112, 672, 14, 14}} {
		cout, cin, h, w := sh[0], sh[1], sh[2], sh[3]
		p := t2cPointwisePlan(&kern, rng, cout, cin)
		x := graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))
		ctx := &kernels.Context{Alloc: oneTensorAlloc{graph.MustFromSlice([]int{1, cout, h, w}, make([]float32, cout*h*w))}}
		for _, threads := range []int{1, 2} {
			pl := newPool(threads)
			bc := &buildCtx{kern: &kern, pool: pl}
			pl.begin()
			for _, mode := range []string{"planar", "three-loops", "one-loop"} {
				b.Run(fmt.Sprintf("%dx%dx%dx%d/threads=%d/%s", cout, cin, h, w, threads, mode), func(b *testing.B) {
					usePointwiseT, pointwiseTForce, usePointwiseTA = mode != "planar", true, mode == "one-loop"
					defer func() { usePointwiseT, pointwiseTForce, usePointwiseTA = true, false, true }()
					cpuLoop(b, func() {
						if _, err := p.compute(bc, ctx, x); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
			pl.end()
			pl.close()
		}
	}
}
