package native

import "golang.org/x/sys/cpu"

// quantActAsm: the activation quantizer's assembly runs here (AVX-512
// with VNNI and BW).
var quantActAsm = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI
