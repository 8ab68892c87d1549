//go:build !((linux || darwin || freebsd || netbsd) && (amd64 || arm64 || loong64 || riscv64))

package cabi

import (
	"errors"
	"runtime"
)

const supported = false

var errPlatform = errors.New("C delegates are not supported on " + runtime.GOOS + "/" + runtime.GOARCH)

func dlopen(path string) (uintptr, error)                { return 0, errPlatform }
func dlsym(handle uintptr, name string) (uintptr, error) { return 0, errPlatform }
func dlloaded(path string) bool                          { return false }
func dlclose(handle uintptr) error                       { return nil }
func call(fn uintptr, args ...uintptr) uintptr           { return 0 }
