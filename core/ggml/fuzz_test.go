package ggml

import "testing"

// FuzzDequantize: any bytes as any type, whole blocks or not, dequantize
// without a panic (or fail cleanly), and the integer dot product of whole
// blocks with quantized activations runs on whatever values they hold.
func FuzzDequantize(f *testing.F) {
	f.Add(make([]byte, 144), uint8(Q4_K))
	f.Add(make([]byte, 22), uint8(Q5_0))
	f.Fuzz(func(t *testing.T, raw []byte, typ uint8) {
		ty := Type(typ)
		if !ty.Known() {
			if err := Dequantize(ty, raw, make([]float32, 1)); err == nil {
				t.Fatalf("unknown type %d accepted", typ)
			}
			return
		}
		bs, be := ty.BlockBytes(), ty.BlockSize()
		nb := len(raw) / bs
		if err := Dequantize(ty, raw, make([]float32, nb*be+1)); err == nil && be > 1 {
			t.Fatalf("%s: %d values accepted from %d bytes", ty, nb*be+1, len(raw))
		}
		out := make([]float32, nb*be)
		if err := Dequantize(ty, raw[:nb*bs], out); err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		if !ty.Quantized() || nb == 0 {
			return
		}
		k := nb * be
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		var a Act
		a.Quantize(x, 1, k, ActBlock(ty))
		if k%ActBlock(ty) == 0 {
			_ = Dot(ty, raw[:nb*bs], &a, 0)
		}
	})
}
