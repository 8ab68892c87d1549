package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// hasBQKAVX2: the typed integer kernels need AVX2 and F16C (VCVTPH2PS).
var hasBQKAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C

type bqkFn = func(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32

// bqkAVX2 are the typed integer path's AVX2 kernels (internal/asmgenbqk).
var bqkAVX2 = map[ggml.Type]*bqkKernel{
	ggml.Q4_K: newBQKKernel(ggml.Q4_K, bqkQ4KDotAVX2),
	ggml.Q5_K: newBQKKernel(ggml.Q5_K, bqkQ5KDotAVX2),
	ggml.Q6_K: newBQKKernel(ggml.Q6_K, bqkQ6KDotAVX2),
	ggml.Q5_0: newBQKKernel(ggml.Q5_0, bqkQ5_0DotAVX2),
}

// newBQKKernel wraps an assembly kernel of type t; xs is the sums the
// kernel takes: the 32-value sums (Q4_K, Q5_K), the 16-value sums (Q6_K) or the
// lane sums (Q5_0) of core/ggml's Act.
func newBQKKernel(t ggml.Type, f bqkFn) *bqkKernel {
	be, bs := t.BlockSize(), t.BlockBytes()
	return &bqkKernel{name: "avx2", dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
		nb := w.k / be
		row := w.raw[j*w.rb : j*w.rb+nb*bs]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		var xs []int32
		switch t {
		case ggml.Q4_K, ggml.Q5_K:
			xs = a.Sum32[r*nb*8 : (r+1)*nb*8]
		case ggml.Q6_K:
			xs = a.Sum[r*nb*16 : (r+1)*nb*16]
		default:
			xs = a.Lanes[r*nb*8 : (r+1)*nb*8]
		}
		return f(nb, &row[0], &x[0], &xd[0], &xs[0])
	}}
}

// archBQKKernel is the assembly kernel of type t under the forced family f
// (qkernelFamily), nil where there is none (Go runs).
func archBQKKernel(t ggml.Type, f string) *bqkKernel {
	if f == "generic" || !hasBQKAVX2 {
		return nil
	}
	return bqkAVX2[t]
}

type bqkFloatFn = func(nb int, w *uint8, x *float32, xs *float32) float32

// bqkFloat are the typed float path's AVX2+FMA kernels.
var bqkFloat = map[ggml.Type]bqkFloatFn{ggml.Q4_K: bqkQ4KFloatAVX2, ggml.Q6_K: bqkQ6KFloatAVX2, ggml.Q5_0: bqkQ5_0FloatAVX2}

// archBQKFloat is the float path's assembly kernel of type t (nil: Go).
func archBQKFloat(t ggml.Type) bqkFloatFn {
	if !hasBQKAVX2 || !cpu.X86.HasFMA {
		return nil
	}
	return bqkFloat[t]
}
