package native

// packXTAsm is packXT in assembly where the CPU can; false: not done.
func packXTAsm(dst, x []float32, c, hw, mr, c0, c1 int) bool {
	if !hasAVX512F || mr > 16 || hw == 0 || c0 >= c1 {
		return c0 >= c1
	}
	tiles := (hw + mr - 1) / mr
	_, _ = x[(c1-1)*hw+hw-1], dst[(tiles-1)*mr*c+c1*mr-1]
	packXTAVX512(&x[0], hw, &dst[0], c, c0, c1, hw/mr, mr, hw%mr)
	return true
}

//go:noescape
func packXTAVX512(x *float32, hw int, dst *float32, c, c0, c1, tiles, mr, h int)
