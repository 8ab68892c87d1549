// Package ggml describes ggml's tensor types (the element encodings of
// GGUF files): their block layouts and sizes, exact dequantization, the
// quantization of activations to 8-bit blocks (Q8_0, Q8_1, Q8_K) and the
// integer dot products of a quantized weight row with such activations,
// as llama.cpp computes its quantized matrix products.
//
// It is a leaf package shared by the GGUF reader (formats/gguf), the
// reference kernel of BlockQuantMatMul (core/kernels/blockquant) and the
// native backend's kernels (plugins/native).
//
// Dequantization is exact: every value is what ggml's dequantize_row_*
// computes, float32 operation for float32 operation (the block scales are
// float16 and every product of a scale with a small integer is exact in
// float32; where ggml rounds, a multiplication by a third factor or the
// subtraction of a minimum, this package rounds at the same step).
//
// The block layouts (all little-endian; d, m, dmin are float16):
//
//	Q4_0  32 elements, 18 bytes: d, qs[16]; element j<16 is the low nibble
//	      of qs[j], j≥16 the high nibble of qs[j-16]; w = d·(q−8)
//	Q4_1  32, 20: d, m, qs[16] as Q4_0; w = d·q + m
//	Q5_0  32, 22: d, qh[4] (uint32, bit j the 5th bit of element j),
//	      qs[16] as Q4_0; w = d·(q−16)
//	Q5_1  32, 24: d, m, qh[4], qs[16]; w = d·q + m
//	Q8_0  32, 34: d, qs[32] int8; w = d·q
//	Q2_K  256, 84: scales[16] (low nibble scale, high nibble min of each
//	      16 elements), qs[64] (2 bits), d, dmin; w = d·sc·q − dmin·m
//	Q3_K  256, 110: hmask[32], qs[64] (2 low bits), scales[12] (sixteen
//	      6-bit scales, biased by 32), d; q = low − 4 where the hmask bit
//	      is clear; w = d·(s−32)·q
//	Q4_K  256, 144: d, dmin, scales[12] (eight 6-bit scales and mins,
//	      one per 32 elements), qs[128]; w = d·sc·q − dmin·m
//	Q5_K  256, 176: d, dmin, scales[12], qh[32], qs[128]; as Q4_K with a
//	      5th bit
//	Q6_K  256, 210: ql[128], qh[64], scales[16] int8, d; w = d·sc·(q−32)
//	Q8_K  256, 292: d float32, qs[256] int8, bsums[16] int16
//
// In the K types, each 128 elements take 32 bytes of qs (Q2_K, Q3_K: four
// 2-bit planes, shift 0, 2, 4, 6, of 32 bytes each covering 32 elements)
// or 64 bytes (Q4_K, Q5_K: 32 bytes a 64 elements, low nibbles first);
// see the dequantizers for the exact element order.
package ggml

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Type is a ggml_type value as GGUF files store it.
type Type uint32

// The tensor types.
const (
	F32  Type = 0
	F16  Type = 1
	Q4_0 Type = 2
	Q4_1 Type = 3
	Q5_0 Type = 6
	Q5_1 Type = 7
	Q8_0 Type = 8
	Q8_1 Type = 9
	Q2_K Type = 10
	Q3_K Type = 11
	Q4_K Type = 12
	Q5_K Type = 13
	Q6_K Type = 14
	Q8_K Type = 15
	BF16 Type = 30
)

// QK is the element count of a K-type super-block.
const QK = 256

type info struct {
	name         string
	block, bytes int // elements and bytes a block
}

var types = map[Type]info{
	F32:  {"F32", 1, 4},
	F16:  {"F16", 1, 2},
	BF16: {"BF16", 1, 2},
	Q4_0: {"Q4_0", 32, 18},
	Q4_1: {"Q4_1", 32, 20},
	Q5_0: {"Q5_0", 32, 22},
	Q5_1: {"Q5_1", 32, 24},
	Q8_0: {"Q8_0", 32, 34},
	Q8_1: {"Q8_1", 32, 36},
	Q2_K: {"Q2_K", QK, 84},
	Q3_K: {"Q3_K", QK, 110},
	Q4_K: {"Q4_K", QK, 144},
	Q5_K: {"Q5_K", QK, 176},
	Q6_K: {"Q6_K", QK, 210},
	Q8_K: {"Q8_K", QK, 292},
}

// Known reports whether t is a type this package reads (Q8_1 and Q8_K are
// activation encodings: known, never a weight's type in a GGUF file, but
// described here for completeness).
func (t Type) Known() bool { _, ok := types[t]; return ok }

// String names the type as ggml does ("Q4_K"), or ggml_type(N).
func (t Type) String() string {
	if i, ok := types[t]; ok {
		return i.name
	}
	return fmt.Sprintf("ggml_type(%d)", uint32(t))
}

// ParseType is the type of a name String returns.
func ParseType(s string) (Type, bool) {
	for t, i := range types {
		if i.name == s {
			return t, true
		}
	}
	return 0, false
}

// BlockSize is the elements of one block (1 for F32, F16, BF16; 0 for an
// unknown type).
func (t Type) BlockSize() int { return types[t].block }

// BlockBytes is the bytes of one block (0 for an unknown type).
func (t Type) BlockBytes() int { return types[t].bytes }

// Quantized reports whether t is a block-quantized weight type (every
// known type but F32, F16, BF16 and the activation types Q8_1, Q8_K).
func (t Type) Quantized() bool {
	return t.Known() && t.BlockSize() > 1 && t != Q8_1 && t != Q8_K
}

// RowBytes is the bytes of a row of n elements, or an error when n is not
// a whole number of blocks or the type is unknown.
func (t Type) RowBytes(n int) (int, error) {
	i, ok := types[t]
	if !ok {
		return 0, fmt.Errorf("ggml: unknown tensor type %s", t)
	}
	if n < 0 || n%i.block != 0 {
		return 0, fmt.Errorf("ggml: a %s row of %d elements is not whole %d-element blocks", t, n, i.block)
	}
	return n / i.block * i.bytes, nil
}

func f16(b []byte) float32 { return graph.F16(binary.LittleEndian.Uint16(b)).Float32() }

// Dequantize writes the len(out) values encoded in raw (whole blocks of
// type t) to out, exactly as ggml's dequantize_row_* does. It fails on an
// unknown type or when raw does not hold len(out) values.
func Dequantize(t Type, raw []byte, out []float32) error {
	i, ok := types[t]
	if !ok {
		return fmt.Errorf("ggml: unknown tensor type %s", t)
	}
	n := len(out)
	if n%i.block != 0 || len(raw) != n/i.block*i.bytes {
		return fmt.Errorf("ggml: %d bytes of %s for %d values (%d-element blocks of %d bytes)", len(raw), t, n, i.block, i.bytes)
	}
	switch t {
	case F32:
		for k := range out {
			out[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
		return nil
	case F16:
		for k := range out {
			out[k] = graph.F16(binary.LittleEndian.Uint16(raw[2*k:])).Float32()
		}
		return nil
	case BF16:
		for k := range out {
			out[k] = graph.BF16(binary.LittleEndian.Uint16(raw[2*k:])).Float32()
		}
		return nil
	}
	for b := 0; b < n/i.block; b++ {
		DequantizeBlock(t, raw[b*i.bytes:(b+1)*i.bytes], out[b*i.block:(b+1)*i.block])
	}
	return nil
}

// DequantizeBlock writes the BlockSize values of one block of a
// block-quantized type t (blk holds at least BlockBytes bytes, out at
// least BlockSize floats).
func DequantizeBlock(t Type, blk []byte, out []float32) {
	switch t {
	case Q4_0:
		d := f16(blk)
		qs := blk[2:18]
		for j := 0; j < 16; j++ {
			out[j] = float32(int(qs[j]&15)-8) * d
			out[j+16] = float32(int(qs[j]>>4)-8) * d
		}
	case Q4_1:
		d, m := f16(blk), f16(blk[2:])
		qs := blk[4:20]
		for j := 0; j < 16; j++ {
			out[j] = float32(float32(qs[j]&15)*d) + m
			out[j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	case Q5_0:
		d := f16(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := blk[6:22]
		for j := 0; j < 16; j++ {
			out[j] = float32(int(qs[j]&15|uint8(qh>>j<<4&16))-16) * d
			out[j+16] = float32(int(qs[j]>>4|uint8(qh>>(j+12)&16))-16) * d
		}
	case Q5_1:
		d, m := f16(blk), f16(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		qs := blk[8:24]
		for j := 0; j < 16; j++ {
			out[j] = float32(float32(qs[j]&15|uint8(qh>>j<<4&16))*d) + m
			out[j+16] = float32(float32(qs[j]>>4|uint8(qh>>(j+12)&16))*d) + m
		}
	case Q8_0:
		d := f16(blk)
		for j := 0; j < 32; j++ {
			out[j] = float32(int8(blk[2+j])) * d
		}
	case Q8_1:
		d := f16(blk)
		for j := 0; j < 32; j++ {
			out[j] = float32(int8(blk[4+j])) * d
		}
	case Q8_K:
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		for j := 0; j < QK; j++ {
			out[j] = d * float32(int8(blk[4+j]))
		}
	case Q2_K:
		dequantQ2K(blk, out)
	case Q3_K:
		dequantQ3K(blk, out)
	case Q4_K:
		dequantQ45K(blk, out, false)
	case Q5_K:
		dequantQ45K(blk, out, true)
	case Q6_K:
		dequantQ6K(blk, out)
	}
}

func dequantQ2K(blk []byte, out []float32) {
	sc, qs := blk[0:16], blk[16:80]
	d, dmin := f16(blk[80:]), f16(blk[82:])
	y := 0
	for h := 0; h < 2; h++ { // two halves of 128 elements, 32 bytes of qs each
		q := qs[32*h : 32*h+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ { // 16 elements from q[16·half:]
				s := sc[8*h+int(shift)+half]
				dl, ml := d*float32(s&15), dmin*float32(s>>4)
				for l := 0; l < 16; l++ {
					out[y] = float32(dl*float32(q[16*half+l]>>shift&3)) - ml
					y++
				}
			}
		}
	}
}

// q3Scales unpacks Q3_K's sixteen 6-bit scales (less 32).
func q3Scales(p []byte) [16]int8 {
	var s [16]int8
	for j := 0; j < 16; j++ {
		lo := p[j%8] >> (4 * uint(j/8)) & 15
		hi := p[8+j%4] >> (2 * uint(j/4)) & 3
		s[j] = int8(lo|hi<<4) - 32
	}
	return s
}

func dequantQ3K(blk []byte, out []float32) {
	hm, qs := blk[0:32], blk[32:96]
	sc := q3Scales(blk[96:108])
	d := f16(blk[108:])
	y, is := 0, 0
	m := uint8(1)
	for h := 0; h < 2; h++ {
		q := qs[32*h : 32*h+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for half := 0; half < 2; half++ {
				dl := d * float32(sc[is])
				is++
				for l := 16 * half; l < 16*half+16; l++ {
					v := int(q[l] >> shift & 3)
					if hm[l]&m == 0 {
						v -= 4
					}
					out[y] = dl * float32(v)
					y++
				}
			}
			m <<= 1
		}
	}
}

// K4Scale returns scale j and min j (0..7) of Q4_K's and Q5_K's packed
// 12-byte scales.
func K4Scale(p []byte, j int) (sc, m uint8) {
	if j < 4 {
		return p[j] & 63, p[j+4] & 63
	}
	return p[j+4]&15 | p[j-4]>>6<<4, p[j+4]>>4 | p[j]>>6<<4
}

func dequantQ45K(blk []byte, out []float32, five bool) {
	d, dmin := f16(blk), f16(blk[2:])
	scales := blk[4:16]
	var qh, qs []byte
	if five {
		qh, qs = blk[16:48], blk[48:176]
	} else {
		qs = blk[16:144]
	}
	y := 0
	for c := 0; c < 4; c++ { // 64 elements: 32 low nibbles, 32 high
		q := qs[32*c : 32*c+32]
		for half := 0; half < 2; half++ {
			s, m := K4Scale(scales, 2*c+half)
			d1, m1 := d*float32(s), dmin*float32(m)
			bit := uint8(1) << uint(2*c+half)
			for l := 0; l < 32; l++ {
				v := q[l] >> (4 * uint(half)) & 15
				if five && qh[l]&bit != 0 {
					v += 16
				}
				out[y] = float32(d1*float32(v)) - m1
				y++
			}
		}
	}
}

func dequantQ6K(blk []byte, out []float32) {
	ql, qh := blk[0:128], blk[128:192]
	d := f16(blk[208:])
	for h := 0; h < 2; h++ {
		l4, h2, sc, o := ql[64*h:], qh[32*h:], blk[192+8*h:], out[128*h:]
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(l4[l]&15|(h2[l]>>0&3)<<4) - 32
			q2 := int(l4[l+32]&15|(h2[l]>>2&3)<<4) - 32
			q3 := int(l4[l]>>4|(h2[l]>>4&3)<<4) - 32
			q4 := int(l4[l+32]>>4|(h2[l]>>6&3)<<4) - 32
			o[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
			o[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
			o[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
			o[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
		}
	}
}
