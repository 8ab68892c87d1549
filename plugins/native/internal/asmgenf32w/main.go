// Command asmgenf32w writes the native backend's F32 weight kernels
// (plugins/native/f32w_amd64.s and their Go declarations): dot products
// of float32 activation rows with float32 weight rows read in the file's
// own [N, K] row-major layout (a GGUF mapping), no transposed or packed
// copy. Each (weight row, activation row) pair is summed as f32wRowDot
// defines it: sixteen lanes, lane l adding x[k]·w[k] for k ≡ l (mod 16)
// in k order with one FMA a step, from +0, then the lanes reduced by
// halving (l + l+8, then l + l+4, l + l+2, l + l+1). A kernel takes R
// weight rows and X activation rows at once (R·X accumulators: each
// weight chunk loaded once for the X rows, each activation chunk once
// for the R rows), reduces four accumulators together (in-register
// shuffles, one 128-bit store of four sums) and handles K's last
// K mod 16 values with a mask (AVX-512: merge-masked FMAs; AVX2: the
// FMA's result blended into the lanes below the tail).
//
// AVX-512 kernels: 16×1, 8×1, 4×1, 8×2, 4×2, 4×3, 4×4 (rows × activation
// rows; 16×1 reduces its sixteen sums together into one store); AVX2
// (two 8-lane halves an accumulator): 4×1. The P variants of the
// one-row kernels prefetch each row ahead, for weights read from memory
// rather than the caches.
//
// Short rows (fewer than 192 values) have their own 16-row kernels, one
// per count of whole 16-value chunks: the activation row stays in
// registers and each weight row is read front to back.
//
// Usage: go run ./internal/asmgenf32w -out f32w_amd64.s -stubs f32w_stubs_amd64.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
)

var (
	out      = flag.String("out", "f32w_amd64.s", "assembly output")
	stubs    = flag.String("stubs", "f32w_stubs_amd64.go", "Go declarations output")
	prefetch = flag.Int("prefetch", 512, "prefetch each weight row this many bytes ahead in the one-activation-row kernels (0: none)")
)

type gen struct{ b bytes.Buffer }

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", a...) }
func (g *gen) l(format string, a ...any) { fmt.Fprintf(&g.b, format+"\n", a...) }

type kernel struct {
	rows, xrows int
	wide        bool // AVX-512, else AVX2
	pf          bool // prefetch each row *prefetch bytes ahead (weights from memory)
}

func (k kernel) name() string {
	isa := "AVX2"
	if k.wide {
		isa = "AVX512"
	}
	if k.pf {
		isa = "P" + isa
	}
	return fmt.Sprintf("f32wDot%dx%d%s", k.rows, k.xrows, isa)
}

// rowAddr is the address of weight row r at the current chunk, plus off
// bytes: rows 0..3 from SI, 4..7 from R8, 8..11 from R12, 12..15 from R13
// (ldw in DX, 3·ldw in BX).
func rowAddr(r, off int) string {
	base := []string{"SI", "R8", "R12", "R13"}[r/4]
	idx := []string{"", "(DX*1)", "(DX*2)", "(BX*1)"}[r%4]
	if off != 0 {
		return fmt.Sprintf("%d(%s)%s", off, base, idx)
	}
	return fmt.Sprintf("(%s)%s", base, idx)
}

// xAddr is activation row i's current chunk plus off bytes (ldx in R9,
// 3·ldx in R10).
func xAddr(i, off int) string {
	idx := []string{"", "(R9*1)", "(R9*2)", "(R10*1)"}[i]
	if off != 0 {
		return fmt.Sprintf("%d(DI)%s", off, idx)
	}
	return fmt.Sprintf("(DI)%s", idx)
}

func (k kernel) emit(g *gen) {
	name := k.name()
	g.l("// func %s(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int)", name)
	g.l("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	g.f("MOVQ w+0(FP), SI")
	g.f("MOVQ ldw+8(FP), DX")
	g.f("SHLQ $2, DX")
	g.f("LEAQ (DX)(DX*2), BX")
	if k.rows > 4 {
		g.f("LEAQ (SI)(DX*4), R8")
	}
	if k.rows > 8 {
		g.f("LEAQ (R8)(DX*4), R12")
		g.f("LEAQ (R12)(DX*4), R13")
	}
	g.f("MOVQ x+16(FP), DI")
	g.f("MOVQ ldx+24(FP), R9")
	g.f("SHLQ $2, R9")
	g.f("LEAQ (R9)(R9*2), R10")
	g.f("MOVQ k+32(FP), CX")
	g.f("MOVQ CX, R11")
	g.f("ANDQ $15, R11")
	g.f("SHRQ $4, CX")
	if k.rows <= 8 {
		g.f("MOVQ y+40(FP), R12")
		g.f("MOVQ ldy+48(FP), R13")
		g.f("SHLQ $2, R13")
	}
	if k.wide {
		k.body512(g)
	} else {
		k.body256(g)
	}
	g.f("VZEROUPPER")
	g.f("RET")
	g.l("")
}

// acc is the accumulator of weight row r and activation row i.
func (k kernel) acc(r, i int) int { return r*k.xrows + i }

func (k kernel) body512(g *gen) {
	n := k.rows * k.xrows
	for a := 0; a < n; a++ {
		g.f("VXORPS Z%d, Z%d, Z%d", a, a, a)
	}
	loop, tail, reduce := k.name()+"_loop", k.name()+"_tail", k.name()+"_reduce"
	g.f("TESTQ CX, CX")
	g.f("JZ %s", tail)
	g.l("%s:", loop)
	k.chunk512(g, false)
	g.f("ADDQ $64, SI")
	if k.rows > 4 {
		g.f("ADDQ $64, R8")
	}
	if k.rows > 8 {
		g.f("ADDQ $64, R12")
		g.f("ADDQ $64, R13")
	}
	g.f("ADDQ $64, DI")
	g.f("DECQ CX")
	g.f("JNZ %s", loop)
	g.l("%s:", tail)
	g.f("TESTQ R11, R11")
	g.f("JZ %s", reduce)
	g.f("MOVQ R11, CX")
	g.f("MOVL $1, AX")
	g.f("SHLL CX, AX")
	g.f("DECL AX")
	g.f("KMOVW AX, K1")
	k.chunk512(g, true)
	g.l("%s:", reduce)
	if k.rows == 16 {
		k.reduce16(g)
		return
	}
	// four accumulators (weight rows 4q..4q+3, activation row i) to four
	// sums at y[i·ldy + 4q ..]
	for i := 0; i < k.xrows; i++ {
		if i > 0 {
			g.f("ADDQ R13, R12")
		}
		for q := 0; q < k.rows/4; q++ {
			a := [4]int{}
			for j := range a {
				a[j] = k.acc(4*q+j, i)
			}
			// level 1: lane l + lane l+8
			g.f("VSHUFF64X2 $0x44, Z%d, Z%d, Z24", a[1], a[0])
			g.f("VSHUFF64X2 $0xEE, Z%d, Z%d, Z25", a[1], a[0])
			g.f("VADDPS Z25, Z24, Z24")
			g.f("VSHUFF64X2 $0x44, Z%d, Z%d, Z25", a[3], a[2])
			g.f("VSHUFF64X2 $0xEE, Z%d, Z%d, Z26", a[3], a[2])
			g.f("VADDPS Z26, Z25, Z25")
			// level 2: l + l+4 (quarter j of Z26 is row j's four)
			g.f("VSHUFF32X4 $0x88, Z25, Z24, Z26")
			g.f("VSHUFF32X4 $0xDD, Z25, Z24, Z27")
			g.f("VADDPS Z27, Z26, Z26")
			g.f("VEXTRACTF64X4 $1, Z26, Y27")
			k.finish(g, "Y26", "Y27", "Y24", "Y25", "X25", "X28", fmt.Sprintf("%d(R12)", 16*q))
		}
	}
}

// reduce16 reduces the sixteen accumulators of one activation row
// together: level 1 pairs rows (2i, 2i+1) into one register (row 2i's
// lanes l + l+8 in the low half), level 2 pairs those (quarter j of
// register i: row 4i+j), levels 3 and 4 shuffle within 128-bit lanes
// (lane 4j+i: row 4i+j), and one permutation puts row r in lane r.
func (k kernel) reduce16(g *gen) {
	g.f("MOVQ y+40(FP), R12")
	for i := 0; i < 8; i++ {
		a, b := 2*i, 2*i+1
		g.f("VSHUFF64X2 $0x44, Z%d, Z%d, Z24", b, a)
		g.f("VSHUFF64X2 $0xEE, Z%d, Z%d, Z25", b, a)
		g.f("VADDPS Z25, Z24, Z%d", a)
	}
	for i := 0; i < 4; i++ {
		a, b := 4*i, 4*i+2
		g.f("VSHUFF32X4 $0x88, Z%d, Z%d, Z24", b, a)
		g.f("VSHUFF32X4 $0xDD, Z%d, Z%d, Z25", b, a)
		g.f("VADDPS Z25, Z24, Z%d", a)
	}
	for i := 0; i < 2; i++ {
		a, b := 8*i, 8*i+4
		g.f("VSHUFPS $0x44, Z%d, Z%d, Z24", b, a)
		g.f("VSHUFPS $0xEE, Z%d, Z%d, Z25", b, a)
		g.f("VADDPS Z25, Z24, Z%d", a)
	}
	g.f("VSHUFPS $0x88, Z8, Z0, Z24")
	g.f("VSHUFPS $0xDD, Z8, Z0, Z25")
	g.f("VADDPS Z25, Z24, Z24")
	g.f("VMOVUPS ·f32wPerm16(SB), Z25")
	g.f("VPERMPS Z24, Z25, Z24")
	g.f("VMOVUPS Z24, (R12)")
}

// finish reduces p (rows 0 and 1, four lanes each 128-bit half) and q
// (rows 2 and 3) by levels 3 and 4 and stores the four sums at dst (t, u
// temporaries, ux the 128-bit form of u, v a 128-bit temporary).
func (k kernel) finish(g *gen, p, q, t, u, ux, v, dst string) {
	// level 3: l + l+2
	g.f("VSHUFPS $0x44, %s, %s, %s", q, p, t)
	g.f("VSHUFPS $0xEE, %s, %s, %s", q, p, u)
	g.f("VADDPS %s, %s, %s", u, t, t)
	// level 4: l + l+1; lanes 0, 1, 4, 5: rows 0, 2, 1, 3
	g.f("VSHUFPS $0x88, %s, %s, %s", t, t, u)
	g.f("VSHUFPS $0xDD, %s, %s, %s", t, t, t)
	g.f("VADDPS %s, %s, %s", t, u, u)
	if k.wide {
		g.f("VEXTRACTF32X4 $1, %s, %s", u, v)
	} else {
		g.f("VEXTRACTF128 $1, %s, %s", u, v)
	}
	g.f("VUNPCKLPS %s, %s, %s", v, ux, ux)
	g.f("VMOVUPS %s, %s", ux, dst)
}

// chunk512 adds one 16-value chunk (masked by K1: the tail).
func (k kernel) chunk512(g *gen, masked bool) {
	ld, msk := "VMOVUPS", ""
	if masked {
		ld, msk = "VMOVUPS.Z", " K1,"
	}
	for i := 0; i < k.xrows; i++ {
		if masked {
			g.f("%s %s, K1, Z%d", ld, xAddr(i, 0), 16+i)
		} else {
			g.f("%s %s, Z%d", ld, xAddr(i, 0), 16+i)
		}
	}
	for r := 0; r < k.rows; r++ {
		if k.xrows == 1 && !masked {
			if k.pf {
				g.f("PREFETCHT0 %s", rowAddr(r, *prefetch))
			}
			g.f("VFMADD231PS %s, Z16, Z%d", rowAddr(r, 0), k.acc(r, 0))
			continue
		}
		w := 20 + r%4
		if masked {
			g.f("%s %s, K1, Z%d", ld, rowAddr(r, 0), w)
		} else {
			g.f("%s %s, Z%d", ld, rowAddr(r, 0), w)
		}
		for i := 0; i < k.xrows; i++ {
			g.f("VFMADD231PS Z%d, Z%d,%s Z%d", w, 16+i, msk, k.acc(r, i))
		}
	}
}

// AVX2: accumulator a of (row r, activation row i) is two ymm registers,
// lanes 0..7 (Y[2a]) and 8..15 (Y[2a+1]); the activations' chunk in
// Y12..Y15 (two an activation row: at most two rows), a weight half in
// Y14/Y15 when X is 1.
func (k kernel) body256(g *gen) {
	n := k.rows * k.xrows
	if 2*n+2*k.xrows > 16 || k.rows != 4 {
		log.Fatalf("%s: too many registers", k.name())
	}
	for a := 0; a < 2*n; a++ {
		g.f("VXORPS Y%d, Y%d, Y%d", a, a, a)
	}
	loop, tail, reduce := k.name()+"_loop", k.name()+"_tail", k.name()+"_reduce"
	g.f("TESTQ CX, CX")
	g.f("JZ %s", tail)
	g.l("%s:", loop)
	xr := func(i, h int) int { return 16 - 2*k.xrows + 2*i + h }
	for i := 0; i < k.xrows; i++ {
		g.f("VMOVUPS %s, Y%d", xAddr(i, 0), xr(i, 0))
		g.f("VMOVUPS %s, Y%d", xAddr(i, 32), xr(i, 1))
	}
	for r := 0; r < k.rows; r++ {
		if k.pf {
			g.f("PREFETCHT0 %s", rowAddr(r, *prefetch))
		}
		for h := 0; h < 2; h++ {
			for i := 0; i < k.xrows; i++ {
				g.f("VFMADD231PS %s, Y%d, Y%d", rowAddr(r, 32*h), xr(i, h), 2*k.acc(r, i)+h)
			}
		}
	}
	g.f("ADDQ $64, SI")
	g.f("ADDQ $64, DI")
	g.f("DECQ CX")
	g.f("JNZ %s", loop)
	g.l("%s:", tail)
	g.f("TESTQ R11, R11")
	g.f("JZ %s", reduce)
	// the tail: lanes below R11 get their FMA, the others are kept
	// (blended back); x and w are read under the same mask (zeros past K)
	g.f("LEAQ ·f32wTailMask+64(SB), AX")
	g.f("SHLQ $2, R11")
	g.f("SUBQ R11, AX")
	g.f("VMOVUPS (AX), Y%d", 16-2*k.xrows-2)
	g.f("VMOVUPS 32(AX), Y%d", 16-2*k.xrows-1)
	m := func(h int) int { return 16 - 2*k.xrows - 2 + h }
	for i := 0; i < k.xrows; i++ {
		for h := 0; h < 2; h++ {
			g.f("VMASKMOVPS %s, Y%d, Y%d", xAddr(i, 32*h), m(h), xr(i, h))
		}
	}
	if 2*n+2*k.xrows+2+2 > 16 {
		log.Fatalf("%s: no registers for the tail", k.name())
	}
	wt, ft := 16-2*k.xrows-4, 16-2*k.xrows-3
	for r := 0; r < k.rows; r++ {
		for h := 0; h < 2; h++ {
			g.f("VMASKMOVPS %s, Y%d, Y%d", rowAddr(r, 32*h), m(h), wt)
			for i := 0; i < k.xrows; i++ {
				a := 2*k.acc(r, i) + h
				g.f("VMOVAPS Y%d, Y%d", a, ft)
				g.f("VFMADD231PS Y%d, Y%d, Y%d", wt, xr(i, h), ft)
				g.f("VBLENDVPS Y%d, Y%d, Y%d, Y%d", m(h), ft, a, a)
			}
		}
	}
	g.l("%s:", reduce)
	for i := 0; i < k.xrows; i++ {
		if i > 0 {
			g.f("ADDQ R13, R12")
		}
		// level 1 in place: row r's lanes l + l+8 into Y[2·acc]
		for r := 0; r < 4; r++ {
			a := 2 * k.acc(r, i)
			g.f("VADDPS Y%d, Y%d, Y%d", a+1, a, a)
		}
		a0, a1, a2, a3 := 2*k.acc(0, i), 2*k.acc(1, i), 2*k.acc(2, i), 2*k.acc(3, i)
		// level 2: p = rows 0, 1 (l + l+4 in each 128-bit half), q = rows 2, 3
		g.f("VPERM2F128 $0x20, Y%d, Y%d, Y%d", a1, a0, a0+1)
		g.f("VPERM2F128 $0x31, Y%d, Y%d, Y%d", a1, a0, a1+1)
		g.f("VADDPS Y%d, Y%d, Y%d", a1+1, a0+1, a0+1)
		g.f("VPERM2F128 $0x20, Y%d, Y%d, Y%d", a3, a2, a2+1)
		g.f("VPERM2F128 $0x31, Y%d, Y%d, Y%d", a3, a2, a3+1)
		g.f("VADDPS Y%d, Y%d, Y%d", a3+1, a2+1, a2+1)
		k.finish(g, fmt.Sprintf("Y%d", a0+1), fmt.Sprintf("Y%d", a2+1), fmt.Sprintf("Y%d", a0), fmt.Sprintf("Y%d", a1),
			fmt.Sprintf("X%d", a1), fmt.Sprintf("X%d", a2), "(R12)")
	}
}

// shortRows writes the 16-row kernel for rows of c whole chunks (and a
// tail of k mod 16 values, masked): the activation row's chunks stay in
// registers and each weight row is read front to back, so 16 rows are
// one contiguous sweep of memory (the hardware prefetchers follow it; a
// chunk of each of 16 rows in turn, 256 bytes apart, they did not).
func shortRows(g *gen, c int) string {
	name := fmt.Sprintf("f32wDot16x1C%dAVX512", c)
	g.l("// func %s(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int)", name)
	g.l("TEXT ·%s(SB), NOSPLIT, $0-56", name)
	g.f("MOVQ w+0(FP), SI")
	g.f("MOVQ ldw+8(FP), DX")
	g.f("SHLQ $2, DX")
	g.f("LEAQ (DX)(DX*2), BX")
	g.f("LEAQ (SI)(DX*4), R8")
	g.f("LEAQ (R8)(DX*4), R12")
	g.f("LEAQ (R12)(DX*4), R13")
	g.f("MOVQ x+16(FP), DI")
	g.f("MOVQ k+32(FP), CX")
	g.f("ANDQ $15, CX")
	for ch := 0; ch < c; ch++ {
		g.f("VMOVUPS %d(DI), Z%d", 64*ch, 16+ch)
	}
	for r := 0; r < 16; r++ {
		g.f("VXORPS Z%d, Z%d, Z%d", r, r, r)
		for ch := 0; ch < c; ch++ {
			g.f("VFMADD231PS %s, Z%d, Z%d", rowAddr(r, 64*ch), 16+ch, r)
		}
	}
	tail := name + "_reduce"
	g.f("TESTQ CX, CX")
	g.f("JZ %s", tail)
	g.f("MOVL $1, AX")
	g.f("SHLL CX, AX")
	g.f("DECL AX")
	g.f("KMOVW AX, K1")
	g.f("VMOVUPS.Z %d(DI), K1, Z%d", 64*c, 16+c)
	for r := 0; r < 16; r++ {
		t := 28 + r%4
		g.f("VMOVUPS.Z %s, K1, Z%d", rowAddr(r, 64*c), t)
		g.f("VFMADD231PS Z%d, Z%d, K1, Z%d", t, 16+c, r)
	}
	g.l("%s:", tail)
	kernel{rows: 16, xrows: 1, wide: true}.reduce16(g)
	g.f("VZEROUPPER")
	g.f("RET")
	g.l("")
	return name
}

// maxShortChunks is the most whole chunks a short-row kernel keeps in
// registers (with the tail's: Z16..Z27).
const maxShortChunks = 11

func main() {
	flag.Parse()
	ks := []kernel{
		{16, 1, true, false}, {16, 1, true, true}, {8, 1, true, false}, {4, 1, true, false},
		{8, 2, true, false}, {4, 2, true, false}, {4, 3, true, false}, {4, 4, true, false},
		{4, 1, false, false}, {4, 1, false, true},
	}
	var g gen
	g.l("// Code generated by command: go run ./internal/asmgenf32w. DO NOT EDIT.")
	g.l("")
	g.l(`#include "textflag.h"`)
	g.l("")
	// f32wTailMask: 16 all-ones words then 16 zeros; the 16 words at
	// 64 − 4t bytes are t ones then zeros
	for i := 0; i < 32; i++ {
		v := "0xffffffff"
		if i >= 16 {
			v = "0x00000000"
		}
		g.l("DATA ·f32wTailMask+%d(SB)/4, $%s", 4*i, v)
	}
	g.l("GLOBL ·f32wTailMask(SB), RODATA|NOPTR, $128")
	// f32wPerm16: lane r takes lane 4(r mod 4) + r/4
	for r := 0; r < 16; r++ {
		g.l("DATA ·f32wPerm16+%d(SB)/4, $%d", 4*r, 4*(r%4)+r/4)
	}
	g.l("GLOBL ·f32wPerm16(SB), RODATA|NOPTR, $64")
	g.l("")
	for _, k := range ks {
		k.emit(&g)
	}
	var short []string
	for c := 1; c <= maxShortChunks; c++ {
		short = append(short, shortRows(&g, c))
	}
	if err := os.WriteFile(*out, g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	var s bytes.Buffer
	s.WriteString("// Code generated by command: go run ./internal/asmgenf32w. DO NOT EDIT.\n\npackage native\n\n")
	for _, k := range ks {
		fmt.Fprintf(&s, "// %s sets y[i·ldy+r] to f32wRowDot of weight row r (ldw floats apart) and activation row i (ldx apart), K values, for %d rows and %d activation rows.\n//\n//go:noescape\nfunc %s(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int)\n\n",
			k.name(), k.rows, k.xrows, k.name())
	}
	for c, name := range short {
		fmt.Fprintf(&s, "// %s is f32wDot16x1AVX512 for k of %d whole chunks of 16 and a tail (16·%d ≤ k < 16·%d), the activations in registers.\n//\n//go:noescape\nfunc %s(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int)\n\n",
			name, c+1, c+1, c+2, name)
	}
	fmt.Fprintf(&s, "// f32wShortKernels are the short-row kernels by whole chunks (1..%d).\nvar f32wShortKernels = [...]func(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int){nil", maxShortChunks)
	for _, name := range short {
		fmt.Fprintf(&s, ", %s", name)
	}
	s.WriteString("}\n")
	src, err := format.Source(s.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*stubs, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
