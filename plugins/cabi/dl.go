//go:build (linux || darwin || freebsd || netbsd) && (amd64 || arm64 || loong64 || riscv64)

package cabi

import "github.com/ebitengine/purego"

// supported reports whether this platform can open C delegates.
const supported = true

func dlopen(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
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
