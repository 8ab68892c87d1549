//go:build !amd64

package native

func packXTAsm(dst, x []float32, c, hw, mr, c0, c1 int) bool { return false }
