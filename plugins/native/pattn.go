package native

// dots16 sets out[j] = dot16(x[j·h : j·h+h], y) for each j, h = len(y) a
// multiple of 16 (x holding len(out) rows): in one assembly call where
// the CPU has AVX-512 (pattn_amd64.s, four rows a pass over y), bit for
// bit one dot16 call a row.
func dots16(out, x, y []float32) {
	h, n := len(y), len(out)
	if n == 0 {
		return
	}
	if h%16 != 0 {
		panic("native: dots16 rows not a multiple of 16")
	}
	x = x[:n*h]
	if h > 0 && dots16Fast(out, x, y) {
		return
	}
	for j := range out {
		out[j] = dot16(x[j*h:j*h+h], y)
	}
}

// dotsGGML sets out[j] = dotGGML(x[j·h : j·h+h], y) for each j, h =
// len(y) (x holding len(out) rows): the whole sixty-fours of all rows in
// one assembly call where the CPU has AVX-512 (four rows a pass), then
// each row's last values one by one as dotGGML adds them; bit for bit one
// dotGGML call a row.
func dotsGGML(out, x, y []float32) {
	h, n := len(y), len(out)
	if n == 0 {
		return
	}
	x = x[:n*h]
	np := h &^ 63
	if np == 0 || !dotsGGMLFast(out, x, y, h, np) {
		for j := range out {
			out[j] = dotGGML(x[j*h:j*h+h], y)
		}
		return
	}
	if np < h {
		for j := range out {
			out[j] = fmaSeq(x[j*h+np:j*h+h], y[np:], out[j])
		}
	}
}
