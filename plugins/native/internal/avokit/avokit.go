// Package avokit holds what the native backend's avo generators share
// (plugins/native/internal/asmgen*): read-only data tables.
package avokit

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// Bytes32 declares a 32-byte read-only table named name whose byte i is
// f(i), for loading into a YMM register.
func Bytes32(name string, f func(i int) byte) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 32; i += 8 {
		var v uint64
		for b := 7; b >= 0; b-- {
			v = v<<8 | uint64(f(i+b))
		}
		DATA(i, U64(v))
	}
	return m
}
