//go:build unix

package onnx

import (
	"math"
	"os"
	"syscall"
)

// mmap maps the whole file read-only. The mapping is never unmapped: the
// model's initializers alias it for the life of the process's use of them.
func mmap(f *os.File, size int64) ([]byte, error) {
	if size > math.MaxInt {
		return nil, syscall.EFBIG
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
}

func float32frombits(u uint32) float32 { return math.Float32frombits(u) }
