//go:generate go run ./internal/asmgengqa -out gqa_amd64.s -stubs gqa_stubs_amd64.go -pkg native

package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"golang.org/x/sys/cpu"
)

// f16Asm: VCVTPH2PS and VCVTPS2PH (F16C, with AVX for YMM) convert the
// float16 cache (tests turn it off to compare with the Go conversions).
var f16Asm = cpu.X86.HasAVX && cpu.X86.HasF16C

// archF16Widen widens the leading multiple of 16 of src into dst with
// F16C and returns how many it did (0 without F16C).
func archF16Widen(dst []float32, src []graph.F16) int {
	n := len(src) &^ 15
	if !f16Asm || n == 0 {
		return 0
	}
	_ = dst[n-1]
	f16WidenF16C(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), n)
	return n
}

// archF16Round rounds the leading multiple of 16 of x to float16 and
// back in place and returns how many it did.
func archF16Round(x []float32) int {
	n := len(x) &^ 15
	if !f16Asm || n == 0 {
		return 0
	}
	f16RoundF16C(&x[0], n)
	return n
}
