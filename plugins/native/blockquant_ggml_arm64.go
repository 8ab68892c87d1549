package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// hasBQKDot: the arm64 typed integer kernels need the dot-product
// instructions (SDOT, FEAT_DotProd: Armv8.4, optional from Armv8.2).
var hasBQKDot = cpu.ARM64.HasASIMD && cpu.ARM64.HasASIMDDP

// bqkArmFn is an arm64 kernel of a 32-element type: output of one weight
// row w (nb blocks) with one activation row (x, its scales xd and, for
// Q4_1 and Q5_1, the blocks' float16 sums xs: Act.SumD).
type bqkArmFn = func(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

// bqkDot are the arm64 NEON kernels of every ggml type the integer path
// takes (blockquant_ggml_arm64.s), the same arithmetic as core/ggml's
// Dot, bit for bit: a 32-element type's block products summed exactly by
// SDOT in eight int32 lanes of four, converted, added times
// float32(d_w·d_a) lane by lane (FMLA, fused), reduced as Dot reduces
// (Q4_0: the lanes summed to the block's int32 sum, ADDV, then one fused
// multiply-add a block, llama.cpp's repacked order as Dot); a K
// type's sub-block sums (SDOT, then across the lanes) times their scales
// summed exactly in int32, then scaled once a super-block. One weight row
// a call (the amd64 kernels' four-row forms are not written for arm64).
var bqkDot = map[ggml.Type]*bqkKernel{
	ggml.Q8_0: newBQKArmKernel(bqkQ8_0DotNEON),
	ggml.Q4_0: newBQKArmKernel(bqkQ4_0DotNEON),
	ggml.Q4_1: newBQKArmKernel(bqkQ4_1DotNEON),
	ggml.Q5_0: newBQKArmKernel(bqkQ5_0DotNEON),
	ggml.Q5_1: newBQKArmKernel(bqkQ5_1DotNEON),
	ggml.Q2_K: newBQKArmSuper(ggml.Q2_K, bqkQ2KDotNEON),
	ggml.Q3_K: newBQKArmSuper(ggml.Q3_K, bqkQ3KDotNEON),
	ggml.Q4_K: newBQKArmSuper(ggml.Q4_K, bqkQ4KDotNEON),
	ggml.Q5_K: newBQKArmSuper(ggml.Q5_K, bqkQ5KDotNEON),
	ggml.Q6_K: {name: "neon", dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
		nb := w.k / ggml.QK
		row := w.raw[j*w.rb : (j+1)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		return bqkQ6KDotNEON(nb, &row[0], &x[0], &xd[0])
	}},
}

// newBQKArmSuper wraps the kernel of a K type that takes sums of the
// activations: 32-value sums (Q4_K, Q5_K), 16-value sums (Q2_K); Q3_K
// takes none.
func newBQKArmSuper(t ggml.Type, f func(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32) *bqkKernel {
	return &bqkKernel{name: "neon", dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
		nb := w.k / ggml.QK
		row := w.raw[j*w.rb : (j+1)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		xs := a.Sum32[r*nb*8 : (r+1)*nb*8]
		if t == ggml.Q2_K || t == ggml.Q3_K {
			xs = a.Sum[r*nb*16 : (r+1)*nb*16]
		}
		return f(nb, &row[0], &x[0], &xd[0], &xs[0])
	}}
}

func newBQKArmKernel(f bqkArmFn) *bqkKernel {
	return &bqkKernel{name: "neon", dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
		nb := w.k / 32
		row := w.raw[j*w.rb : (j+1)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		xs := a.SumD[r*nb : r*nb+nb]
		return f(nb, &row[0], &x[0], &xd[0], &xs[0])
	}}
}

// archBQKKernel is the NEON kernel of type t unless the family is forced
// to generic or the CPU lacks the dot-product instructions (nil: Go).
func archBQKKernel(t ggml.Type, f string) *bqkKernel {
	if f == "generic" || !hasBQKDot {
		return nil
	}
	return bqkDot[t]
}

// archBQKFloat: no typed float-path assembly on arm64 yet.
func archBQKFloat(ggml.Type) func(nb int, w *uint8, x *float32, xs *float32) float32 { return nil }

//go:noescape
func bqkQ8_0DotNEON(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

//go:noescape
func bqkQ4_0DotNEON(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

//go:noescape
func bqkQ5_0DotNEON(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

//go:noescape
func bqkQ5_1DotNEON(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

//go:noescape
func bqkQ4_1DotNEON(nb int, w *uint8, x *int8, xd *float32, xs *float32) float32

//go:noescape
func bqkQ4KDotNEON(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32

//go:noescape
func bqkQ6KDotNEON(nb int, w *uint8, x *int8, xd *float32) float32

//go:noescape
func bqkQ5KDotNEON(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32

//go:noescape
func bqkQ2KDotNEON(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32

//go:noescape
func bqkQ3KDotNEON(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32
