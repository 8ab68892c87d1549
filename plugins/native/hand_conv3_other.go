//go:build !amd64

package native

// handC3Kernels: the direct strided 3×3 kernels are amd64 assembly only.
var handC3Kernels *[2][6]handC3Fn

// handDWFlatKernel: the flat 3×3 depthwise kernel is amd64 assembly only.
var handDWFlatKernel handDWFlatFn
