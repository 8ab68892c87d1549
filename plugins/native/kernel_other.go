//go:build !amd64

package native

// archKernels: no assembly kernels for this GOARCH yet.
func archKernels() []microKernel { return nil }

func axpy(a float32, x, y []float32)         { axpyGo(a, x[:len(y)], y) }
func clampTo(y, x []float32, lo, hi float32) { clampGo(y, x[:len(y)], lo, hi) }

func binVV(op binOp, y, a, b []float32) bool                   { return false }
func binVS(op binOp, y, a []float32, b float32) bool           { return false }
func binSV(op binOp, y []float32, a float32, b []float32) bool { return false }

func dwTile(R, V, nt int, offs []int, hiOff int, w, x []float32, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32) {
	dwTileGo(R, V, nt, offs, w, x, ldx, y, ldy, bias, clampOn, lo, hi)
}

// hasDW512: no AVX-512 tiles here (dwRun keeps to 4 vectors).
var hasDW512 = false

const dw512Available = false

// hasDWMask: no masked-load kernels here (depthwise fills padded planes).
const hasDWMask = false

func dwMaskTile(R, V int, e *dwEdge, w, x []float32, xoff, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32, smask *[2 * dwLane]int32, _ bool) {
	dwMaskTileGo(R, V, e, w, x, xoff, ldx, y, ldy, bias, clampOn, lo, hi, smask)
}

func maxPool2x2(y, r0, r1 []float32) { maxPool2x2Go(y, r0, r1) }

func maxInto(y, r []float32) { maxIntoGo(y, r) }

const has8x8Transpose = false

func transpose8(nb int, x []float32, ldx int, y []float32, ldy int) {}

func deinterleave2(n int, x, ev, od []float32) { deinterleave2Go(n, x, ev, od) }

func expSum(x, y []float32, m float32) float32 { return expSumGo(x, y, m) }

func dot(x, y []float32) float32 { return dotGo(x, y) }

func runChain(y []float32, ops []chainOp) { runChainGo(y, ops) }

func copyRows32(dst, src []float32, k, ldb int) bool { return false }

// hasDWPacked: no packed depthwise kernels here.
var hasDWPacked = false

const dwPackedAvailable = false

func dwPackedLanes(c int) int { return 0 }

func dwcRun(L, s, rows, ow int, offs []int, hiOff int, w, bias, x []float32, ldx int, y []float32, ldy int, clampOn bool, lo, hi float32) {
	dwcRunGo(L, s, rows, ow, offs, w, bias, x, ldx, y, ldy, clampOn, lo, hi)
}
