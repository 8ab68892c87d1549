//go:generate go run ./internal/asmgenx16b -out blockquant_x16q5_amd64.s -stubs blockquant_x16q5_stubs_amd64.go -pkg native

package native

import (
	"encoding/binary"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
)

// The x16 layout of Q5_0 and Q6_K weights (see blockquant_x16.go for the
// registry and Q4_0/Q8_0): rows repacked at load in groups of 16, the
// rows' quants dword-interleaved (dword lane i of each 64-byte vector is
// row i), so that one VPDPBUSD with an activation dword broadcast from
// memory multiplies the 16 rows at once (internal/asmgenx16b says how
// each type is arranged and computed). A group's blocks come in chunks
// of two (an odd last one alone), each chunk its blocks' first parts,
// then their second, then their third (x16bOff): a chunk of two is a
// whole number of cache lines. The kernels compute core/ggml's Dot to the
// bit; the Go ones here are their portable fallback, on the same layout.
//
// For the registry (x16Kinds), each type gives size (bytes of a group of
// nb blocks a row), repack (16 raw rows of rb bytes into one group) and
// gemv (ng consecutive groups times activation row r into y[0:16·ng]);
// gemvM is gemv for m consecutive activation rows (outputs of row r+q
// at y[q·ldy:]), the small batches of serve's decode.

// x16bForceGo turns the assembly kernels off (tests compare both).
var x16bForceGo = false

// x16bOff is the offset in a group (nb blocks a row) of part p of block
// b, the blocks' parts of sizes parts (16 rows' bytes each).
func x16bOff(parts []int, nb, b, p int) int {
	bb := 0
	for _, s := range parts {
		bb += s
	}
	c, i := 2, b%2
	if b == nb-1 && nb%2 == 1 {
		c = 1
	}
	o := (b - i) * bb
	for q := 0; q < p; q++ {
		o += c * parts[q]
	}
	return o + i*parts[p]
}

// x16q5Parts: Q5_0's quants (four vectors), qh (one), d (16 float16).
var x16q5Parts = []int{256, 64, 32}

// x16q5Size is the bytes of a Q5_0 group (as many as 16 raw rows).
func x16q5Size(nb int) int { return 16 * 22 * nb }

// x16q5Repack repacks the 16 Q5_0 rows of raw (rb bytes apart, nb blocks
// each) into dst (x16q5Size(nb) bytes).
func x16q5Repack(dst, raw []byte, rb, nb int) {
	dst = dst[:x16q5Size(nb)]
	for b := 0; b < nb; b++ {
		q, h, d := x16bOff(x16q5Parts, nb, b, 0), x16bOff(x16q5Parts, nb, b, 1), x16bOff(x16q5Parts, nb, b, 2)
		for i := 0; i < 16; i++ {
			blk := raw[i*rb+22*b : i*rb+22*b+22]
			copy(dst[d+2*i:d+2*i+2], blk[0:2])
			copy(dst[h+4*i:h+4*i+4], blk[2:6])
			for t := 0; t < 4; t++ {
				copy(dst[q+64*t+4*i:q+64*t+4*i+4], blk[6+4*t:10+4*t])
			}
		}
	}
}

// x16q5Block is row i's block b of a Q5_0 group: d and the 32 signed
// values (q − 16).
func x16q5Block(g []byte, nb, b, i int, vals *[32]int32) float32 {
	q, h, d := x16bOff(x16q5Parts, nb, b, 0), x16bOff(x16q5Parts, nb, b, 1), x16bOff(x16q5Parts, nb, b, 2)
	qh := binary.LittleEndian.Uint32(g[h+4*i:])
	for j := 0; j < 16; j++ {
		c := g[q+64*(j/4)+4*i+j%4]
		vals[j] = int32(c&15|uint8(qh>>j<<4&16)) - 16
		vals[j+16] = int32(c>>4|uint8(qh>>(j+12)&16)) - 16
	}
	return graph.F16(binary.LittleEndian.Uint16(g[d+2*i:])).Float32()
}

// x16q5Gemv is ng Q5_0 groups (nb blocks a row) times activation row r.
func x16q5Gemv(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	x16q5GemvM(packed, nb, ng, a, r, 1, y, 0)
}

// x16q5GemvM is x16q5Gemv for activation rows r..r+m-1, row r+q's
// outputs at y[q·ldy:].
func x16q5GemvM(packed []byte, nb, ng int, a *ggml.Act, r, m int, y []float32, ldy int) {
	x16bGemvM(ggml.Q5_0, packed, nb, ng, a, r, m, y, ldy, x16q5GoGemv)
}

// x16bGemvM runs the assembly kernels of type t (one or two activation
// rows a call) where the CPU has them, else gogemv row by row.
func x16bGemvM(t ggml.Type, packed []byte, nb, ng int, a *ggml.Act, r, m int, y []float32, ldy int, gogemv func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32)) {
	for q := 0; q < m; {
		k := min(2, m-q)
		if !x16bArchGemv(t, packed, nb, ng, a, r+q, k, y[q*ldy:], ldy) {
			k = 1
			gogemv(packed, nb, ng, a, r+q, y[q*ldy:])
		}
		q += k
	}
}

// x16q5GoGemv is the portable x16q5Gemv: Dot's dot32 on the layout.
func x16q5GoGemv(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	size := x16q5Size(nb)
	var vals [32]int32
	for g := 0; g < ng; g++ {
		grp := packed[g*size : (g+1)*size]
		for i := 0; i < 16; i++ {
			var acc [8]float32
			for b := 0; b < nb; b++ {
				ab := r*nb + b
				xq := a.Q[ab*32 : ab*32+32]
				sc := x16q5Block(grp, nb, b, i, &vals) * a.D[ab]
				for l := 0; l < 8; l++ {
					p := vals[4*l]*int32(xq[4*l]) + vals[4*l+1]*int32(xq[4*l+1]) + vals[4*l+2]*int32(xq[4*l+2]) + vals[4*l+3]*int32(xq[4*l+3])
					acc[l] = ggml.FMA32(sc, float32(p), acc[l])
				}
			}
			y[16*g+i] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		}
	}
}
