//go:build (linux || darwin || freebsd || netbsd) && (amd64 || arm64 || loong64 || riscv64)

package cabi

import (
	"runtime"

	"github.com/ebitengine/purego"
)

// supported reports whether this platform can open C delegates.
const supported = true

func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

// rtldNoload is RTLD_NOLOAD of glibc and musl (Linux only here).
const rtldNoload = 0x4

// dlloaded reports whether the dynamic loader already holds an object
// loaded under this exact name (glibc matches names before files, so a
// stale /proc/self/fd/N name must not be reused for another library). Only
// Linux loads by descriptor names; elsewhere every copy has its own path.
func dlloaded(path string) bool {
	if runtime.GOOS != "linux" {
		return false
	}
	h, err := purego.Dlopen(path, purego.RTLD_LAZY|rtldNoload)
	if err != nil || h == 0 {
		return false
	}
	_ = purego.Dlclose(h)
	return true
}

func dlsym(handle uintptr, name string) (uintptr, error) { return purego.Dlsym(handle, name) }

func dlclose(handle uintptr) error { return purego.Dlclose(handle) }

// call invokes a C function pointer with integer/pointer arguments and
// returns its integer result. Pointers to Go memory passed as uintptr stay
// on the heap and alive for the call (//go:uintptrescapes, as SyscallN).
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) uintptr {
	r1, _, _ := purego.SyscallN(fn, args...)
	return r1
}
