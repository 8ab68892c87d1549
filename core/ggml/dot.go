package ggml

import (
	"encoding/binary"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Act is one or more rows of activations quantized to 8-bit blocks, the
// form the integer dot products take (llama.cpp's vec_dot_type): for the
// 32-element types (ActBlock 32, Q8_0/Q8_1), per block one float32 scale
// D and the sum of its 32 values in Sum (for Q4_1, Q5_1's minimum) and the
// eight sums of its lanes of four values in Lanes (for Q4_0's and Q5_0's
// offset); for the K types (ActBlock 256, Q8_K) per super-block one scale,
// the sixteen sums of 16 values in Sum and the eight sums of 32 in Sum32.
//
// Every block is quantized by the same rule, llama.cpp's: d = max|x|/127,
// q = x·(127/max|x|) rounded to the nearest integer (ties to even), within ±127;
// a block holding a NaN or an infinity gets d = NaN (so the outputs are
// NaN). As in llama.cpp's Q8_0 and Q8_1, the scale of a 32-element block
// is then rounded to float16 (D holds that value; the values were
// quantized with the unrounded one), and SumD holds float16(d·Σq), the
// block's sum as Q8_1 stores it; Q8_K keeps d in float32.
type Act struct {
	Block int // 32 or 256
	K     int // values a row
	Q     []int8
	D     []float32
	Sum   []int32
	Sum32 []int32
	Lanes []int32
	SumD  []float32
}

// ActBlock is the activation block of a weight type's integer dot
// product: 32 for the 32-element types, 256 for the K types.
func ActBlock(t Type) int {
	if t.BlockSize() == QK {
		return QK
	}
	return 32
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Quantize quantizes the m rows of x (k values each, k a multiple of
// block) into a, reusing its slices.
func (a *Act) Quantize(x []float32, m, k, block int) {
	a.Block, a.K = block, k
	nb := m * k / block
	a.Q = grow(a.Q, m*k)
	a.D = grow(a.D, nb)
	if block == QK {
		a.Sum = grow(a.Sum, nb*16)
		a.Sum32 = grow(a.Sum32, nb*8)
		a.Lanes = a.Lanes[:0]
	} else {
		a.Sum = grow(a.Sum, nb)
		a.Lanes = grow(a.Lanes, nb*8)
		a.SumD = grow(a.SumD, nb)
	}
	for b := 0; b < nb; b++ {
		q := a.Q[b*block : (b+1)*block]
		d, bad := QuantizeBlock(x[b*block:(b+1)*block], q)
		a.D[b] = d
		if block == QK {
			for g := 0; g < 16; g++ {
				a.Sum[16*b+g] = sum16(q[16*g : 16*g+16])
			}
			for g := 0; g < 8; g++ {
				a.Sum32[8*b+g] = a.Sum[16*b+2*g] + a.Sum[16*b+2*g+1]
			}
			continue
		}
		var s int32
		for l := 0; l < 8; l++ {
			ls := int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3])
			a.Lanes[8*b+l] = ls
			s += ls
		}
		a.Sum[b] = s
		if !bad {
			a.D[b] = F16Round(d)
			a.SumD[b] = F16Round(float32(s) * d)
		} else {
			a.SumD[b] = d
		}
	}
}

// sum16 is the sum of 16 int8 values.
func sum16(q []int8) int32 {
	q = q[:16]
	var s int32
	for _, v := range q {
		s += int32(v)
	}
	return s
}

// QuantizeBlock quantizes one block of activations to q (len(xs) values)
// by llama.cpp's rule (BlockScale, then q = x·(127/max|x|) rounded to the
// nearest integer, ties to even, within ±127; a block holding a NaN or an
// infinity is all zeros) and returns its unrounded scale d.
func QuantizeBlock(xs []float32, q []int8) (d float32, bad bool) {
	d, id, bad := BlockScale(xs)
	q = q[:len(xs)]
	if bad {
		clear(q)
		return d, bad
	}
	for i, v := range xs {
		// |v·id| ≤ 127 (up to rounding): the clamp only guards that
		r := int32(math.RoundToEven(float64(v * id)))
		q[i] = int8(max(-127, min(127, r)))
	}
	return d, bad
}

// F16Round is f rounded to float16 (to nearest, ties to even) and widened
// back, as llama.cpp stores an 8-bit block's scale.
func F16Round(f float32) float32 { return graph.F16FromFloat32(f).Float32() }

// BlockScale is the 8-bit scale of one block of activations, as llama.cpp
// quantizes them on x86 (quantize_row_q8_0's AVX code): d = max|x|/127
// and the multiplier 127/max|x| (not 1/d: the two differ in the last bit
// for some blocks, and a value then rounds the other way; 0 for an
// all-zero block); a NaN or ±Inf in the block makes d NaN and bad true (every
// output of the block is then NaN).
func BlockScale(xs []float32) (d, id float32, bad bool) {
	// |x| compared by its bits (ordered as the values are for x ≥ 0):
	// NaN and ±Inf are the patterns from 0x7f800000 up
	var amax uint32
	for _, v := range xs {
		amax = max(amax, math.Float32bits(v)&0x7fffffff)
	}
	if amax >= 0x7f800000 {
		return float32(math.NaN()), 0, true
	}
	d = math.Float32frombits(amax) / 127
	if d != 0 {
		id = 127 / math.Float32frombits(amax)
	}
	return d, id, false
}

// Dot is the integer-path dot product of one weight row w (whole blocks
// of type t, t quantized) with row r of a (quantized with ActBlock(t)).
//
// The arithmetic is fixed, so that the native backend's assembly can
// reproduce it bit for bit:
//
//   - 32-element types: block b's 32 integer products w·q are summed
//     exactly in eight lanes (lane l: elements 4l..4l+3, w the signed
//     value: q−8, q−16 or the int8), each lane converted to float32 and
//     added times float32(d_w·d_a) to a float32 accumulator of its own
//     by a fused multiply-add (one rounding: FMA32); the lanes are
//     reduced at the end as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). That is
//     llama.cpp's x86 order (ggml_vec_dot_q8_0_q8_0's _mm256_fmadd_ps and
//     hsum_float_8, and llamafile's tinyBLAS_Q0_AVX for prompts), so a
//     Q8_0 product is its result to the last bit. Q4_1 and Q5_1 add their
//     minimum's share, m·SumD, to a ninth accumulator added last.
//   - Q4_0 differs: llama.cpp on x86 (AVX2 or AVX-512) repacks Q4_0
//     weights of a multiple of 8 rows into interleaved blocks of eight
//     rows (block_q4_0x8) and multiplies them by ggml_gemv/gemm_q4_0_8x8_q8_0,
//     one int32 sum of all 32 products a block, acc = fma(float32(sum),
//     float32(d_w·d_a), acc) in one float32 accumulator, block after
//     block, no reduction; Dot does that (the product d_w·d_a of two
//     float16 values is exact in float32, so each block rounds once).
//   - K types: per super-block the exact int32 sum S of scale_j · Σ w·q
//     over its sub-blocks (w the unsigned quant for Q2_K, Q4_K, Q5_K, the
//     signed one for Q3_K and Q6_K) and, for the types with minimums, M =
//     Σ min_j · Σ q over the sub-block; acc += float32(S)·float32(d·d_a),
//     then acc −= float32(M)·float32(dmin·d_a), rounding after each
//     operation.
func Dot(t Type, w []byte, a *Act, r int) float32 {
	if a.Block == QK {
		return dotK(t, w, a, r)
	}
	return dot32(t, w, a, r)
}

func dot32(t Type, w []byte, a *Act, r int) float32 {
	bs := t.BlockBytes()
	nb := a.K / 32
	var acc [8]float32
	var macc float32
	var vals [32]int32
	for b := 0; b < nb; b++ {
		blk := w[b*bs : (b+1)*bs]
		ab := r*nb + b
		xq := a.Q[ab*32 : ab*32+32]
		d := f16(blk)
		var m float32
		switch t {
		case Q4_0:
			for j := 0; j < 16; j++ {
				vals[j] = int32(blk[2+j]&15) - 8
				vals[j+16] = int32(blk[2+j]>>4) - 8
			}
		case Q4_1:
			m = f16(blk[2:])
			for j := 0; j < 16; j++ {
				vals[j] = int32(blk[4+j] & 15)
				vals[j+16] = int32(blk[4+j] >> 4)
			}
		case Q5_0, Q5_1:
			o := 2
			if t == Q5_1 {
				m, o = f16(blk[2:]), 4
			}
			qh := binary.LittleEndian.Uint32(blk[o:])
			qs := blk[o+4 : o+20]
			for j := 0; j < 16; j++ {
				vals[j] = int32(qs[j]&15 | uint8(qh>>j<<4&16))
				vals[j+16] = int32(qs[j]>>4 | uint8(qh>>(j+12)&16))
				if t == Q5_0 {
					vals[j] -= 16
					vals[j+16] -= 16
				}
			}
		case Q8_0:
			for j := 0; j < 32; j++ {
				vals[j] = int32(int8(blk[2+j]))
			}
		}
		sc := d * a.D[ab]
		if t == Q4_0 {
			// llama.cpp's repacked order: the block's whole integer sum,
			// one fused multiply-add a block into a single accumulator
			var p int32
			for j := 0; j < 32; j++ {
				p += vals[j] * int32(xq[j])
			}
			acc[0] = FMA32(sc, float32(p), acc[0])
			continue
		}
		for l := 0; l < 8; l++ {
			p := vals[4*l]*int32(xq[4*l]) + vals[4*l+1]*int32(xq[4*l+1]) + vals[4*l+2]*int32(xq[4*l+2]) + vals[4*l+3]*int32(xq[4*l+3])
			acc[l] = FMA32(sc, float32(p), acc[l])
		}
		if t == Q4_1 || t == Q5_1 {
			macc = macc + float32(m*a.SumD[ab])
		}
	}
	if t == Q4_0 {
		return acc[0]
	}
	return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7])) + macc
}

// FMA32 is a·b + c rounded once to float32 (x86's VFMADD, ARM's FMLA):
// a·b is exact in float64, the sum rounded to float64 with its error
// kept, then rounded to odd so that the rounding to float32 is the
// single correct one.
func FMA32(a, b, c float32) float32 {
	p, q := float64(a)*float64(b), float64(c)
	s := p + q
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// Knuth's TwoSum: e is exactly p + q − s
	bb := s - p
	e := (p - (s - bb)) + (q - bb)
	if e != 0 && math.Float64bits(s)&1 == 0 {
		s = math.Nextafter(s, math.Inf(int(math.Copysign(1, e))))
	}
	return float32(s)
}

func dotK(t Type, w []byte, a *Act, r int) float32 {
	bs := t.BlockBytes()
	nb := a.K / QK
	var acc float32
	for b := 0; b < nb; b++ {
		blk := w[b*bs : (b+1)*bs]
		ab := r*nb + b
		xq := a.Q[ab*QK : ab*QK+QK]
		bsum := a.Sum[ab*16 : ab*16+16]
		da := a.D[ab]
		var S, M int32
		var d, dmin float32
		switch t {
		case Q2_K:
			sc, qs := blk[0:16], blk[16:80]
			d, dmin = f16(blk[80:]), f16(blk[82:])
			for g := 0; g < 16; g++ { // group g: 16 elements
				h, j, half := g/8, (g%8)/2, g%2
				q := qs[32*h+16*half : 32*h+16*half+16]
				x := xq[128*h+32*j+16*half:]
				var p int32
				for l := 0; l < 16; l++ {
					p += int32(q[l]>>(2*uint(j))&3) * int32(x[l])
				}
				S += int32(sc[g]&15) * p
				M += int32(sc[g]>>4) * bsum[g]
			}
		case Q3_K:
			hm, qs := blk[0:32], blk[32:96]
			sc := q3Scales(blk[96:108])
			d = f16(blk[108:])
			for g := 0; g < 16; g++ {
				h, j, half := g/8, (g%8)/2, g%2
				q := qs[32*h+16*half : 32*h+16*half+16]
				hmk := hm[16*half : 16*half+16]
				bit := uint8(1) << uint(4*h+j)
				x := xq[128*h+32*j+16*half:]
				var p int32
				for l := 0; l < 16; l++ {
					v := int32(q[l] >> (2 * uint(j)) & 3)
					if hmk[l]&bit == 0 {
						v -= 4
					}
					p += v * int32(x[l])
				}
				S += int32(sc[g]) * p
			}
		case Q4_K, Q5_K:
			d, dmin = f16(blk), f16(blk[2:])
			scales := blk[4:16]
			var qh, qs []byte
			if t == Q5_K {
				qh, qs = blk[16:48], blk[48:176]
			} else {
				qs = blk[16:144]
			}
			for s := 0; s < 8; s++ { // sub-block s: 32 elements
				c, half := s/2, s%2
				q := qs[32*c : 32*c+32]
				x := xq[32*s : 32*s+32]
				bit := uint8(1) << uint(s)
				var p int32
				for l := 0; l < 32; l++ {
					v := int32(q[l] >> (4 * uint(half)) & 15)
					if qh != nil && qh[l]&bit != 0 {
						v += 16
					}
					p += v * int32(x[l])
				}
				sc, m := K4Scale(scales, s)
				S += int32(sc) * p
				M += int32(m) * (bsum[2*s] + bsum[2*s+1])
			}
		case Q6_K:
			d = f16(blk[208:])
			for g := 0; g < 16; g++ {
				h, k, half := g/8, (g%8)/2, g%2 // k: which of the four planes
				l4 := blk[64*h+32*(k&1):]
				h2 := blk[128+32*h:]
				x := xq[128*h+32*k+16*half:]
				var p int32
				for l := 16 * half; l < 16*half+16; l++ {
					v := int32(l4[l]>>(4*uint(k>>1))&15|(h2[l]>>(2*uint(k))&3)<<4) - 32
					p += v * int32(x[l-16*half])
				}
				S += int32(int8(blk[192+8*h+2*k+half])) * p
			}
		}
		acc = acc + float32(float32(S)*float32(d*da))
		if t != Q3_K && t != Q6_K {
			acc = acc - float32(float32(M)*float32(dmin*da))
		}
	}
	return acc
}
