package native

import "golang.org/x/sys/cpu"

// hasQ4decV8: bqkQ4_0Dot8V (Q4_0's eight-row ZMM kernel with a row's
// four blocks in one register: internal/asmgenbqk's q4dec.go) needs
// AVX-512 VBMI (VPERMI2B) and GFNI besides what bqkQ4_0Dot8G needs;
// newBQK32ZKernel takes it for Q4_0 rows of a multiple of four blocks
// (128 elements), where it gives Dot8G's bits.
var hasQ4decV8 = cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512GFNI
