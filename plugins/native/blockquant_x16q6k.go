package native

import (
	"encoding/binary"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
)

// x16q6kParts: Q6_K's quants (16 quads of three vectors), the rows'
// scales (16 bytes a sub-block), d (16 float16); see
// internal/asmgenx16b.
var x16q6kParts = []int{3072, 256, 32}

// x16q6kSize is the bytes of a Q6_K group (as many as 16 raw rows).
func x16q6kSize(nb int) int { return 16 * 210 * nb }

// q6kUnpack is the 256 unsigned quants (0..63) of a raw Q6_K block,
// eight at a time in a uint64.
func q6kUnpack(blk []byte, e *[256]byte) {
	const m4, m2 = 0x0F0F0F0F0F0F0F0F, 0x0303030303030303
	le := binary.LittleEndian
	for h := 0; h < 2; h++ {
		for l := 0; l < 32; l += 8 {
			a, c, q := le.Uint64(blk[64*h+l:]), le.Uint64(blk[64*h+32+l:]), le.Uint64(blk[128+32*h+l:])
			le.PutUint64(e[128*h+l:], a&m4|(q&m2)<<4)
			le.PutUint64(e[128*h+32+l:], c&m4|(q>>2&m2)<<4)
			le.PutUint64(e[128*h+64+l:], a>>4&m4|(q>>4&m2)<<4)
			le.PutUint64(e[128*h+96+l:], c>>4&m4|(q>>6&m2)<<4)
		}
	}
}

// x16q6kRepack repacks the 16 Q6_K rows of raw (rb bytes apart, nb
// super-blocks each) into dst (x16q6kSize(nb) bytes).
func x16q6kRepack(dst, raw []byte, rb, nb int) {
	const m2 = 0x03030303
	le := binary.LittleEndian
	dst = dst[:x16q6kSize(nb)]
	var e [256]byte
	for b := 0; b < nb; b++ {
		q, s, d := x16bOff(x16q6kParts, nb, b, 0), x16bOff(x16q6kParts, nb, b, 1), x16bOff(x16q6kParts, nb, b, 2)
		for i := 0; i < 16; i++ {
			blk := raw[i*rb+210*b : i*rb+210*b+210]
			copy(dst[d+2*i:d+2*i+2], blk[208:210])
			q6kUnpack(blk, &e)
			for g := 0; g < 16; g++ {
				dst[s+16*g+i] = blk[192+g]
				o := dst[q+192*g+4*i : q+192*g+4*i+132]
				e3 := le.Uint32(e[16*g+12:])
				le.PutUint32(o[0:], le.Uint32(e[16*g:])|(e3&m2)<<6)
				le.PutUint32(o[64:], le.Uint32(e[16*g+4:])|(e3>>2&m2)<<6)
				le.PutUint32(o[128:], le.Uint32(e[16*g+8:])|(e3>>4&m2)<<6)
			}
		}
	}
}

// x16q6kBlock is row i's super-block b of a Q6_K group: d, the 256
// unsigned quants and the 16 scales.
func x16q6kBlock(g []byte, nb, b, i int, vals *[256]int32, sc *[16]int32) float32 {
	q, s, d := x16bOff(x16q6kParts, nb, b, 0), x16bOff(x16q6kParts, nb, b, 1), x16bOff(x16q6kParts, nb, b, 2)
	for gg := 0; gg < 16; gg++ {
		sc[gg] = int32(int8(g[s+16*gg+i]))
		for j := 0; j < 4; j++ {
			o := q + 192*gg + 4*i + j
			a, bb, c := g[o], g[o+64], g[o+128]
			vals[16*gg+j] = int32(a & 63)
			vals[16*gg+4+j] = int32(bb & 63)
			vals[16*gg+8+j] = int32(c & 63)
			vals[16*gg+12+j] = int32(a>>6 | bb>>6<<2 | c>>6<<4)
		}
	}
	return graph.F16(binary.LittleEndian.Uint16(g[d+2*i:])).Float32()
}

// x16q6kGemv is ng Q6_K groups (nb super-blocks a row) times activation
// row r.
func x16q6kGemv(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	x16q6kGemvM(packed, nb, ng, a, r, 1, y, 0)
}

// x16q6kGemvM is x16q6kGemv for activation rows r..r+m-1, row r+q's
// outputs at y[q·ldy:].
func x16q6kGemvM(packed []byte, nb, ng int, a *ggml.Act, r, m int, y []float32, ldy int) {
	x16bGemvM(ggml.Q6_K, packed, nb, ng, a, r, m, y, ldy, x16q6kGoGemv)
}

// x16q6kGoGemv is the portable x16q6kGemv: Dot's dotK on the layout.
func x16q6kGoGemv(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	size := x16q6kSize(nb)
	var vals [256]int32
	var sc [16]int32
	for g := 0; g < ng; g++ {
		grp := packed[g*size : (g+1)*size]
		for i := 0; i < 16; i++ {
			var acc float32
			for b := 0; b < nb; b++ {
				ab := r*nb + b
				xq := a.Q[ab*ggml.QK : ab*ggml.QK+ggml.QK]
				d := x16q6kBlock(grp, nb, b, i, &vals, &sc)
				var S int32
				for j := 0; j < 16; j++ {
					var p int32
					for l := 16 * j; l < 16*j+16; l++ {
						p += (vals[l] - 32) * int32(xq[l])
					}
					S += sc[j] * p
				}
				acc = acc + float32(float32(S)*float32(d*a.D[ab]))
			}
			y[16*g+i] = acc
		}
	}
}
