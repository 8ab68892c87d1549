//go:build !amd64

package native

func transpose8xN(dst *int8, ldd int, src *int8, lds int, n int, flip *byte) {
	panic("native: transpose8xN without assembly")
}

// hasTransposeASM: no assembly transpose for this GOARCH.
const hasTransposeASM = false
