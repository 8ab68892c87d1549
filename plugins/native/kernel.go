//go:generate go run ./internal/asmgen -out kernels_amd64.s -stubs kernels_amd64.go -pkg native

package native

import (
	"os"
	"unsafe"
)

// A microKernel computes one mr×nr tile of C = init + A·B, reading mr rows
// of A in place (lda floats apart) and a panel of B (kc rows of nr floats,
// ldb apart: nr for a packed panel, more for B read in place). flags&3 picks init (initZero, initC, initColBias, initRowBias);
// flagClamp clamps the result to [lo, hi] keeping NaN. The contract is the
// one the generated assembly documents (internal/asmgen).
type microKernel struct {
	name   string
	mr, nr int
	// kc and mc are the cache blocks: kc steps of k per B panel (the panel,
	// kc·nr floats, stays in L1), mc rows of A per block (in L2).
	kc, mc int
	fn     kernelFn
	// tails[h], where not nil, is the kernel of h < mr rows (same nr,
	// same contract): a GEMM's last, partial row tile, computed in place
	tails []kernelFn
	// packedA[h], where the kernel has them (h from 1 to mr), is the
	// kernel of h rows reading A packed by packA (lda unused): the
	// weights of a convolution, packed once when its plan is made
	packedA []kernelFn
}

// kernelFn is a micro-kernel's function (microKernel).
type kernelFn = func(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags int, lo, hi float32)

const (
	initZero    = 0
	initC       = 1
	initColBias = 2
	initRowBias = 3
	flagClamp   = 4
)

// kernelsAvailable lists the micro-kernels this machine can run, fastest
// first: the architecture's (archKernels), then the portable one.
var kernelsAvailable = append(archKernels(), generic)

// generic is the portable Go micro-kernel, for every GOARCH.
var generic = microKernel{name: "generic4x4", mr: 4, nr: 4, kc: 256, mc: 64, fn: gemmGeneric4x4}

// kernelEnv forces a micro-kernel by name (tests and benchmarks compare
// them); unknown or unavailable names are ignored.
const kernelEnv = "SWITCHYARD_NATIVE_KERNEL"

// bestKernel is the micro-kernel the backend uses.
func bestKernel() microKernel {
	if want := os.Getenv(kernelEnv); want != "" {
		for _, k := range kernelsAvailable {
			if k.name == want {
				return k
			}
		}
	}
	return kernelsAvailable[0]
}

// gemmGeneric4x4 is the portable micro-kernel: 16 scalar accumulators.
func gemmGeneric4x4(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags int, lo, hi float32) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	cs := unsafe.Slice(c, 3*ldc+4)
	switch flags & 3 {
	case initC:
		c00, c01, c02, c03 = cs[0], cs[1], cs[2], cs[3]
		c10, c11, c12, c13 = cs[ldc], cs[ldc+1], cs[ldc+2], cs[ldc+3]
		c20, c21, c22, c23 = cs[2*ldc], cs[2*ldc+1], cs[2*ldc+2], cs[2*ldc+3]
		c30, c31, c32, c33 = cs[3*ldc], cs[3*ldc+1], cs[3*ldc+2], cs[3*ldc+3]
	case initColBias:
		bs := unsafe.Slice(bias, 4)
		c00, c01, c02, c03 = bs[0], bs[1], bs[2], bs[3]
		c10, c11, c12, c13 = bs[0], bs[1], bs[2], bs[3]
		c20, c21, c22, c23 = bs[0], bs[1], bs[2], bs[3]
		c30, c31, c32, c33 = bs[0], bs[1], bs[2], bs[3]
	case initRowBias:
		bs := unsafe.Slice(bias, 4)
		c00, c01, c02, c03 = bs[0], bs[0], bs[0], bs[0]
		c10, c11, c12, c13 = bs[1], bs[1], bs[1], bs[1]
		c20, c21, c22, c23 = bs[2], bs[2], bs[2], bs[2]
		c30, c31, c32, c33 = bs[3], bs[3], bs[3], bs[3]
	}
	if kc > 0 {
		a0 := unsafe.Slice(a, 3*lda+kc)
		a1, a2, a3 := a0[lda:lda+kc], a0[2*lda:2*lda+kc], a0[3*lda:3*lda+kc]
		a0 = a0[:kc]
		bp := unsafe.Slice(b, (kc-1)*ldb+4)
		for k := range a0 {
			bk := bp[k*ldb : k*ldb+4 : k*ldb+4]
			b0, b1, b2, b3 := bk[0], bk[1], bk[2], bk[3]
			x0, x1, x2, x3 := a0[k], a1[k], a2[k], a3[k]
			c00 += x0 * b0
			c01 += x0 * b1
			c02 += x0 * b2
			c03 += x0 * b3
			c10 += x1 * b0
			c11 += x1 * b1
			c12 += x1 * b2
			c13 += x1 * b3
			c20 += x2 * b0
			c21 += x2 * b1
			c22 += x2 * b2
			c23 += x2 * b3
			c30 += x3 * b0
			c31 += x3 * b1
			c32 += x3 * b2
			c33 += x3 * b3
		}
	}
	cs[0], cs[1], cs[2], cs[3] = c00, c01, c02, c03
	cs[ldc], cs[ldc+1], cs[ldc+2], cs[ldc+3] = c10, c11, c12, c13
	cs[2*ldc], cs[2*ldc+1], cs[2*ldc+2], cs[2*ldc+3] = c20, c21, c22, c23
	cs[3*ldc], cs[3*ldc+1], cs[3*ldc+2], cs[3*ldc+3] = c30, c31, c32, c33
	if flags&flagClamp != 0 {
		for _, r := range [4]int{0, ldc, 2 * ldc, 3 * ldc} {
			for j := r; j < r+4; j++ {
				cs[j] = clamp(cs[j], lo, hi)
			}
		}
	}
}

// clamp is min(max(x, lo), hi) keeping NaN.
func clamp(x, lo, hi float32) float32 {
	if x < lo {
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

func axpyGo(a float32, x, y []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

func clampGo(y, x []float32, lo, hi float32) {
	x = x[:len(y)]
	for i, v := range x {
		y[i] = clamp(v, lo, hi)
	}
}

func dotGo(x, y []float32) float32 {
	y = y[:len(x)]
	var s float32
	for i, v := range x {
		s += v * y[i]
	}
	return s
}
