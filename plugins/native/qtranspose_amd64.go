package native

// transpose8xN transposes n blocks of 8×16 bytes (qtranspose_amd64.s):
// dst[j·ldd + i] = src[i·lds + j] ^ flip[j%16] for i < 8, j < 16·n.
//
//go:noescape
func transpose8xN(dst *int8, ldd int, src *int8, lds int, n int, flip *byte)

// hasTransposeASM says whether transpose8xN runs here (it needs AVX).
var hasTransposeASM = hasQAVX2
