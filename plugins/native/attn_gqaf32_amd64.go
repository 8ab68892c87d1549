package native

//go:noescape
func attnF32WeighAVX512(n, h int, e *float32, v *float32, acc *float32, o *float32)

// attnF32Rows: attn_gqaf32_amd64.s's kernel needs AVX-512 F.
var attnF32Rows = hasGGMLDot512

// attnF32Weigh is ggmlF16Weigh over float32 rows V (len(e) rows of
// len(o) values): o[d] = dotGGML over value d of the rows and the
// weights e, both padded with zeros to a multiple of 64 keys
// (attendRowGGML's one-row sum over ggmlValues' transposed values, its
// bits), reading V as it is; acc is 64·64 values of scratch. False: not
// done (no AVX-512, or len(o) not a multiple of 64), o untouched.
func attnF32Weigh(e, V, acc, o []float32) bool {
	h, n := len(o), len(e)
	if !attnF32Rows || h == 0 || h%64 != 0 || len(V) < n*h || len(acc) < 64*64 {
		return false
	}
	if n == 0 {
		clear(o)
		return true
	}
	attnF32WeighAVX512(n, h, &e[0], &V[0], &acc[0], &o[0])
	return true
}
