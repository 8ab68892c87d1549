//go:build !amd64

package native

const hasLayout512 = false

func deinterleave3(x, y0, y1, y2 []float32) { deinterleave3Go(x, y0, y1, y2) }

func maxPool2x2Rows(rows, ow int, x, y []float32) { maxPool2x2RowsGo(rows, ow, x, y) }
