package ggml

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestSinfCosfGlibc: Sinf and Cosf give glibc's bits (its -mfma x86-64
// variants) on testdata/sincosf.bin, values written by sincosf.py through
// the C library. Most of them are inputs where glibc's result is not the
// correctly rounded one, so float32(math.Sin(x)) fails the test at
// thousands of them, and three are inputs where only the fused
// arithmetic gives glibc's result.
func TestSinfCosfGlibc(t *testing.T) {
	b, err := os.ReadFile("testdata/sincosf.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12*1000 || len(b)%12 != 0 {
		t.Fatalf("testdata/sincosf.bin: %d bytes, want triples of uint32", len(b))
	}
	wrong, rounded := 0, 0
	for i := 0; i < len(b); i += 12 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		ws, wc := binary.LittleEndian.Uint32(b[i+4:]), binary.LittleEndian.Uint32(b[i+8:])
		s, c := Sinf(x), Cosf(x)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			if !math.IsNaN(float64(s)) || !math.IsNaN(float64(c)) {
				t.Errorf("sin, cos of %v: %v, %v, want NaN", x, s, c)
			}
			continue
		}
		if math.Float32bits(s) != ws || math.Float32bits(c) != wc {
			if wrong++; wrong <= 10 {
				t.Errorf("x = %v (%#08x): sin %v, cos %v; glibc %v, %v", x, math.Float32bits(x), s, c,
					math.Float32frombits(ws), math.Float32frombits(wc))
			}
		}
		if math.Float32bits(float32(math.Sin(float64(x)))) != ws || math.Float32bits(float32(math.Cos(float64(x)))) != wc {
			rounded++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d values differ from glibc's", wrong, len(b)/12)
	}
	if rounded < 1000 {
		t.Errorf("the correctly rounded sine and cosine differ from glibc at only %d values: the data does not tell them apart", rounded)
	}
}

func BenchmarkSinfCosf(b *testing.B) {
	x := float32(0.1)
	var s float32
	for b.Loop() {
		s += Sinf(x) + Cosf(x)
		x += 0.37
	}
	_ = s
}
