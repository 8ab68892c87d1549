// Command asmgenx16b generates the amd64 assembly of the native backend's
// x16 kernels for Q5_0 and Q6_K weights (see the package native's
// blockquant_x16q5.go and blockquant_x16q6k.go): decode's products
// (one or two activation rows) of weights repacked at load into groups
// of 16 rows whose quants are dword-interleaved, so that one VPDPBUSD
// with an activation dword broadcast from memory multiplies 16 rows at
// once, on ZMM (AVX-512 BW, VNNI, BITALG, GFNI). It writes its own pair
// of files; the package's TestGeneratedAssemblyIsCurrent runs it and
// fails when they are stale.
//
//	go run ./plugins/native/internal/asmgenx16b -out plugins/native/blockquant_x16q5_amd64.s -stubs plugins/native/blockquant_x16q5_stubs_amd64.go -pkg native
//
// The layout of a group (the package's x16bOff): blocks in chunks of two
// (an odd last block alone), each chunk its blocks' first parts, then
// their second parts, then their third, so that a chunk of two is a
// whole number of cache lines (a ZMM load never splits one in a
// 64-byte-aligned group). Dword lane i of every 64-byte vector is row i
// of the group.
//
//   - Q5_0 (parts 256, 64, 32 bytes a block): four vectors of quants,
//     vector t holding each row's quant bytes 4t..4t+3 (low nibbles:
//     elements 4t..4t+3, activation dword t; high nibbles elements
//     16+4t.., dword 4+t), the rows' qh (one dword a row), the rows'
//     float16 d. The fifth bits come from qh by VPSHUFBITQMB (a mask of
//     the 64 bytes of one activation dword's products), added as a
//     masked OR of 16. core/ggml's Dot keeps eight lane sums a row (lane
//     l: elements 4l..4l+3): here lane l is one VPDPBUSD of all 16 rows,
//     started at −16·Lanes[l] (the offset), converted and added times
//     float32(d·d_a) by a fused multiply-add into lane l's accumulator;
//     the eight reduced at the end as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
//     as Dot does, without a horizontal step (each row is a dword lane).
//   - Q6_K (parts 3072, 256, 32 a super-block): the 256 unsigned 6-bit
//     quants of each row as 16 quads of three vectors A, B, C (quad g:
//     elements 16g..16g+15, the 16-element sub-block g): byte j of row
//     i's dword in A is element 16g+j with bits 0-1 of element 16g+12+j
//     in its bits 6-7, B element 16g+4+j with bits 2-3, C element
//     16g+8+j with bits 4-5. Three ANDs give three activation dwords'
//     weights, three GF2P8AFFINEQB and a VPTERNLOGD the fourth's. Then
//     the rows' int8 scales of sub-block g (16 bytes, VPMOVSXBD) and the
//     rows' float16 d. Per sub-block the exact int32 Σ w·q of 16 rows
//     (four VPDPBUSD started at −32·Sum[g], the offset of q−32) times the
//     scale (VPMULLD) adds into S; per super-block acc += float32(S)·
//     float32(d·d_a), rounding after each operation (Dot's dotK).
//
// Kernels take one or two activation rows (the second's values at +K,
// its scales and sums at their strides): two rows share the unpacked
// weights.
package main

import (
	"flag"
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// sig: ng groups of 16 rows from w (one after the other), against m
// activation rows (values x, block scales xd, sums xs: Lanes for Q5_0,
// Sum for Q6_K), outputs of group g's row i of activation row r at
// y[16g+i+r·ldy].
const sig = "func(nb int, w *uint8, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)"

var c0F, c3F, c10, gfHi4 Mem
var q5Idx [8]Mem
var gfQ6 [3]Mem

// pfDist is how far ahead (bytes) the kernels prefetch their one stream
// of weights.
var pfDist = flag.Int("pf", 2048, "prefetch distance")

// pfKind is the prefetch instruction (t0, t1, nta).
var pfKind = flag.String("pfi", "t0", "prefetch instruction")

// prefetch emits the prefetches of step s of steps of a chunk of tb bytes
// at w: its lines spread evenly over the steps.
func prefetch(w GPVirtual, tb, s, steps int) {
	lines := (tb + 63) / 64
	for j := s * lines / steps; j < (s+1)*lines/steps; j++ {
		m := Mem{Base: w, Disp: *pfDist + 64*j}
		switch *pfKind {
		case "nta":
			PREFETCHNTA(m)
		case "t1":
			PREFETCHT1(m)
		default:
			PREFETCHT0(m)
		}
	}
}

func main() {
	flag.Parse()
	c0F = avokit.Bytes("x16b_c0f", 64, func(int) byte { return 0x0F })
	c3F = avokit.Bytes("x16b_c3f", 64, func(int) byte { return 0x3F })
	c10 = avokit.Bytes("x16b_c10", 64, func(int) byte { return 0x10 })
	// GF2P8AFFINEQB's matrix (output bit o from matrix byte 7−o): the
	// high nibble to the low bits
	gfHi4 = avokit.Bytes("x16b_gfhi4", 64, func(i int) byte {
		if o := 7 - i%8; o < 4 {
			return 1 << (o + 4)
		}
		return 0
	})
	// Q6_K: bits 6-7 of A, B, C to bits 0-1, 2-3, 4-5
	for s := range gfQ6 {
		gfQ6[s] = avokit.Bytes(fmt.Sprintf("x16b_gfq6_%d", s), 64, func(i int) byte {
			switch 7 - i%8 {
			case 2 * s:
				return 1 << 6
			case 2*s + 1:
				return 1 << 7
			}
			return 0
		})
	}
	// Q5_0: byte p (row p/4, element 4l+p%4) takes bit 4l+p%4 of its
	// row's qh, the low or high dword of its qword
	for l := range q5Idx {
		q5Idx[l] = avokit.Bytes(fmt.Sprintf("x16b_q5idx%d", l), 64, func(p int) byte {
			return byte(32*(p/4%2) + 4*l + p%4)
		})
	}
	for _, m := range []int{1, 2} {
		q5(m)
	}
	for _, m := range []int{1, 2} {
		q6k(m)
	}
	Generate()
}

// off is the offset in a chunk of c blocks (parts: each part's bytes a
// block) of part p of the chunk's block i.
func off(parts []int, c, i, p int) int {
	o := 0
	for q := 0; q < p; q++ {
		o += c * parts[q]
	}
	return o + i*parts[p]
}

// vpdpbusdB is VPDPBUSD with the signed operand a dword of memory
// broadcast to every lane.
func vpdpbusdB(m Mem, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Suffixes: []string{"BCST"}, Operands: []Op{m, u, acc}, Inputs: []Op{m, u, acc}, Outputs: []Op{acc}})
}

// vgf2p8affineqb is dst = the affine transform of x's bytes by the
// matrix m (GFNI; emitted raw).
func vgf2p8affineqb(m, x, dst Op) {
	Instruction(&ir.Instruction{Opcode: "VGF2P8AFFINEQB", Operands: []Op{U8(0), m, x, dst}, Inputs: []Op{m, x}, Outputs: []Op{dst}})
}

// kern holds a kernel's pointers: the weights w, activation row 0's x,
// xd, xs, and the strides (bytes) of the activation rows.
type kern struct {
	name           string
	m              int
	w, x, xd, xs   GPVirtual
	sx, sd, ss     GPVirtual
	y, ng, nb, cnt GPVirtual
}

// row is the address of activation row r's data at base+disp (stride s).
func row(base, s GPVirtual, r, disp int) Mem {
	if r == 0 {
		return Mem{Base: base, Disp: disp}
	}
	return Mem{Base: base, Index: s, Scale: 1, Disp: disp}
}

// prologue loads the arguments; xk, xsk are the bytes of x and of xs a
// block.
func prologue(name string, m, xk, xsk int) *kern {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	k := &kern{name: name, m: m}
	k.w = GP64()
	Load(Param("w"), k.w)
	k.y = GP64()
	Load(Param("y"), k.y)
	k.ng = GP64()
	Load(Param("ng"), k.ng)
	k.nb = GP64()
	Load(Param("nb"), k.nb)
	k.x, k.xd, k.xs, k.cnt = GP64(), GP64(), GP64(), GP64()
	if m > 1 {
		k.sx, k.sd, k.ss = GP64(), GP64(), GP64()
		IMUL3Q(U32(uint32(xk)), k.nb, k.sx)
		IMUL3Q(U32(4), k.nb, k.sd)
		IMUL3Q(U32(uint32(xsk)), k.nb, k.ss)
	}
	return k
}

// loop emits the group loop: start zeroes the accumulators, chunk(c)
// emits a chunk of c blocks and advances the pointers, end stores the
// group's outputs.
func (k *kern) loop(start func(), chunk func(c int), end func()) {
	p := k.name + "_"
	Label(p + "group")
	TESTQ(k.ng, k.ng)
	JZ(LabelRef(p + "end"))
	MOVQ(k.nb, k.cnt)
	Load(Param("x"), k.x)
	Load(Param("xd"), k.xd)
	Load(Param("xs"), k.xs)
	start()
	Label(p + "pair")
	CMPQ(k.cnt, U8(2))
	JL(LabelRef(p + "single"))
	chunk(2)
	SUBQ(U8(2), k.cnt)
	JMP(LabelRef(p + "pair"))
	Label(p + "single")
	TESTQ(k.cnt, k.cnt)
	JZ(LabelRef(p + "done"))
	chunk(1)
	Label(p + "done")
	end()
	ADDQ(U8(64), k.y)
	DECQ(k.ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}

// advance moves the pointers c blocks on (bb: the group's bytes a block,
// xk, xsk: x's and xs's bytes a block).
func (k *kern) advance(c, bb, xk, xsk int) {
	ADDQ(U32(uint32(c*bb)), k.w)
	ADDQ(U32(uint32(c*xk)), k.x)
	ADDQ(U8(int8(4*c)), k.xd)
	ADDQ(U32(uint32(c*xsk)), k.xs)
}

// store stores activation row r's 16 outputs v.
func (k *kern) store(v VecVirtual, r int) {
	if r == 0 {
		VMOVUPS(v, Mem{Base: k.y})
		return
	}
	ldy := Load(Param("ldy"), GP64())
	VMOVUPS(v, Mem{Base: k.y, Index: ldy, Scale: 4})
}

// q5 generates x16bQ5_0Gemv<m>.
func q5(m int) {
	parts := []int{256, 64, 32}
	k := prologue(fmt.Sprintf("x16bQ5_0Gemv%d", m), m, 32, 32)
	Doc(fmt.Sprintf("x16bQ5_0Gemv%d is core/ggml's Dot of ng x16 groups of Q5_0 rows (nb blocks) with %d activation rows (see the package asmgenx16b).", m, m))
	stack := AllocLocal(32 * m)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	cF, gf := ZMM(), ZMM()
	VMOVDQU64(c0F, cF)
	VMOVDQU64(gfHi4, gf)
	c16 := ZMM()
	VMOVDQU64(c10, c16)
	acc := make([][8]VecVirtual, m)
	for r := range acc {
		for l := range acc[r] {
			acc[r][l] = ZMM()
		}
	}
	k.loop(func() {
		for r := range acc {
			for _, a := range acc[r] {
				VXORPS(a, a, a)
			}
		}
	}, func(c int) {
		for i := 0; i < c; i++ {
			prefetch(k.w, 352*c, i, c)
			wm := func(p, disp int) Mem { return Mem{Base: k.w, Disp: off(parts, c, i, p) + disp} }
			// the offsets −16·Lanes of the block, to the stack
			for r := 0; r < m; r++ {
				o := YMM()
				VMOVDQU32(row(k.xs, k.ss, r, 32*i), o)
				VPSLLD(U8(4), o, o)
				VPSUBD(o, zero.AsY(), o)
				VMOVDQU32(o, stack.Offset(32*r))
			}
			// the scales d·d_a (one rounding)
			df := ZMM()
			VCVTPH2PS(wm(2, 0), df)
			sc := make([]VecVirtual, m)
			for r := range sc {
				sc[r] = ZMM()
				VMULPS_BCST(row(k.xd, k.sd, r, 4*i), df, sc[r])
			}
			qh := ZMM()
			VMOVDQU64(wm(1, 0), qh)
			for t := 0; t < 4; t++ {
				v, lo, hi := ZMM(), ZMM(), ZMM()
				VMOVDQU64(wm(0, 64*t), v)
				VPANDD(cF, v, lo)
				vgf2p8affineqb(gf, v, hi)
				kl, kh := K(), K()
				avokit.Vpshufbitqmb(q5Idx[t], qh, kl)
				avokit.Vpshufbitqmb(q5Idx[4+t], qh, kh)
				VPADDB(c16, lo, kl, lo) // byte-granular masks: VPADDB, not VPORD
				VPADDB(c16, hi, kh, hi)
				for r := 0; r < m; r++ {
					for h, u := range []VecVirtual{lo, hi} {
						l := t + 4*h
						s := ZMM()
						VPBROADCASTD(stack.Offset(32*r+4*l), s)
						vpdpbusdB(row(k.x, k.sx, r, 32*i+4*l), u, s)
						VCVTDQ2PS(s, s)
						VFMADD231PS(sc[r], s, acc[r][l]) // acc += lane·(d·d_a), one rounding
					}
				}
			}
		}
		k.advance(c, 16*22, 32, 32)
	}, func() {
		for r := 0; r < m; r++ {
			a := acc[r]
			VADDPS(a[4], a[0], a[0])
			VADDPS(a[6], a[2], a[2])
			VADDPS(a[5], a[1], a[1])
			VADDPS(a[7], a[3], a[3])
			VADDPS(a[2], a[0], a[0])
			VADDPS(a[3], a[1], a[1])
			VADDPS(a[1], a[0], a[0])
			k.store(a[0], r)
		}
	})
}

// q6k generates x16bQ6KGemv<m>.
func q6k(m int) {
	parts := []int{3072, 256, 32}
	k := prologue(fmt.Sprintf("x16bQ6KGemv%d", m), m, 256, 64)
	Doc(fmt.Sprintf("x16bQ6KGemv%d is core/ggml's Dot of ng x16 groups of Q6_K rows (nb super-blocks) with %d activation rows (see the package asmgenx16b).", m, m))
	stack := AllocLocal(64 * m)
	zero := ZMM()
	VPXORD(zero, zero, zero)
	c3, ga, gb, gc := ZMM(), ZMM(), ZMM(), ZMM()
	VMOVDQU64(c3F, c3)
	VMOVDQU64(gfQ6[0], ga)
	VMOVDQU64(gfQ6[1], gb)
	VMOVDQU64(gfQ6[2], gc)
	acc, S := make([]VecVirtual, m), make([]VecVirtual, m)
	for r := range acc {
		acc[r], S[r] = ZMM(), ZMM()
	}
	k.loop(func() {
		for _, a := range acc {
			VXORPS(a, a, a)
		}
	}, func(c int) {
		for i := 0; i < c; i++ {
			wm := func(p, disp int) Mem { return Mem{Base: k.w, Disp: off(parts, c, i, p) + disp} }
			// the offsets −32·Sum of the 16 sub-blocks, to the stack
			for r := 0; r < m; r++ {
				o := ZMM()
				VMOVDQU32(row(k.xs, k.ss, r, 64*i), o)
				VPSLLD(U8(5), o, o)
				VPSUBD(o, zero, o)
				VMOVDQU32(o, stack.Offset(64*r))
			}
			for g := 0; g < 16; g++ {
				prefetch(k.w, 3360*c, 16*i+g, 16*c)
				a, b, cc := ZMM(), ZMM(), ZMM()
				VMOVDQU64(wm(0, 192*g), a)
				VMOVDQU64(wm(0, 192*g+64), b)
				VMOVDQU64(wm(0, 192*g+128), cc)
				o := [4]VecVirtual{ZMM(), ZMM(), ZMM(), ZMM()}
				t1, t2 := ZMM(), ZMM()
				vgf2p8affineqb(ga, a, o[3])
				vgf2p8affineqb(gb, b, t1)
				vgf2p8affineqb(gc, cc, t2)
				VPTERNLOGD(U8(0xFE), t2, t1, o[3]) // the three ORed
				VPANDD(c3, a, o[0])
				VPANDD(c3, b, o[1])
				VPANDD(c3, cc, o[2])
				sc := ZMM()
				VPMOVSXBD(wm(1, 16*g), sc)
				for r := 0; r < m; r++ {
					p := ZMM()
					VPBROADCASTD(stack.Offset(64*r+4*g), p)
					for d := 0; d < 4; d++ {
						vpdpbusdB(row(k.x, k.sx, r, 256*i+16*g+4*d), o[d], p)
					}
					if g == 0 {
						VPMULLD(sc, p, S[r])
					} else {
						VPMULLD(sc, p, p)
						VPADDD(p, S[r], S[r])
					}
				}
			}
			// acc += float32(S)·float32(d·d_a), rounding after each step
			df := ZMM()
			VCVTPH2PS(wm(2, 0), df)
			for r := 0; r < m; r++ {
				t, s := ZMM(), ZMM()
				VMULPS_BCST(row(k.xd, k.sd, r, 4*i), df, t)
				VCVTDQ2PS(S[r], s)
				VMULPS(t, s, s)
				VADDPS(s, acc[r], acc[r])
			}
		}
		k.advance(c, 16*210, 256, 64)
	}, func() {
		for r, a := range acc {
			k.store(a, r)
		}
	})
}
