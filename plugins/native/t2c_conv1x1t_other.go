//go:build !amd64

package native

// gemmATKernels: none on this architecture (t2c_conv1x1t_amd64.go).
var gemmATKernels []kernelFn

const gemmATMR, gemmATNR = 0, 0
