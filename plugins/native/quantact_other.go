//go:build !amd64

package native

// quantActAsm: no assembly quantizer for this GOARCH.
const quantActAsm = false

func quantAct32(int, *float32, *int8, *float32, *int32, *int32, *float32) {
	panic("unreachable")
}

func quantAct256(int, *float32, *int8, *float32, *int32) { panic("unreachable") }
