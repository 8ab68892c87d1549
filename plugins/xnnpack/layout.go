package xnnpack

// Layout helpers. A layout perm maps physical dims to logical ones:
// physical dim i holds logical dim perm[i]; nil is the identity.

func identity(r int) []int {
	p := make([]int, r)
	for i := range p {
		p[i] = i
	}
	return p
}

func isIdentity(p []int) bool {
	for i, v := range p {
		if v != i {
			return false
		}
	}
	return true
}

func permEq(a, b []int) bool {
	if a == nil || b == nil {
		return isIdentity(a) && isIdentity(b)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// permute returns shape in physical order for perm.
func permute(shape, perm []int) []int {
	out := make([]int, len(shape))
	if perm == nil {
		copy(out, shape)
		return out
	}
	for i, p := range perm {
		out[i] = shape[p]
	}
	return out
}

// sameOrder reports whether the two layouts of a value of logical shape
// differ only in where unit dims sit (so one is a reshape of the other).
func sameOrder(shape, a, b []int) bool {
	pa, pb := permute(shape, a), permute(shape, b)
	la, lb := nonUnit(shape, a, pa), nonUnit(shape, b, pb)
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if la[i] != lb[i] {
			return false
		}
	}
	return true
}

func nonUnit(shape, perm, phys []int) []int {
	var out []int
	for i, d := range phys {
		if d != 1 {
			l := i
			if perm != nil {
				l = perm[i]
			}
			out = append(out, l)
		}
	}
	return out
}

// transposeData returns src (logical shape, layout srcPerm) in layout dstPerm.
func transposeData(src []float32, shape, srcPerm, dstPerm []int) []float32 {
	dst := make([]float32, len(src))
	transposeInto(dst, src, shape, srcPerm, dstPerm)
	return dst
}

// transposeInto copies a value of logical shape from layout srcPerm to
// layout dstPerm.
func transposeInto(dst, src []float32, shape, srcPerm, dstPerm []int) {
	r := len(shape)
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n == 0 {
		return
	}
	if permEq(srcPerm, dstPerm) || sameOrder(shape, srcPerm, dstPerm) {
		copy(dst[:n], src[:n])
		return
	}
	if srcPerm == nil {
		srcPerm = identity(r)
	}
	if dstPerm == nil {
		dstPerm = identity(r)
	}
	sdims := permute(shape, srcPerm)
	sstr := make([]int, r)
	acc := 1
	for i := r - 1; i >= 0; i-- {
		sstr[i] = acc
		acc *= sdims[i]
	}
	pos := make([]int, r) // logical dim → src physical position
	for i, l := range srcPerm {
		pos[l] = i
	}
	ddims := permute(shape, dstPerm)
	str := make([]int, r) // src stride for each dst physical dim
	for j, l := range dstPerm {
		str[j] = sstr[pos[l]]
	}
	if transposeTiled(dst[:n], src[:n], ddims, str) {
		return
	}
	idx := make([]int, r)
	last := ddims[r-1]
	ls := str[r-1]
	so := 0
	for d := 0; d < n; d += last {
		s := so
		row := dst[d : d+last]
		for k := range row {
			row[k] = src[s]
			s += ls
		}
		// advance the odometer over dims 0..r-2
		for j := r - 2; j >= 0; j-- {
			idx[j]++
			so += str[j]
			if idx[j] < ddims[j] {
				break
			}
			so -= str[j] * idx[j]
			idx[j] = 0
		}
	}
}

// transposeTiled handles the layout changes that are a batch of 2-D
// transposes once unit dims are dropped and dims that stay next to each
// other are merged (NCHW↔NHWC is [N][C][HW] ↔ [N][HW][C]): dst's dims
// ddims, row-major, read src at Σ i_k·str_k. It reports false for any
// other permutation.
func transposeTiled(dst, src []float32, ddims, str []int) bool {
	var md, ms [8]int
	m := 0
	for j := range ddims {
		if ddims[j] == 1 {
			continue
		}
		if m > 0 && ms[m-1] == str[j]*ddims[j] {
			md[m-1] *= ddims[j]
			ms[m-1] = str[j]
			continue
		}
		if m == len(md) {
			return false
		}
		md[m], ms[m] = ddims[j], str[j]
		m++
	}
	// want [B] X Y with X read at stride 1 and Y at stride sy = X (so the
	// source is [B][Y][X]) and B at stride X·Y
	var nb, sb int
	switch {
	case m == 2:
		nb, sb = 1, 0
	case m == 3:
		nb, sb = md[0], ms[0]
	default:
		return false
	}
	nx, sx, ny, sy := md[m-2], ms[m-2], md[m-1], ms[m-1]
	if sx != 1 || sy != nx || (m == 3 && sb != nx*ny) {
		return false
	}
	const tile = 16
	for b := 0; b < nb; b++ {
		s := src[b*sb : b*sb+nx*ny]
		d := dst[b*nx*ny : (b+1)*nx*ny]
		switch {
		case ny == 3:
			// an RGB image to NHWC
			s0, s1, s2 := s[:nx], s[nx:2*nx], s[2*nx:3*nx]
			for x := range s0 {
				o := d[3*x : 3*x+3 : 3*x+3]
				o[0], o[1], o[2] = s0[x], s1[x], s2[x]
			}
		case ny <= tile:
			// few columns: each source row is read once, written at a
			// short stride
			for y := 0; y < ny; y++ {
				row := s[y*nx : (y+1)*nx]
				for x, v := range row {
					d[x*ny+y] = v
				}
			}
		case nx <= tile:
			for x := 0; x < nx; x++ {
				out := d[x*ny : (x+1)*ny]
				for y := range out {
					out[y] = s[y*nx+x]
				}
			}
		default:
			for x0 := 0; x0 < nx; x0 += tile {
				x1 := min(x0+tile, nx)
				for y0 := 0; y0 < ny; y0 += tile {
					y1 := min(y0+tile, ny)
					for x := x0; x < x1; x++ {
						out := d[x*ny+y0 : x*ny+y1]
						k := y0*nx + x
						for y := range out {
							out[y] = s[k]
							k += nx
						}
					}
				}
			}
		}
	}
	return true
}
