package native

import "golang.org/x/sys/cpu"

// dws2Kernels are the stride-2 parity-plane kernels (dws2.go) by filter
// (3, 5), top padding and left padding (k/2−1, k/2), where the CPU has
// AVX-512 (F).
var dws2Kernels = func() []handDWFlatFn {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return []handDWFlatFn{
		handDWS2k3t0l0AVX512, handDWS2k3t0l1AVX512, handDWS2k3t1l0AVX512, handDWS2k3t1l1AVX512,
		handDWS2k5t1l1AVX512, handDWS2k5t1l2AVX512, handDWS2k5t2l1AVX512, handDWS2k5t2l2AVX512,
	}
}()

// dws2Split splits planes planes of ih×iw floats at x into their parity
// planes at dst (handDWSplit2AVX512).
func dws2Split(x *float32, planes, ih, iw int, dst *float32, xs int, masks []uint16) {
	handDWSplit2AVX512(x, planes, ih, iw, dst, xs, &masks[0], len(masks)/3)
}
