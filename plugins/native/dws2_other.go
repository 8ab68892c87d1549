//go:build !amd64

package native

// dws2Kernels: the stride-2 parity-plane kernels are amd64 assembly only.
var dws2Kernels []handDWFlatFn

// dws2Split is never called here (dws2Kernels is nil).
func dws2Split(x *float32, planes, ih, iw int, dst *float32, xs int, masks []uint16) {
	panic("dws2Split: no kernel")
}
