package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// BenchmarkPointwiseT runs the 1×1 convolutions of pose_detection and
// hand_landmark_full over 7×7 and 14×14 images (cout, cin, positions)
// through Conv's compute at one thread, planar (the positions on the
// GEMM's columns) and transposed (conv1x1t.go), in CPU time per run:
//
//	go test ./plugins/native -run '^$' -bench PointwiseT -benchtime 200x
func BenchmarkPointwiseT(b *testing.B) {
	kern := bestKernel()
	if kern.packedA == nil {
		b.Skip("no packed-A kernel on this machine")
	}
	bc := &buildCtx{kern: &kern}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][4]int{{192, 1152, 7, 7}, {1152, 192, 7, 7}, {192, 672, 7, 7}, {192, 1152, 14, 14},
		{480, 80, 14, 14}, {80, 480, 14, 14}, {672, 112, 14, 14}, {112, 672, 14, 14}, {192, 192, 14, 14}} {
		cout, cin, h, w := sh[0], sh[1], sh[2], sh[3]
		win := window{autoPad: "NOTSET", nd: 2, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1}
		p := &convPlan{win: win, cout: cout, cin: cin, group: 1, kh: 1, kw: 1, w: randSlice(rng, cout*cin), constW: true,
			clamp: true, lo: 0, hi: 6, ss: &scratchSet{}, planeSS: &scratchSet{}, wideSS: &scratchSet{}}
		p.biasStride = (cout + kern.mr - 1) / kern.mr * kern.mr
		p.bias = make([]float32, p.biasStride)
		x := graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))
		ctx := &kernels.Context{Alloc: oneTensorAlloc{graph.MustFromSlice([]int{1, cout, h, w}, make([]float32, cout*h*w))}}
		for _, tr := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%dx%d/transposed=%v", cout, cin, h, w, tr), func(b *testing.B) {
				usePointwiseT, pointwiseTForce = tr, true // transposed wherever it may be
				defer func() { usePointwiseT, pointwiseTForce = true, false }()
				cpuLoop(b, func() {
					if _, err := p.compute(bc, ctx, x); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// oneTensorAlloc hands out the same tensor every time (a benchmark's output,
// not allocated per run).
type oneTensorAlloc struct{ t *graph.Tensor }

func (a oneTensorAlloc) Alloc(graph.DType, []int) (*graph.Tensor, error) { return a.t, nil }

// BenchmarkPointwiseTParts times the transposed path's three steps
// (packing Xᵀ, the GEMM, transposing Yᵀ out) and the planar path's B
// packing at one shape each, in CPU time per run.
func BenchmarkPointwiseTParts(b *testing.B) {
	kern := bestKernel()
	if kern.packedA == nil {
		b.Skip("no packed-A kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{192, 1152, 196}, {192, 1152, 49}, {480, 80, 196}} {
		cout, cin, hw := sh[0], sh[1], sh[2]
		x := randSlice(rng, cin*hw)
		xt := make([]float32, packedALen(hw, cin, kern.mr))
		ct := make([]float32, hw*cout)
		y := make([]float32, hw*cout)
		wt := make([]float32, packedLen(cin, cout, kern.nr))
		packB(wt, randSlice(rng, cout*cin), cin, cout, kern.nr, 1, cin)
		bias := make([]float32, panelsOf(cout, kern.nr)*kern.nr)
		pb := make([]float32, packedLen(cin, hw, kern.nr))
		name := fmt.Sprintf("%dx%dx%d", cout, cin, hw)
		b.Run(name+"/packXT", func(b *testing.B) { cpuLoop(b, func() { packXT(xt, x, cin, hw, kern.mr, 0, cin) }) })
		b.Run(name+"/gemm", func(b *testing.B) {
			cpuLoop(b, func() {
				gemm(&kern, nil, &gemmOp{m: hw, n: cout, k: cin, a: xt, lda: cin, apacked: true, b: wt, c: ct, ldc: cout, bias: bias, biasMode: initColBias})
			})
		})
		b.Run(name+"/transposeOut", func(b *testing.B) { cpuLoop(b, func() { toChannelsLast(y, ct, hw, cout, cout, hw) }) })
		b.Run(name+"/packBRows", func(b *testing.B) {
			cpuLoop(b, func() { packBRows(pb, x, cin, hw, kern.nr, hw, 0, panelsOf(hw, kern.nr)) })
		})
	}
}
