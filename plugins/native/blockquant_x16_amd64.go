package native

import "golang.org/x/sys/cpu"

// hasX16 is what every x16 kernel needs: AVX-512 F, BW, VL and VNNI
// (VPDPBUSD on ZMM) and F16C (VCVTPH2PS).
var hasX16 = hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasF16C

// x16Usable reports whether weights compiled now take the x16 layout:
// the CPU has hasX16 and SWITCHYARD_NATIVE_QKERNEL does not force a
// family without ZMM (avx2, vnni256, generic).
func x16Usable() bool {
	f := qkernelFamily()
	return hasX16 && useQ512(f) && f != "vnni256"
}
