package ggml

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// hand is a block built by hand from its parts: the quants q (unsigned,
// as stored), per-group scales and mins, and the float16 scales; want is
// each element's value as the layout defines it, computed in float64 from
// the parts (every such value is exact in float32, or rounded once, as
// ggml rounds it).
type hand struct {
	blk  []byte
	want []float64
}

func putF16(b []byte, v float32) float32 {
	h := graph.F16FromFloat32(v)
	binary.LittleEndian.PutUint16(b, uint16(h))
	return h.Float32()
}

// build packs a block of type t from random parts, following the layout
// in the package comment (written independently of the dequantizers).
func build(t Type, rng *rand.Rand) hand {
	n, bs := t.BlockSize(), t.BlockBytes()
	blk := make([]byte, bs)
	want := make([]float64, n)
	q := make([]int, n)
	d := float64(putF16(blk[off(t, "d"):], float32(rng.NormFloat64()*0.01)))
	switch t {
	case Q4_0, Q4_1, Q5_0, Q5_1:
		bits := 4
		if t == Q5_0 || t == Q5_1 {
			bits = 5
		}
		m := 0.0
		if t == Q4_1 || t == Q5_1 {
			m = float64(putF16(blk[2:], float32(rng.NormFloat64()*0.1)))
		}
		qs := blk[bs-16:]
		var qh uint32
		for i := range q {
			q[i] = rng.IntN(1 << bits)
			if i < 16 {
				qs[i] |= uint8(q[i] & 15)
			} else {
				qs[i-16] |= uint8(q[i]&15) << 4
			}
			if q[i] >= 16 {
				qh |= 1 << i
			}
			switch t {
			case Q4_0:
				want[i] = d * float64(q[i]-8)
			case Q5_0:
				want[i] = d * float64(q[i]-16)
			default:
				want[i] = float64(float32(d*float64(q[i]) + m))
			}
		}
		if bits == 5 {
			binary.LittleEndian.PutUint32(blk[bs-20:], qh)
		}
	case Q8_0:
		for i := range q {
			v := rng.IntN(256) - 128
			blk[2+i] = uint8(int8(v))
			want[i] = d * float64(v)
		}
	case Q2_K:
		dmin := float64(putF16(blk[82:], float32(rng.NormFloat64()*0.01)))
		for g := 0; g < 16; g++ {
			sc, mn := rng.IntN(16), rng.IntN(16)
			blk[g] = uint8(sc | mn<<4)
			for e := 16 * g; e < 16*g+16; e++ {
				v := rng.IntN(4)
				// element e: 128-half h, plane j (shift 2j), byte 32h + (e%32)
				h, j := e/128, (e%128)/32
				blk[16+32*h+e%32] |= uint8(v << (2 * j))
				want[e] = float64(float32(d*float64(sc)*float64(v) - float64(float32(dmin*float64(mn)))))
			}
		}
	case Q3_K:
		for g := 0; g < 16; g++ {
			s := rng.IntN(64) // stored, biased by 32
			// low 4 bits: byte g%8, nibble g/8; high 2 bits: byte 8+g%4, pair g/4
			blk[96+g%8] |= uint8(s&15) << (4 * (g / 8))
			blk[96+8+g%4] |= uint8(s>>4) << (2 * (g / 4))
			for e := 16 * g; e < 16*g+16; e++ {
				v := rng.IntN(8) - 4 // low 2 bits + (high bit set ? 0 : -4)
				u := v + 4
				h, j := e/128, (e%128)/32
				blk[32+32*h+e%32] |= uint8(u&3) << (2 * j)
				if u >= 4 {
					blk[e%32] |= 1 << (4*h + j)
				}
				want[e] = d * float64(s-32) * float64(v)
			}
		}
	case Q4_K, Q5_K:
		dmin := float64(putF16(blk[2:], float32(rng.NormFloat64()*0.01)))
		var sc, mn [8]int
		for s := 0; s < 8; s++ {
			sc[s], mn[s] = rng.IntN(64), rng.IntN(64)
		}
		p := blk[4:16]
		for s := 0; s < 4; s++ {
			p[s] = uint8(sc[s]) | uint8(sc[s+4]>>4)<<6
			p[s+4] = uint8(mn[s]) | uint8(mn[s+4]>>4)<<6
			p[s+8] = uint8(sc[s+4]&15) | uint8(mn[s+4]&15)<<4
		}
		qs := blk[16:]
		if t == Q5_K {
			qs = blk[48:]
		}
		for e := 0; e < 256; e++ {
			s := e / 32
			v := rng.IntN(16)
			if t == Q5_K {
				v = rng.IntN(32)
				if v >= 16 {
					blk[16+e%32] |= 1 << s
				}
			}
			// 64-element chunk c = s/2: low nibbles for even s
			qs[32*(s/2)+e%32] |= uint8(v&15) << (4 * (s % 2))
			dl := float64(float32(d * float64(sc[s])))
			ml := float64(float32(dmin * float64(mn[s])))
			want[e] = float64(float32(dl*float64(v) - ml))
		}
	case Q6_K:
		for g := 0; g < 16; g++ {
			s := rng.IntN(256) - 128
			blk[192+g] = uint8(int8(s))
			for e := 16 * g; e < 16*g+16; e++ {
				u := rng.IntN(64)
				h, k, l := e/128, (e%128)/32, e%32
				blk[64*h+32*(k&1)+l] |= uint8(u&15) << (4 * (k >> 1))
				blk[128+32*h+l] |= uint8(u>>4) << (2 * k)
				want[e] = float64(float32(d*float64(s))) * float64(u-32)
				want[e] = float64(float32(want[e]))
			}
		}
	}
	return hand{blk, want}
}

// off is the byte offset of a block's d.
func off(t Type, field string) int {
	switch t {
	case Q2_K:
		return 80
	case Q3_K:
		return 108
	case Q6_K:
		return 208
	}
	return 0
}

var weightTypes = []Type{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K}

func TestSizes(t *testing.T) {
	want := map[Type][2]int{Q4_0: {32, 18}, Q4_1: {32, 20}, Q5_0: {32, 22}, Q5_1: {32, 24}, Q8_0: {32, 34},
		Q2_K: {256, 84}, Q3_K: {256, 110}, Q4_K: {256, 144}, Q5_K: {256, 176}, Q6_K: {256, 210}, Q8_K: {256, 292}}
	for ty, w := range want {
		if ty.BlockSize() != w[0] || ty.BlockBytes() != w[1] {
			t.Errorf("%s: %d elements in %d bytes, want %v", ty, ty.BlockSize(), ty.BlockBytes(), w)
		}
		if p, ok := ParseType(ty.String()); !ok || p != ty {
			t.Errorf("ParseType(%q) = %v, %v", ty.String(), p, ok)
		}
	}
	if _, err := Q4_K.RowBytes(896); err == nil {
		t.Error("a Q4_K row of 896 elements was accepted")
	}
	if n, err := Q6_K.RowBytes(512); err != nil || n != 420 {
		t.Errorf("Q6_K.RowBytes(512) = %d, %v", n, err)
	}
	if Type(99).Known() || Type(99).Quantized() || F16.Quantized() || !Q3_K.Quantized() {
		t.Error("Known/Quantized disagree with the table")
	}
}

// TestDequantizeHandBuilt: every weight type's dequantizer against blocks
// packed by hand from their parts (three blocks a type, so block offsets
// are exercised too).
func TestDequantizeHandBuilt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range weightTypes {
		var raw []byte
		var want []float64
		for b := 0; b < 3; b++ {
			h := build(ty, rng)
			raw = append(raw, h.blk...)
			want = append(want, h.want...)
		}
		out := make([]float32, len(want))
		if err := Dequantize(ty, raw, out); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		bad := 0
		for i := range out {
			if float64(out[i]) != want[i] {
				if bad < 4 {
					t.Errorf("%s: element %d = %v, want %v", ty, i, out[i], want[i])
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d elements differ", ty, bad, len(out))
		}
		if err := Dequantize(ty, raw[:len(raw)-1], out); err == nil {
			t.Errorf("%s: a short buffer was accepted", ty)
		}
	}
}

// TestDequantizeFixed pins one hand-written block of Q4_0 and Q4_K to
// values worked out on paper.
func TestDequantizeFixed(t *testing.T) {
	// Q4_0: d = 0.5, byte j = 0x9j&15: low nibble j (0..15), high 9.
	b := make([]byte, 18)
	binary.LittleEndian.PutUint16(b, 0x3800) // 0.5
	for j := 0; j < 16; j++ {
		b[2+j] = uint8(j) | 9<<4
	}
	out := make([]float32, 32)
	if err := Dequantize(Q4_0, b, out); err != nil {
		t.Fatal(err)
	}
	if out[0] != -4 || out[15] != 3.5 || out[16] != 0.5 || out[31] != 0.5 {
		t.Errorf("Q4_0: %v", out)
	}
	// Q4_K: d = 1, dmin = 0.5, sub-block 0 scale 3 min 2, sub-block 5
	// (scale in byte 9's low nibble and byte 1's top bits) scale 17 min 0;
	// element 0 = 7 (low nibble of qs[0]), element 160 = 15 (low nibble of
	// qs[64+0]: chunk 2, sub-block 4) and element 191 (sub-block 5: high
	// nibble of qs[64+31]) = 2.
	k := make([]byte, 144)
	binary.LittleEndian.PutUint16(k, 0x3c00)
	binary.LittleEndian.PutUint16(k[2:], 0x3800)
	k[4+0], k[4+4] = 3, 2
	k[4+9] = 17 & 15
	k[4+1] = (17 >> 4) << 6
	k[16+0] = 7
	k[16+64] = 15
	k[16+64+31] = 2 << 4
	out = make([]float32, 256)
	if err := Dequantize(Q4_K, k, out); err != nil {
		t.Fatal(err)
	}
	// sub-block 4's scale and min are 0 here: 0·15 − 0
	if out[0] != 3*7-0.5*2 || out[160] != 0 || out[191] != 17*2 || out[1] != -1 {
		t.Errorf("Q4_K: out[0] %v out[1] %v out[160] %v out[191] %v", out[0], out[1], out[160], out[191])
	}
}

// TestDot: the integer dot product of every weight type with quantized
// activations equals the float64 dot product of the dequantized weight
// with the dequantized activations, up to float32 rounding.
func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ty := range weightTypes {
		const k, rows = 512, 2
		var raw []byte
		for len(raw) < k/ty.BlockSize()*ty.BlockBytes() {
			raw = append(raw, build(ty, rng).blk...)
		}
		w := make([]float32, k)
		if err := Dequantize(ty, raw, w); err != nil {
			t.Fatal(err)
		}
		x := make([]float32, rows*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a Act
		a.Quantize(x, rows, k, ActBlock(ty))
		for r := 0; r < rows; r++ {
			var want, mag float64
			for i := 0; i < k; i++ {
				xa := float64(a.D[(r*k+i)/a.Block]) * float64(a.Q[r*k+i])
				want += float64(w[i]) * xa
				mag += math.Abs(float64(w[i]) * xa)
				// the activations' rounding: within half a step, plus the
				// float16 rounding of a 32-element block's scale
				step := float64(a.D[(r*k+i)/a.Block])
				if a.Block == 32 {
					step *= 1 + 127*math.Ldexp(1, -10)
				}
				if e := math.Abs(xa - float64(x[r*k+i])); e > step/2*1.0001 {
					t.Fatalf("%s: activation %d quantized to %v from %v", ty, i, xa, x[r*k+i])
				}
			}
			// Q4_1 and Q5_1 take the minimum's share from SumD, the block
			// sum rounded to float16 as Q8_1 stores it
			var extra float64
			if ty == Q4_1 || ty == Q5_1 {
				for b := 0; b < k/32; b++ {
					m := float64(f16(raw[b*ty.BlockBytes()+2:]))
					ab := r*k/32 + b
					extra += math.Abs(m) * math.Abs(float64(a.SumD[ab])-float64(a.D[ab])*float64(a.Sum[ab]))
				}
			}
			got := Dot(ty, raw, &a, r)
			if e := math.Abs(float64(got) - want); e > 1e-5*mag+extra*1.001 {
				t.Errorf("%s row %d: Dot %v, want %v (error %.3g of %.3g)", ty, r, got, want, e, mag)
			}
		}
	}
}

// TestQuantizeNaN: a block holding a NaN makes its scale NaN.
func TestQuantizeNaN(t *testing.T) {
	x := make([]float32, 64)
	x[40] = float32(math.NaN())
	var a Act
	a.Quantize(x, 1, 64, 32)
	if a.D[0] != 0 || !math.IsNaN(float64(a.D[1])) {
		t.Errorf("scales %v", a.D)
	}
}

// TestQuantizeBlockRule: QuantizeBlock against the rule written out
// plainly (d = max|x|/127 with NaN and ±Inf making the block bad, q =
// x·(1/d) rounded to nearest even within ±127), bit for bit, on random
// blocks, blocks with ties (x·(1/d) a half), zeros, negative zeros,
// subnormals, huge values, NaN and infinities.
func TestQuantizeBlockRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	plain := func(xs []float32, q []int8) (float32, bool) {
		var amax float32
		bad := false
		for _, v := range xs {
			if v != v || math.IsInf(float64(v), 0) {
				bad = true
			}
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		for i, v := range xs {
			if bad {
				q[i] = 0
				continue
			}
			q[i] = int8(max(-127, min(127, math.RoundToEven(float64(v*id)))))
		}
		if bad {
			return float32(math.NaN()), true
		}
		return d, false
	}
	specials := []float32{0, float32(math.Copysign(0, -1)), 1e-42, -1e-40, 3e38, -3e38, 0.5, -0.5, 1.5, 127, -127, 63.5}
	for it := 0; it < 20000; it++ {
		xs := make([]float32, 32)
		for i := range xs {
			switch rng.IntN(6) {
			case 0:
				xs[i] = specials[rng.IntN(len(specials))]
			case 1:
				xs[i] = float32(rng.IntN(255)-127) / 2 // ties when max is 127
			default:
				xs[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
			}
		}
		switch it % 50 {
		case 1:
			xs[rng.IntN(32)] = float32(math.NaN())
		case 2:
			xs[rng.IntN(32)] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 3:
			xs[0] = 127
		}
		q, want := make([]int8, 32), make([]int8, 32)
		d, bad := QuantizeBlock(xs, q)
		wd, wbad := plain(xs, want)
		if bad != wbad || math.Float32bits(d) != math.Float32bits(wd) && !(bad && d != d) {
			t.Fatalf("%v: scale %v bad %v, want %v %v", xs, d, bad, wd, wbad)
		}
		for i := range q {
			if q[i] != want[i] {
				t.Fatalf("%v: q[%d] = %d, want %d", xs, i, q[i], want[i])
			}
		}
	}
}
