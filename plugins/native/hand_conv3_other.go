//go:build !amd64

package native

// handC3Kernels: the direct strided 3×3 kernels are amd64 assembly only.
const handC3Kernels = false

// handC3Call is never called here (handC3Kernels is false).
func handC3Call(pl, n int, rows *[3 * handC3MaxCin]*float32, cin int, w, b, y *float32, ldy, iw, ow, flags int, lo, hi float32) {
	panic("handC3Call: no kernel")
}

// handDWFlatKernels: the flat depthwise kernels are amd64 assembly only.
var handDWFlatKernels []handDWFlatFn
