//go:build !amd64

package native

// handC3Kernels: the direct strided 3×3 kernels are amd64 assembly only.
var handC3Kernels *[2][6]handC3Fn

// handDWFlatKernels: the flat depthwise kernels are amd64 assembly only.
var handDWFlatKernels []handDWFlatFn
