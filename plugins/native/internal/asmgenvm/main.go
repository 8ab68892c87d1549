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
}

var isas = []isa{{"AVX2", 8, YMM, false}, {"AVX512", 16, ZMM, true}}

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

// load fills a register with a constant.
func (s isa) load(name string) VecVirtual {
	r := s.vec()
	if s.wide {
		VMOVUPS(k(name), r)
	} else {
		VMOVUPS(k(name), r)
	}
	return r
}

// exp replaces v by exp(v), NaN kept (see vmath.go). clampHi false: v is
// known ≤ 0 (or NaN).
func (s isa) exp(v VecVirtual, clampHi bool) {
	t := s.vec()
	if clampHi {
		// t = hi < v ? hi : v (Intel: min(src1=hi, src2=v) returns src2 on NaN)
		VMOVUPS(k("expHi"), t)
		VMINPS(v, t, v)
	}
	VMOVUPS(k("expLo"), t)
	VMAXPS(v, t, v)
	kf := s.vec()
	VMULPS(k("log2e"), v, kf)
	if s.wide {
		VRNDSCALEPS(U8(0), kf, kf)
	} else {
		VROUNDPS(U8(0), kf, kf)
	}
	// r = v − k·ln2Hi − k·ln2Lo
	VFNMADD231PS(k("ln2Hi"), kf, v)
	VFNMADD231PS(k("ln2Lo"), kf, v)
	p := s.vec()
	VMOVUPS(k("p4"), p)
	for _, c := range []string{"p3", "p2", "p1", "p0"} {
		VFMADD213PS(k(c), v, p) // p = p·r + c
	}
	VMULPS(v, v, t)        // r²
	VFMADD213PS(v, t, p)   // p·r² + r
	VADDPS(k("one"), p, p) // + 1
	if s.wide {
		VSCALEFPS(kf, p, v) // p·2^k
		return
	}
	ki := s.vec()
	VCVTPS2DQ(kf, ki)
	VPSRAD(U8(1), ki, t) // k1 = k >> 1
	VPSUBD(t, ki, ki)    // k2 = k − k1
	VPADDD(k("bias"), t, t)
	VPSLLD(U8(23), t, t)
	VPADDD(k("bias"), ki, ki)
	VPSLLD(U8(23), ki, ki)
	VMULPS(t, p, p)
	VMULPS(ki, p, v)
}

// sigmoid replaces v by 1/(1+exp(−v)); with silu, by v·sigmoid(v).
func (s isa) sigmoid(v VecVirtual, silu bool) {
	x := s.vec()
	VMOVUPS(v, x)
	s.or(k("sign"), v, v) // −|x|
	s.exp(v, false)       // e
	m, d := s.vec(), s.vec()
	VPSRAD(U8(31), x, m) // all ones where x's sign is set
	VADDPS(k("one"), v, d)
	s.and(v, m, v)         // e where negative
	s.andn(k("one"), m, m) // 1 where not
	s.or(m, v, v)
	VDIVPS(d, v, v)
	if silu {
		VMULPS(x, v, v)
	}
}

// tanh replaces v by tanh(v).
func (s isa) tanh(v VecVirtual) {
	x, a, sg := s.vec(), s.vec(), s.vec()
	VMOVUPS(v, x)
	s.and(k("abs"), x, a)
	s.and(k("sign"), x, sg)
	// the small branch: x + x·t·Q(t), t = x²
	t, q := s.vec(), s.vec()
	VMULPS(x, x, t)
	VMOVUPS(k("q4"), q)
	for _, c := range []string{"q3", "q2", "q1", "q0"} {
		VFMADD213PS(k(c), t, q)
	}
	VMULPS(x, t, t)
	VFMADD213PS(x, t, q) // q = (x·t)·q + x
	// the large branch: (1−e)/(1+e), e = exp(−2|x|), sign of x
	VMULPS(k("mtwo"), a, v)
	s.exp(v, false)
	d := s.vec()
	VADDPS(k("one"), v, d)
	o := s.load("one")
	VSUBPS(v, o, v) // 1 − e (Go order: VSUBPS(b, a, dst) is a − b)
	VDIVPS(d, v, v)
	s.or(sg, v, v)
	// mask: |x| < small, from the sign of bits(|x|) − bits(small)
	VPSUBD(k("small"), a, a)
	VPSRAD(U8(31), a, a)
	s.and(q, a, q)
	s.andn(v, a, v)
	s.or(q, v, v)
}

func kernel(s isa, name string, body func(v VecVirtual)) {
	fn := name + s.suffix
	TEXT(fn, NOSPLIT, "func(n int, x, y *float32)")
	Doc(fmt.Sprintf("%s computes y[i] = %s(x[i]) for i < n, n a multiple of %d (see vmath.go).", fn, name[1:], s.lanes))
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	Label(fn + "_loop")
	CMPQ(n, U8(s.lanes))
	JLT(LabelRef(fn + "_done"))
	v := s.vec()
	VMOVUPS(Mem{Base: x}, v)
	body(v)
	VMOVUPS(v, Mem{Base: y})
	ADDQ(U8(4*s.lanes), x)
	ADDQ(U8(4*s.lanes), y)
	SUBQ(U8(s.lanes), n)
	JMP(LabelRef(fn + "_loop"))
	Label(fn + "_done")
	VZEROUPPER()
	RET()
}

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
		kernel(s, "vexp", func(v VecVirtual) { s.exp(v, true) })
		kernel(s, "vsigmoid", func(v VecVirtual) { s.sigmoid(v, false) })
		kernel(s, "vsilu", func(v VecVirtual) { s.sigmoid(v, true) })
		kernel(s, "vtanh", func(v VecVirtual) { s.tanh(v) })
		prelu(s, false)
		prelu(s, true)
	}
	Generate()
}
