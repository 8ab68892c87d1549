//go:generate go run ./internal/asmgenx16a -out blockquant_x16_amd64.s -stubs blockquant_x16_stubs_amd64.go -pkg native

package native

import (
	"encoding/binary"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
)

// Q4_0 in the x16 layout: per block (nb a row) of a group of 16 rows,
// the 16 rows' float16 scales (32 bytes, row i at 2i), then four
// 64-byte vectors: vector t holds in dword i the quant bytes 4t..4t+3 of
// row i's block. Its low nibbles are the weights 4t..4t+3 (against the
// activations' dword t), its high nibbles the weights 16+4t..16+4t+3
// (against dword 4+t). A block is 288 bytes for 16 rows: 18 a row, as
// ggml's. The kernel (internal/asmgenx16a) computes Dot's Q4_0 steps for
// each row: the block's exact int32 sum Σ(u−8)·x (eight VPDPBUSD of the
// unsigned nibbles u from −8·Σx), converted, and added times
// float32(d_w·d_a) by one fused multiply-add into the row's accumulator,
// block after block.

// x16Q40Block is the bytes of one block of a Q4_0 group.
const x16Q40Block = 32 + 4*64

// x16Q40Size is a Q4_0 group's bytes.
func x16Q40Size(nb int) int { return nb * x16Q40Block }

// x16Q40Repack packs 16 raw Q4_0 rows of rb bytes into one group.
func x16Q40Repack(dst, raw []byte, rb, nb int) {
	dst = dst[:nb*x16Q40Block]
	for i := 0; i < 16; i++ {
		row := raw[i*rb : i*rb+18*nb]
		for b := 0; b < nb; b++ {
			blk, o := row[18*b:18*b+18], dst[b*x16Q40Block+4*i:(b+1)*x16Q40Block]
			dst[b*x16Q40Block+2*i], dst[b*x16Q40Block+2*i+1] = blk[0], blk[1]
			le := binary.LittleEndian
			le.PutUint32(o[32:], le.Uint32(blk[2:]))
			le.PutUint32(o[96:], le.Uint32(blk[6:]))
			le.PutUint32(o[160:], le.Uint32(blk[10:]))
			le.PutUint32(o[224:], le.Uint32(blk[14:]))
		}
	}
}

// x16Q40GemvGo is the Q4_0 kernel's arithmetic in Go (the tests' check
// of the layout and the assembly's steps).
func x16Q40GemvGo(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	for g := 0; g < ng; g++ {
		grp := packed[g*nb*x16Q40Block : (g+1)*nb*x16Q40Block]
		for i := 0; i < 16; i++ {
			var acc float32
			for b := 0; b < nb; b++ {
				o := grp[b*x16Q40Block : (b+1)*x16Q40Block]
				ab := r*nb + b
				xq := a.Q[32*ab : 32*ab+32]
				s := -8 * a.Sum[ab]
				for t := 0; t < 4; t++ {
					for k := 0; k < 4; k++ {
						u := o[32+64*t+4*i+k]
						s += int32(u&15)*int32(xq[4*t+k]) + int32(u>>4)*int32(xq[16+4*t+k])
					}
				}
				d := graph.F16(binary.LittleEndian.Uint16(o[2*i:])).Float32()
				acc = ggml.FMA32(d*a.D[ab], float32(s), acc)
			}
			y[16*g+i] = acc
		}
	}
}
