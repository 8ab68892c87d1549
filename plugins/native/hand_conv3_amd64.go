//go:generate go run ./internal/asmgenhand -out hand_amd64.s -stubs hand_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// handC3Kernels reports whether the direct strided 3×3 kernels over few
// input channels run here (AVX-512 F and BMI2; handC3Call calls them).
var handC3Kernels = cpu.X86.HasAVX512F && cpu.X86.HasBMI2

// handDWFlatKernels are the flat 3×3 and 5×5 depthwise kernels
// (hand_dwflat.go), where the CPU has AVX-512 (F).
var handDWFlatKernels = func() []handDWFlatFn {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return []handDWFlatFn{handDWFlat3AVX512, handDWFlat5AVX512}
}()

// handC3Call calls the kernel of left padding pl and n output channels
// directly (through a function value the row addresses would escape to
// the heap: one allocation a call).
func handC3Call(pl, n int, rows *[3 * handC3MaxCin]*float32, cin int, w, b, y *float32, ldy, iw, ow, flags int, lo, hi float32) {
	r := &rows[0]
	switch pl<<8 | n {
	case 4:
		handC3s2p0n4AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 8:
		handC3s2p0n8AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 12:
		handC3s2p0n12AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 16:
		handC3s2p0n16AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 20:
		handC3s2p0n20AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 24:
		handC3s2p0n24AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 4:
		handC3s2p1n4AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 8:
		handC3s2p1n8AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 12:
		handC3s2p1n12AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 16:
		handC3s2p1n16AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 20:
		handC3s2p1n20AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	case 1<<8 | 24:
		handC3s2p1n24AVX512(r, cin, w, b, y, ldy, iw, ow, flags, lo, hi)
	default:
		panic("handC3Call: no kernel")
	}
}
