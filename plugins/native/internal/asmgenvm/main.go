// Command asmgenvm generates the amd64 assembly of the native backend's
// vector math (vmath.go): exp, sigmoid, SiLU and tanh of float32 slices
// with AVX2+FMA and with AVX-512F, on the polynomials and constants
// vmath.go documents (the same numbers as here). It is a build-time tool;
// TestGeneratedVMathIsCurrent checks the committed output.
//
//	go run ./plugins/native/internal/asmgenvm -out vmath_amd64.s -stubs vmath_stubs_amd64.go -pkg native
//
// Every kernel computes y[i] = f(x[i]) for i < n, n a multiple of the
// vector width (8 or 16 floats); the Go side runs the tail through a
// padded buffer.
package main

import (
	"fmt"
	"math"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The constants, each stored as 16 lanes (a 256-bit load reads the first
// 8). Keep in step with vmath.go.
var consts = []struct {
	name string
	bits uint32
}{
	{"expHi", f(88.8)},
	{"expLo", f(-104)},
	{"log2e", f(1.44269504088896341)},
	{"ln2Hi", f(0.693145751953125)},
	{"ln2Lo", f(1.42860682030941723212e-6)},
	{"p4", f(0.00139291259)},
	{"p3", f(0.00836553425)},
	{"p2", f(0.0416665375)},
	{"p1", f(0.166665629)},
	{"p0", f(0.5)},
	{"one", f(1)},
	{"bias", 127},
	{"sign", 0x80000000},
	{"abs", 0x7fffffff},
	{"q4", f(-0.00609671418)},
	{"q3", f(0.0209971797)},
	{"q2", f(-0.0538509078)},
	{"q1", f(0.133327693)},
	{"q0", f(-0.333333284)},
	{"small", f(0.625)},
	{"mtwo", f(-2)},
}

func f(v float64) uint32 { return math.Float32bits(float32(v)) }

var table Mem

func k(name string) Mem {
	for i, c := range consts {
		if c.name == name {
			return table.Offset(64 * i)
		}
	}
	panic("no constant " + name)
}

// isa abstracts the two vector widths.
type isa struct {
	suffix string
	lanes  int
	vec    func() VecVirtual
	wide   bool
	// regs holds the constants a kernel loaded into registers before its
	// loop (AVX-512: 32 registers leave room for all of them); the others
	// are read from the table by each instruction
	regs map[string]VecVirtual
}

// c is constant name as an operand: its register where the kernel loaded
// it, else its place in the table.
func (s isa) c(name string) Op {
	if r, ok := s.regs[name]; ok {
		return r
	}
	return k(name)
}

var isas = []isa{{suffix: "AVX2", lanes: 8, vec: YMM}, {suffix: "AVX512", lanes: 16, vec: ZMM, wide: true}}

func (s isa) and(a, b Op, dst VecVirtual) {
	if s.wide {
		VPANDD(a, b, dst)
	} else {
		VPAND(a, b, dst)
	}
}

// andn: dst = ^b & a
func (s isa) andn(a, b Op, dst VecVirtual) {
	if s.wide {
		VPANDND(a, b, dst)
	} else {
		VPANDN(a, b, dst)
	}
}

func (s isa) or(a, b Op, dst VecVirtual) {
	if s.wide {
		VPORD(a, b, dst)
	} else {
		VPOR(a, b, dst)
	}
}

// reg is constant name in a register: its own where the kernel loaded
// it, else loaded into t.
func (s isa) reg(name string, t VecVirtual) VecVirtual {
	if r, ok := s.regs[name]; ok {
		return r
	}
	VMOVUPS(k(name), t)
	return t
}

// load fills a register with a constant.
func (s isa) load(name string) VecVirtual {
	r := s.vec()
	VMOVUPS(s.c(name), r)
	return r
}

// exp replaces v by exp(v), NaN kept (see vmath.go). clampHi false: v is
// known ≤ 0 (or NaN).
func (s isa) exp(v VecVirtual, clampHi bool) {
	t := s.vec()
	if clampHi {
		// v = hi < v ? hi : v (Intel: min(src1=hi, src2=v) returns src2 on NaN)
		VMINPS(v, s.reg("expHi", t), v)
	}
	VMAXPS(v, s.reg("expLo", t), v)
	kf := s.vec()
	VMULPS(s.c("log2e"), v, kf)
	if s.wide {
		VRNDSCALEPS(U8(0), kf, kf)
	} else {
		VROUNDPS(U8(0), kf, kf)
	}
	// r = v − k·ln2Hi − k·ln2Lo
	VFNMADD231PS(s.c("ln2Hi"), kf, v)
	VFNMADD231PS(s.c("ln2Lo"), kf, v)
	p := s.vec()
	VMOVUPS(s.c("p4"), p)
	for _, c := range []string{"p3", "p2", "p1", "p0"} {
		VFMADD213PS(s.c(c), v, p) // p = p·r + c
	}
	VMULPS(v, v, t)          // r²
	VFMADD213PS(v, t, p)     // p·r² + r
	VADDPS(s.c("one"), p, p) // + 1
	if s.wide {
		VSCALEFPS(kf, p, v) // p·2^k
		return
	}
	ki := s.vec()
	VCVTPS2DQ(kf, ki)
	VPSRAD(U8(1), ki, t) // k1 = k >> 1
	VPSUBD(t, ki, ki)    // k2 = k − k1
	VPADDD(s.c("bias"), t, t)
	VPSLLD(U8(23), t, t)
	VPADDD(s.c("bias"), ki, ki)
	VPSLLD(U8(23), ki, ki)
	VMULPS(t, p, p)
	VMULPS(ki, p, v)
}

// sigmoid replaces v by 1/(1+exp(−v)); with silu, by v·sigmoid(v).
func (s isa) sigmoid(v VecVirtual, silu bool) {
	x := s.vec()
	VMOVUPS(v, x)
	s.or(s.c("sign"), v, v) // −|x|
	s.exp(v, false)         // e
	d := s.vec()
	VADDPS(s.c("one"), v, d)
	if s.wide {
		// e where x's sign is set, 1 where not
		m := K()
		VPTESTMD(s.c("sign"), x, m)
		VBLENDMPS(v, s.reg("one", s.vec()), m, v)
	} else {
		m := s.vec()
		VPSRAD(U8(31), x, m)     // all ones where x's sign is set
		s.and(v, m, v)           // e where negative
		s.andn(s.c("one"), m, m) // 1 where not
		s.or(m, v, v)
	}
	VDIVPS(d, v, v)
	if silu {
		VMULPS(x, v, v)
	}
}

// tanh replaces v by tanh(v).
func (s isa) tanh(v VecVirtual) {
	x, a, sg := s.vec(), s.vec(), s.vec()
	VMOVUPS(v, x)
	s.and(s.c("abs"), x, a)
	s.and(s.c("sign"), x, sg)
	// the small branch: x + x·t·Q(t), t = x²
	t, q := s.vec(), s.vec()
	VMULPS(x, x, t)
	VMOVUPS(s.c("q4"), q)
	for _, c := range []string{"q3", "q2", "q1", "q0"} {
		VFMADD213PS(s.c(c), t, q)
	}
	VMULPS(x, t, t)
	VFMADD213PS(x, t, q) // q = (x·t)·q + x
	// the large branch: (1−e)/(1+e), e = exp(−2|x|), sign of x
	VMULPS(s.c("mtwo"), a, v)
	s.exp(v, false)
	d := s.vec()
	VADDPS(s.c("one"), v, d)
	o := s.load("one")
	VSUBPS(v, o, v) // 1 − e (Go order: VSUBPS(b, a, dst) is a − b)
	VDIVPS(d, v, v)
	s.or(sg, v, v)
	// mask: |x| < small, from the sign of bits(|x|) − bits(small)
	VPSUBD(s.c("small"), a, a)
	VPSRAD(U8(31), a, a)
	s.and(q, a, q)
	s.andn(v, a, v)
	s.or(q, v, v)
}

// kernel emits fn+suffix, y[i] = body(x[i]) for n a multiple of the
// width. AVX-512: the constants in need live in registers through the
// loop (each would otherwise be a load per instruction: a dozen 64-byte
// loads an iteration), and the loop computes unroll vectors a step, then
// the rest one at a time.
func kernel(s isa, name string, need []string, body func(s isa, v VecVirtual)) {
	fn := name + s.suffix
	TEXT(fn, NOSPLIT, "func(n int, x, y *float32)")
	Doc(fmt.Sprintf("%s computes y[i] = %s(x[i]) for i < n, n a multiple of %d (see vmath.go).", fn, name[1:], s.lanes))
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	s.regs = nil
	steps := []int{1}
	if s.wide {
		s.regs = map[string]VecVirtual{}
		for _, c := range need {
			r := s.vec()
			VMOVUPS(k(c), r)
			s.regs[c] = r
		}
		steps = []int{unroll, 1}
	}
	for _, u := range steps {
		loop := fmt.Sprintf("%s_loop%d", fn, u)
		Label(loop)
		CMPQ(n, U8(u*s.lanes))
		JLT(LabelRef(fmt.Sprintf("%s_done%d", fn, u)))
		vs := make([]VecVirtual, u)
		for i := range vs {
			vs[i] = s.vec()
			VMOVUPS(Mem{Base: x, Disp: 4 * s.lanes * i}, vs[i])
		}
		for _, v := range vs {
			body(s, v)
		}
		for i, v := range vs {
			VMOVUPS(v, Mem{Base: y, Disp: 4 * s.lanes * i})
		}
		ADDQ(U32(4*s.lanes*u), x)
		ADDQ(U32(4*s.lanes*u), y)
		SUBQ(U8(s.lanes*u), n)
		JMP(LabelRef(loop))
		Label(fmt.Sprintf("%s_done%d", fn, u))
	}
	VZEROUPPER()
	RET()
}

// unroll is the vectors an AVX-512 loop step computes.
const unroll = 2

// prelu emits preluVV (slope[i] per element) and preluVS (one slope):
// y[i] = x[i] < 0 ? slope·x[i] : x[i] for i < n, n a multiple of the
// width; x < 0 is an ordered compare, so −0 and NaN pass through (x·slope
// of −0 and an infinite slope would be NaN).
func prelu(s isa, scalar bool) {
	mode := "VV"
	if scalar {
		mode = "VS"
	}
	fn := "prelu" + mode + s.suffix
	TEXT(fn, NOSPLIT, "func(n int, x, slope, y *float32)")
	what := "slope[i]"
	if scalar {
		what = "slope[0]"
	}
	Doc(fmt.Sprintf("%s computes y[i] = x[i] < 0 ? %s·x[i] : x[i] for i < n, n a multiple of %d (see vmath.go).", fn, what, s.lanes))
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	sp := Load(Param("slope"), GP64())
	y := Load(Param("y"), GP64())
	sv, zero := s.vec(), s.vec()
	if scalar {
		VBROADCASTSS(Mem{Base: sp}, sv)
	}
	VXORPS(zero, zero, zero)
	Label(fn + "_loop")
	CMPQ(n, U8(s.lanes))
	JLT(LabelRef(fn + "_done"))
	v := s.vec()
	VMOVUPS(Mem{Base: x}, v)
	var slope Op = sv
	if !scalar {
		slope = Mem{Base: sp}
	}
	if s.wide {
		// k = x < 0 (LT_OS); v = k ? v·slope : v
		k := K()
		VCMPPS(U8(1), zero, v, k)
		VMULPS(slope, v, k, v)
	} else {
		t, m := s.vec(), s.vec()
		VCMPPS(U8(1), zero, v, m) // all ones where x < 0
		VMULPS(slope, v, t)
		s.and(t, m, t)
		s.andn(v, m, v)
		s.or(t, v, v)
	}
	if !scalar {
		ADDQ(U8(4*s.lanes), sp)
	}
	VMOVUPS(v, Mem{Base: y})
	ADDQ(U8(4*s.lanes), x)
	ADDQ(U8(4*s.lanes), y)
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef(fn + "_loop"))
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

func main() {
	table = GLOBL("vmconsts", attr.RODATA|attr.NOPTR)
	for i, c := range consts {
		for l := 0; l < 16; l++ {
			DATA(64*i+4*l, U32(c.bits))
		}
	}
	for _, s := range isas {
		s := s
		exp := []string{"expLo", "log2e", "ln2Hi", "ln2Lo", "p4", "p3", "p2", "p1", "p0", "one"}
		sig := append([]string{"sign"}, exp...)
		kernel(s, "vexp", append([]string{"expHi"}, exp...), func(s isa, v VecVirtual) { s.exp(v, true) })
		kernel(s, "vsigmoid", sig, func(s isa, v VecVirtual) { s.sigmoid(v, false) })
		kernel(s, "vsilu", sig, func(s isa, v VecVirtual) { s.sigmoid(v, true) })
		kernel(s, "vtanh", append([]string{"abs", "sign", "q4", "q3", "q2", "q1", "q0", "mtwo", "small"}, exp...),
			func(s isa, v VecVirtual) { s.tanh(v) })
		prelu(s, false)
		prelu(s, true)
	}
	Generate()
}
