//go:build !amd64

package native

func dotRowsI8(w *int8, x *int16, chunks, rows, stride int, acc *int32) {
	panic("native: dotRowsI8 without assembly")
}

// qlstmAsm: no assembly products on this GOARCH.
func qlstmAsm() bool { return false }
