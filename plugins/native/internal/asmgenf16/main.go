// Command asmgenf16 writes the native backend's F16/BF16 weight kernels
// (plugins/native/f16_amd64.s and their Go declarations): for a block of
// weight rows kept as 16-bit values, 8 values of each row are widened to
// float32 (VCVTPH2PS, or VPMOVZXWD and a 16-bit shift for bfloat16) and
// transposed in registers so that a vector lane is a weight row; then
//
//   - the dot kernels add x[k]·column k into one accumulator per row, in
//     k order, one FMA a step (each lane's sum is f16RowDot's), for one to
//     four activation rows at once (the columns widened once for all), and
//   - the pack kernels store the columns: a GEMM panel of the rows.
//
// AVX-512 kernels take 16 rows a block (zmm: 4 rows a 128-bit lane), AVX2
// ones 8 (ymm); the dot kernels take one or two blocks a call (two
// independent FMA chains), the pack kernels one.
//
// Usage: go run ./internal/asmgenf16 -out f16_amd64.s -stubs f16_stubs_amd64.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
)

var (
	out      = flag.String("out", "f16_amd64.s", "assembly output")
	stubs    = flag.String("stubs", "f16_stubs_amd64.go", "Go declarations output")
	prefetch = flag.Int("prefetch", 384, "prefetch each row this many bytes ahead (0: none)")
)

// regs is a register allocator: names of values to registers.
type regs struct {
	prefix string
	free   []int
	of     map[string]int
}

func newRegs(prefix string, avail []int) *regs {
	return &regs{prefix: prefix, free: append([]int{}, avail...), of: map[string]int{}}
}

func (r *regs) name(i int) string { return fmt.Sprintf("%s%d", r.prefix, i) }

// get is the register of value v.
func (r *regs) get(v string) string {
	i, ok := r.of[v]
	if !ok {
		log.Fatalf("value %s has no register", v)
	}
	return r.name(i)
}

// alloc gives value v a free register.
func (r *regs) alloc(v string) string {
	if len(r.free) == 0 {
		log.Fatalf("out of registers for %s", v)
	}
	i := r.free[0]
	r.free = r.free[1:]
	r.of[v] = i
	return r.name(i)
}

// release frees the registers of vs.
func (r *regs) release(vs ...string) {
	for _, v := range vs {
		i, ok := r.of[v]
		if !ok {
			log.Fatalf("release of %s: no register", v)
		}
		delete(r.of, v)
		r.free = append(r.free, i)
	}
}

type gen struct {
	b bytes.Buffer
}

func (g *gen) f(format string, a ...any) { fmt.Fprintf(&g.b, "\t"+format+"\n", a...) }

// kernel describes one kernel.
type kernel struct {
	bf     bool
	wide   bool // AVX-512 (16 rows a block) or AVX2 (8)
	blocks int
	pack   bool
	xrows  int // activation rows of a dot kernel (1..4)
}

func (k kernel) name() string {
	s := "f16"
	if k.bf {
		s = "bf16"
	}
	if k.pack {
		s += "Pack"
	} else {
		s += "Dot"
	}
	rows := 8 * k.blocks
	isa := "AVX2"
	if k.wide {
		rows, isa = 16*k.blocks, "AVX512"
	}
	if k.pack {
		return fmt.Sprintf("%s%d%s", s, rows, isa)
	}
	return fmt.Sprintf("%s%dx%d%s", s, rows, k.xrows, isa)
}

// row pointer registers: four a 16-row block (rows 4q..4q+3 at
// P[q] + {0, 1, 2, 3}·ldw), two an 8-row block
var ptrRegs = []string{"SI", "R8", "R9", "R10", "R11", "R12", "R13", "R14"}

// rowAddr is the address of row r of block b (rows of 16 or 8).
func (k kernel) rowAddr(b, r int) string {
	per := 4
	q := b*(k.rowsPerBlock()/4) + r/4
	idx := []string{"", "(DX*1)", "(DX*2)", "(BX*1)"}[r%per]
	return fmt.Sprintf("(%s)%s", ptrRegs[q], idx)
}

func (k kernel) rowsPerBlock() int {
	if k.wide {
		return 16
	}
	return 8
}

func (k kernel) emit(g *gen) {
	name := k.name()
	if k.pack {
		g.b.WriteString(fmt.Sprintf("// func %s(w *byte, ldw int, dst *float32, ld int, k8 int)\n", name))
		g.b.WriteString(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-40\n", name))
	} else {
		g.b.WriteString(fmt.Sprintf("// func %s(w *byte, ldw int, x *float32, ldx int, k8 int, y *float32, ldy int)\n", name))
		g.b.WriteString(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-56\n", name))
	}
	g.f("MOVQ w+0(FP), SI")
	g.f("MOVQ ldw+8(FP), DX")
	g.f("LEAQ (DX)(DX*2), BX")
	if k.pack {
		g.f("MOVQ dst+16(FP), DI")
		g.f("MOVQ ld+24(FP), AX")
		g.f("SHLQ $2, AX") // bytes between panel rows
		g.f("LEAQ (AX)(AX*2), R11")
		g.f("LEAQ (DI)(AX*4), R12")
		g.f("MOVQ k8+32(FP), CX")
	} else {
		g.f("MOVQ x+16(FP), DI")
		g.f("MOVQ ldx+24(FP), AX")
		g.f("SHLQ $2, AX") // bytes between activation rows
		if k.xrows > 3 {
			g.f("LEAQ (AX)(AX*2), R15")
		}
		g.f("MOVQ k8+32(FP), CX")
	}
	nptr := k.blocks * k.rowsPerBlock() / 4
	for q := 1; q < nptr; q++ {
		g.f("LEAQ (%s)(DX*4), %s", ptrRegs[q-1], ptrRegs[q])
	}
	vreg, nregs := "Y", 16
	if k.wide {
		vreg, nregs = "Z", 32
	}
	var avail []int
	var accs []string
	accBase := nregs - k.blocks
	for i := 0; i < accBase; i++ {
		avail = append(avail, i)
	}
	if !k.pack {
		accBase = nregs - k.blocks*k.xrows
		avail = avail[:accBase]
		for b := 0; b < k.blocks; b++ {
			for xr := 0; xr < k.xrows; xr++ {
				acc := fmt.Sprintf("%s%d", vreg, accBase+b*k.xrows+xr)
				accs = append(accs, acc)
				g.f("VXORPS %s, %s, %s", acc, acc, acc)
			}
		}
	}
	loop := name + "_loop"
	g.b.WriteString(loop + ":\n")
	r := newRegs(vreg, avail)
	// x[k] broadcasts, shared by the blocks (AVX-512: all 8 held; AVX2:
	// one at a time, per block)
	if !k.pack && k.wide && k.xrows == 1 {
		for kk := 0; kk < 8; kk++ {
			g.f("VBROADCASTSS %d(DI), %s", 4*kk, r.alloc(fmt.Sprintf("x%d", kk)))
		}
	}
	for b := 0; b < k.blocks; b++ {
		k.block(g, r, b, accs)
	}
	if !k.pack && k.wide && k.xrows == 1 {
		for kk := 0; kk < 8; kk++ {
			r.release(fmt.Sprintf("x%d", kk))
		}
	}
	for q := 0; q < nptr; q++ {
		g.f("ADDQ $16, %s", ptrRegs[q])
	}
	if k.pack {
		g.f("LEAQ (DI)(AX*8), DI")
		g.f("LEAQ (R12)(AX*8), R12")
	} else {
		g.f("ADDQ $32, DI")
	}
	g.f("DECQ CX")
	g.f("JNZ %s", loop)
	if !k.pack {
		g.f("MOVQ y+40(FP), SI")
		g.f("MOVQ ldy+48(FP), DX")
		g.f("SHLQ $2, DX")
		g.f("LEAQ (DX)(DX*2), BX")
		width := 32
		if k.wide {
			width = 64
		}
		for b := 0; b < k.blocks; b++ {
			for xr := 0; xr < k.xrows; xr++ {
				g.f("VMOVUPS %s, %d(SI)%s", accs[b*k.xrows+xr], width*b, []string{"", "(DX*1)", "(DX*2)", "(BX*1)"}[xr])
			}
		}
	}
	g.f("VZEROUPPER")
	g.f("RET")
	g.b.WriteString("\n")
}

// block emits one block's loads, transposition and FMAs (or stores).
func (k kernel) block(g *gen, r *regs, b int, accs []string) {
	half := "X"
	if k.wide {
		half = "Y"
	}
	// D_i: AVX-512: rows (i, i+4) for i < 4, (i+4, i+8) for i ≥ 4, a row's 8
	// values a 256-bit half; AVX2: row i
	for i := 0; i < 8; i++ {
		d := r.alloc(fmt.Sprintf("d%d", i))
		if !k.wide {
			if *prefetch > 0 {
				g.f("PREFETCHT0 %d%s", *prefetch, k.rowAddr(b, i))
			}
			if k.bf {
				g.f("VPMOVZXWD %s, %s", k.rowAddr(b, i), d)
				g.f("VPSLLD $16, %s, %s", d, d)
			} else {
				g.f("VCVTPH2PS %s, %s", k.rowAddr(b, i), d)
			}
			continue
		}
		lo, hi := i, i+4
		if i >= 4 {
			lo, hi = i+4, i+8
		}
		y := half + d[1:]
		x := "X" + d[1:]
		if *prefetch > 0 {
			g.f("PREFETCHT0 %d%s", *prefetch, k.rowAddr(b, lo))
			g.f("PREFETCHT0 %d%s", *prefetch, k.rowAddr(b, hi))
		}
		g.f("VMOVDQU16 %s, %s", k.rowAddr(b, lo), x)
		g.f("VINSERTI32X4 $1, %s, %s, %s", k.rowAddr(b, hi), y, y)
		if k.bf {
			g.f("VPMOVZXWD %s, %s", y, d)
			g.f("VPSLLD $16, %s, %s", d, d)
		} else {
			g.f("VCVTPH2PS %s, %s", y, d)
		}
	}
	// stage 1: interleave pairs of rows
	for p := 0; p < 8; p += 2 {
		a, c := fmt.Sprintf("d%d", p), fmt.Sprintf("d%d", p+1)
		t0 := r.alloc(fmt.Sprintf("t%d", p))
		g.f("VUNPCKLPS %s, %s, %s", r.get(c), r.get(a), t0)
		ra, rc := r.get(a), r.get(c)
		r.release(a, c)
		t1 := r.alloc(fmt.Sprintf("t%d", p+1))
		g.f("VUNPCKHPS %s, %s, %s", rc, ra, t1)
	}
	// stage 2: 4×4 transposes within 128-bit lanes
	for q := 0; q < 8; q += 4 {
		for h := 0; h < 2; h++ {
			a, c := fmt.Sprintf("t%d", q+h), fmt.Sprintf("t%d", q+h+2)
			e0 := r.alloc(fmt.Sprintf("e%d", q+2*h))
			g.f("VSHUFPS $0x44, %s, %s, %s", r.get(c), r.get(a), e0)
			ra, rc := r.get(a), r.get(c)
			r.release(a, c)
			e1 := r.alloc(fmt.Sprintf("e%d", q+2*h+1))
			g.f("VSHUFPS $0xee, %s, %s, %s", rc, ra, e1)
		}
	}
	// stage 3: column k = j and 4+j from e_j, e_{4+j}
	for j := 0; j < 4; j++ {
		a, c := fmt.Sprintf("e%d", j), fmt.Sprintf("e%d", j+4)
		lo, hi := "$0x20", "$0x31"
		op := "VPERM2F128"
		if k.wide {
			lo, hi, op = "$0x88", "$0xdd", "VSHUFF32X4"
		}
		c0 := r.alloc(fmt.Sprintf("c%d", j))
		g.f("%s %s, %s, %s, %s", op, lo, r.get(c), r.get(a), c0)
		ra, rc := r.get(a), r.get(c)
		r.release(a, c)
		c1 := r.alloc(fmt.Sprintf("c%d", j+4))
		g.f("%s %s, %s, %s, %s", op, hi, rc, ra, c1)
	}
	width := 32
	if k.wide {
		width = 64
	}
	for kk := 0; kk < 8; kk++ {
		c := fmt.Sprintf("c%d", kk)
		switch {
		case k.pack:
			// row kk of the panel: DI + kk·AX (kk < 4), BP + (kk-4)·AX
			base, m := "DI", kk
			if kk >= 4 {
				base, m = "R12", kk-4
			}
			addr := fmt.Sprintf("%d(%s)%s", width*b, base, []string{"", "(AX*1)", "(AX*2)", "(R11*1)"}[m])
			g.f("VMOVUPS %s, %s", r.get(c), addr)
		case k.wide && k.xrows == 1:
			g.f("VFMADD231PS %s, %s, %s", r.get(fmt.Sprintf("x%d", kk)), r.get(c), accs[b])
		default:
			for xr := 0; xr < k.xrows; xr++ {
				x := r.alloc("x")
				g.f("VBROADCASTSS %d(DI)%s, %s", 4*kk, []string{"", "(AX*1)", "(AX*2)", "(R15*1)"}[xr], x)
				g.f("VFMADD231PS %s, %s, %s", x, r.get(c), accs[b*k.xrows+xr])
				r.release("x")
			}
		}
		r.release(c)
	}
}

func main() {
	flag.Parse()
	var g gen
	g.b.WriteString("// Code generated by command: go run ./internal/asmgenf16. DO NOT EDIT.\n\n#include \"textflag.h\"\n\n")
	var st bytes.Buffer
	st.WriteString("// Code generated by command: go run ./internal/asmgenf16. DO NOT EDIT.\n\npackage native\n")
	var ks []kernel
	for _, bf := range []bool{false, true} {
		for _, wide := range []bool{true, false} {
			for xr := 1; xr <= 4; xr++ {
				if wide || xr < 4 { // AVX2's 16 registers: two blocks' accumulators for at most 3 rows
					ks = append(ks, kernel{bf: bf, wide: wide, blocks: 2, xrows: xr})
				}
				ks = append(ks, kernel{bf: bf, wide: wide, blocks: 1, xrows: xr})
			}
			ks = append(ks, kernel{bf: bf, wide: wide, blocks: 1, pack: true})
		}
	}
	for _, k := range ks {
		k.emit(&g)
		rows := k.blocks * k.rowsPerBlock()
		typ := "float16"
		if k.bf {
			typ = "bfloat16"
		}
		if k.pack {
			fmt.Fprintf(&st, "\n// %s writes %d rows of %s values (ldw bytes apart) widened: dst[kk*ld+r] is row r's value kk, for kk < 8·k8.\n//\n//go:noescape\nfunc %s(w *byte, ldw int, dst *float32, ld int, k8 int)\n", k.name(), rows, typ, k.name())
		} else {
			fmt.Fprintf(&st, "\n// %s sets y[i·ldy+r] to Σ x[i·ldx+k]·w(r, k) over k < 8·k8 for %d rows of %s values (ldw bytes apart) and %d activation rows i, in k order, one FMA a step.\n//\n//go:noescape\nfunc %s(w *byte, ldw int, x *float32, ldx int, k8 int, y *float32, ldy int)\n", k.name(), rows, typ, k.xrows, k.name())
		}
	}
	if err := os.WriteFile(*out, g.b.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*stubs, st.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
