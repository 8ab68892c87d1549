package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// hasBQKAVX2: the typed integer kernels need AVX2 and F16C (VCVTPH2PS).
var hasBQKAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasF16C

type bqkFn = func(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32

// bqkFn32 is a 32-element type's kernel: nr outputs (rows w, w+ldw, …)
// of one activation row, into y.
type bqkFn32 = func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32)

// bqkAVX2 are the typed integer path's AVX2 kernels (internal/asmgenbqk).
var bqkAVX2 = map[ggml.Type]*bqkKernel{
	ggml.Q4_K: newBQKKernel("avx2", ggml.Q4_K, bqkQ4KDotAVX2, bqkQ4KDot4AVX2),
	ggml.Q5_K: newBQKKernel("avx2", ggml.Q5_K, bqkQ5KDotAVX2, bqkQ5KDot4AVX2),
	ggml.Q6_K: newBQKKernel("avx2", ggml.Q6_K, bqkQ6KDotAVX2, bqkQ6KDot4AVX2),
	ggml.Q4_0: newBQK32Kernel("avx2", ggml.Q4_0, bqkQ4_0Dot1AVX2, bqkQ4_0Dot4AVX2),
	ggml.Q5_0: newBQK32Kernel("avx2", ggml.Q5_0, bqkQ5_0Dot1AVX2, bqkQ5_0Dot4AVX2),
	ggml.Q8_0: newBQK32Kernel("avx2", ggml.Q8_0, bqkQ8_0Dot1AVX2, bqkQ8_0Dot4AVX2),
	ggml.Q4_1: newBQK32mKernel("avx2", bqkQ4_1Dot1AVX2, bqkQ4_1Dot4AVX2),
	ggml.Q5_1: newBQK32mKernel("avx2", bqkQ5_1Dot1AVX2, bqkQ5_1Dot4AVX2),
}

// bqkVNNI are the kernels that AVX-512 VNNI (VPDPBUSD on YMM; the K
// types' four-row kernels VPDPWSSD on ZMM, with AVX-512 BW) makes faster;
// the other types take bqkAVX2's.
var bqkVNNI = map[ggml.Type]*bqkKernel{
	ggml.Q4_K: newBQKKernelN(ggml.Q4_K, bqkQ4KDotAVX2, bqkQ4KDot4Z()),
	ggml.Q5_K: newBQKKernelN(ggml.Q5_K, bqkQ5KDotAVX2, bqkQ5KDot4VNNI),
	ggml.Q2_K: newBQKKernel("vnni", ggml.Q2_K, nil, bqkQ2KDot4VNNI),
	ggml.Q3_K: newBQKKernel("vnni", ggml.Q3_K, nil, bqkQ3KDot4VNNI),
	ggml.Q6_K: newBQKKernelN(ggml.Q6_K, bqkQ6KDotAVX2, bqkQ6KDot4Z()),
	ggml.Q4_0: newBQK32Kernel("vnni", ggml.Q4_0, bqkQ4_0Dot1VNNI, bqkQ4_0Dot4VNNI),
	ggml.Q5_0: newBQK32Kernel("vnni", ggml.Q5_0, bqkQ5_0Dot1VNNI, bqkQ5_0Dot4VNNI),
	ggml.Q8_0: newBQK32Kernel("vnni", ggml.Q8_0, bqkQ8_0Dot1VNNI, bqkQ8_0Dot4VNNI),
	ggml.Q4_1: newBQK32mKernel("vnni", bqkQ4_1Dot1VNNI, bqkQ4_1Dot4VNNI),
	ggml.Q5_1: newBQK32mKernel("vnni", bqkQ5_1Dot1VNNI, bqkQ5_1Dot4VNNI),
}

// bqkQ4KDot4Z is Q4_K's ZMM four-row kernel: the one whose high nibbles
// take one GF2P8AFFINEQB where the CPU has GFNI.
func bqkQ4KDot4Z() bqkFnK4 {
	if cpu.X86.HasAVX512GFNI {
		return bqkQ4KDot4GFNI
	}
	return bqkQ4KDot4VNNI
}

// bqkQ6KDot4Z is Q6_K's ZMM four-row kernel: the one whose high bits
// take GF2P8AFFINEQB where the CPU has GFNI.
func bqkQ6KDot4Z() bqkFnK4 {
	if cpu.X86.HasAVX512GFNI {
		return bqkQ6KDot4GFNI
	}
	return bqkQ6KDot4VNNI
}

// bqkZ are the four-row kernels on ZMM (AVX-512 BW + VNNI; z32.go of
// internal/asmgenbqk) of the types decode reads most (Q4_0, Q5_0, Q8_0):
// about half the instructions of bqkVNNI's YMM ones a block (Q5_0 also
// needs AVX-512 BITALG). The family "vnni256"
// (SWITCHYARD_NATIVE_QKERNEL) keeps the YMM ones.
var bqkZ = map[ggml.Type]*bqkKernel{
	ggml.Q4_0: newBQK32ZKernel(ggml.Q4_0, bqkQ4_0Dot1VNNI, bqkQ4_0Z(false), bqkQ4_0Z(true)),
	ggml.Q5_0: newBQK32ZKernel(ggml.Q5_0, bqkQ5_0Dot1VNNI, bqkQ5_0Dot4Z, bqkQ5_0Dot8Z),
	ggml.Q8_0: newBQK32ZKernel(ggml.Q8_0, bqkQ8_0Dot1VNNI, bqkQ8_0Dot4Z, bqkQ8_0Dot8Z),
}

// bqkQ4_0Z is Q4_0's ZMM kernel of four rows a group (eight: f8): the
// one whose high nibbles take one GF2P8AFFINEQB where the CPU has GFNI
// (bqkQ4_0Dot4G/8G), else a shift and an AND.
func bqkQ4_0Z(f8 bool) bqkFn32s {
	g := cpu.X86.HasAVX512GFNI
	switch {
	case f8 && g:
		return bqkQ4_0Dot8G
	case f8:
		return bqkQ4_0Dot8Z
	case g:
		return bqkQ4_0Dot4G
	}
	return bqkQ4_0Dot4Z
}

// bqkFn32s is a ZMM kernel of a 32-element type: ng groups of four
// (eight) rows in one call, row q of group g at w+g·adv+q·ldw, its
// output at y[g+q·ys].
type bqkFn32s = func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32, ng int, adv int, ys int)

// newBQK32ZKernel is newBQK32Kernel for ZMM kernels of ng groups of
// four (f4) or eight (f8: two sets of four sharing each block's
// activation work) rows a call. dot4n's rows j..j+4·ng-1 are cut into
// eight (or four) runs of consecutive rows, and a group takes one row
// from each run: each of the kernel's rows then reads memory in order
// for the whole call, a stream the hardware's prefetchers follow (a
// group of adjacent rows is eight short streams a group, which measured
// about 20 GB/s against 33 for one long stream on Zen 5, even with
// software prefetching). An odd group of four left by f8 takes f4.
func newBQK32ZKernel(t ggml.Type, f1 bqkFn32, f4, f8 bqkFn32s) *bqkKernel {
	k := newBQK32Kernel("vnni", t, f1, nil)
	k.dot4n = func(w *bqWeights, j, ng int, a *ggml.Act, r int, y []float32) {
		nb, n := w.k/32, 4*ng
		_ = y[n-1]
		rows := w.raw[j*w.rb : (j+n)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		xs := a.Lanes[r*nb*8 : (r+1)*nb*8]
		if t == ggml.Q4_0 {
			xs = a.Sum[r*nb : (r+1)*nb] // its offset off the block's sum
		}
		o := 0
		if t == ggml.Q4_0 && zEight {
			o = q4decDot4n(nb, rows, w.rb, x, xd, xs, y[:n]) // the same bits in fewer instructions
		}
		if s := (n - o) / 8; zEight && s > 0 {
			f8(nb, &rows[o*w.rb], s*w.rb, &x[0], &xd[0], &xs[0], &y[o], s, w.rb, s)
			o += 8 * s
		}
		if s := (n - o) / 4; s > 0 {
			f4(nb, &rows[o*w.rb], s*w.rb, &x[0], &xd[0], &xs[0], &y[o], s, w.rb, s)
		}
	}
	k.dot4 = func(w *bqWeights, j int, a *ggml.Act, r int, y []float32) { k.dot4n(w, j, 1, a, r, y) }
	return k
}

// newBQKKernel wraps the one-row assembly kernel f of K type t (nil: the
// Go one) and its four-row kernel f4 (nil: none); xs is the sums the
// kernels take: the 32-value sums (Q4_K, Q5_K) or the 16-value sums
// (Q2_K, Q3_K, Q6_K) of core/ggml's Act.
func newBQKKernel(name string, t ggml.Type, f bqkFn, f4 bqkFn32) *bqkKernel {
	be, bs := t.BlockSize(), t.BlockBytes()
	sums := func(a *ggml.Act, r, nb int) []int32 {
		if t == ggml.Q6_K || t == ggml.Q2_K || t == ggml.Q3_K {
			return a.Sum[r*nb*16 : (r+1)*nb*16]
		}
		return a.Sum32[r*nb*8 : (r+1)*nb*8]
	}
	k := &bqkKernel{name: name, dot: bqkGo.dot}
	if f != nil {
		k.dot = func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
			nb := w.k / be
			row := w.raw[j*w.rb : j*w.rb+nb*bs]
			x := a.Q[r*w.k : r*w.k+w.k]
			xd := a.D[r*nb : r*nb+nb]
			xs := sums(a, r, nb)
			return f(nb, &row[0], &x[0], &xd[0], &xs[0])
		}
	}
	if f4 != nil {
		k.dot4 = func(w *bqWeights, j int, a *ggml.Act, r int, y []float32) {
			nb := w.k / be
			_ = y[3]
			rows := w.raw[j*w.rb : (j+3)*w.rb+nb*bs]
			x := a.Q[r*w.k : r*w.k+w.k]
			xd := a.D[r*nb : r*nb+nb]
			xs := sums(a, r, nb)
			f4(nb, &rows[0], w.rb, &x[0], &xd[0], &xs[0], &y[0])
		}
	}
	return k
}

// bqkFnK4 is a K type's ZMM four-row kernel (sigK4 of internal/asmgenbqk's
// k4.go): ng groups of four rows, group g's rows at w + g·rb + r·ldw and
// its outputs at y[g + r·ldy] (r = 0..3).
type bqkFnK4 = func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)

// newBQKKernelN is newBQKKernel for a four-row kernel f4 of ng groups a
// call (the VNNI ones): dot4 one group of four adjacent rows; dot4n takes
// its 4·ng rows as four quarters of ng rows, a group one row of each, so
// that each of the four rows the kernel reads at once walks its quarter
// from start to end: four long sequential streams that the hardware's
// prefetcher follows (see sigK4).
func newBQKKernelN(t ggml.Type, f bqkFn, f4 bqkFnK4) *bqkKernel {
	k := newBQKKernel("vnni", t, f, nil)
	be := t.BlockSize()
	call := func(w *bqWeights, j, ng int, a *ggml.Act, r int, y []float32, ldw, ldy int) {
		nb := w.k / be
		_ = y[4*ng-1]
		rows := w.raw[j*w.rb : (j+4*ng)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		var xs []int32
		if t == ggml.Q6_K {
			xs = a.Sum[r*nb*16 : (r+1)*nb*16]
		} else {
			xs = a.Sum32[r*nb*8 : (r+1)*nb*8]
		}
		f4(nb, &rows[0], ldw, &x[0], &xd[0], &xs[0], &y[0], ng, ldy)
	}
	k.dot4n = func(w *bqWeights, j, ng int, a *ggml.Act, r int, y []float32) {
		call(w, j, ng, a, r, y, ng*w.rb, ng)
	}
	k.dot4 = func(w *bqWeights, j int, a *ggml.Act, r int, y []float32) { call(w, j, 1, a, r, y, w.rb, 1) }
	return k
}

// newBQK32Kernel wraps the one-row and four-row kernels of a 32-element
// type (xs: the lane sums of core/ggml's Act).
func newBQK32Kernel(name string, t ggml.Type, f1, f4 bqkFn32) *bqkKernel {
	call := func(f bqkFn32, w *bqWeights, j, nr int, a *ggml.Act, r int, y []float32) {
		nb := w.k / 32
		_ = y[nr-1]
		rows := w.raw[j*w.rb : (j+nr)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		xs := a.Lanes[r*nb*8 : (r+1)*nb*8]
		f(nb, &rows[0], w.rb, &x[0], &xd[0], &xs[0], &y[0])
	}
	return &bqkKernel{
		name: name,
		dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
			var y [1]float32
			call(f1, w, j, 1, a, r, y[:])
			return y[0]
		},
		dot4: func(w *bqWeights, j int, a *ggml.Act, r int, y []float32) {
			call(f4, w, j, 4, a, r, y)
		},
	}
}

// bqkFn32m is the kernel of a 32-element type with a minimum (Q4_1,
// Q5_1): as bqkFn32, sd the activations' SumD.
type bqkFn32m = func(nb int, w *uint8, ldw int, x *int8, xd *float32, sd *float32, y *float32)

// newBQK32mKernel wraps the one-row and four-row kernels of Q4_1 or Q5_1.
func newBQK32mKernel(name string, f1, f4 bqkFn32m) *bqkKernel {
	call := func(f bqkFn32m, w *bqWeights, j, nr int, a *ggml.Act, r int, y []float32) {
		nb := w.k / 32
		_ = y[nr-1]
		rows := w.raw[j*w.rb : (j+nr)*w.rb]
		x := a.Q[r*w.k : r*w.k+w.k]
		xd := a.D[r*nb : r*nb+nb]
		sd := a.SumD[r*nb : r*nb+nb]
		f(nb, &rows[0], w.rb, &x[0], &xd[0], &sd[0], &y[0])
	}
	return &bqkKernel{
		name: name,
		dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
			var y [1]float32
			call(f1, w, j, 1, a, r, y[:])
			return y[0]
		},
		dot4: func(w *bqWeights, j int, a *ggml.Act, r int, y []float32) {
			call(f4, w, j, 4, a, r, y)
		},
	}
}

// archBQKKernel is the assembly kernel of type t under the forced family f
// (qkernelFamily), nil where there is none (Go runs).
func archBQKKernel(t ggml.Type, f string) *bqkKernel {
	if f == "generic" || !hasBQKAVX2 {
		return nil
	}
	if k := bqkZ[t]; k != nil && hasBQIVNNI && cpu.X86.HasAVX512BW && useQ512(f) && f != "vnni256" &&
		(t != ggml.Q5_0 || cpu.X86.HasAVX512BITALG) {
		return k
	}
	if k := bqkVNNI[t]; k != nil && hasBQIVNNI && useQ512(f) && (k.dot4 == nil || t.BlockSize() == 32 || cpu.X86.HasAVX512BW) {
		return k
	}
	return bqkAVX2[t]
}

type bqkFloatFn = func(nb int, w *uint8, x *float32, xs *float32) float32

// bqkFloat are the typed float path's AVX2+FMA kernels.
var bqkFloat = map[ggml.Type]bqkFloatFn{ggml.Q4_K: bqkQ4KFloatAVX2, ggml.Q6_K: bqkQ6KFloatAVX2, ggml.Q4_0: bqkQ4_0FloatAVX2, ggml.Q5_0: bqkQ5_0FloatAVX2, ggml.Q8_0: bqkQ8_0FloatAVX2}

// archBQKFloat is the float path's assembly kernel of type t (nil: Go).
func archBQKFloat(t ggml.Type) bqkFloatFn {
	if !hasBQKAVX2 || !cpu.X86.HasFMA {
		return nil
	}
	return bqkFloat[t]
}
