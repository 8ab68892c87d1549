package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// TestTriad: the triad computes a = b + 3·c over every element, at one
// thread and at three (uneven split), and reports a positive rate.
func TestTriad(t *testing.T) {
	a, b, c := make([]float64, 5), []float64{1, 2, 3, 4, 5}, []float64{1, 1, 2, 2, 3}
	triadRange(a, b, c, 3)
	for i, want := range []float64{4, 5, 9, 10, 14} {
		if a[i] != want {
			t.Fatalf("a = %v", a)
		}
	}
	for _, th := range []int{1, 3} {
		if g := triad(th, 2, 1<<20); !(g > 0) {
			t.Errorf("%d threads: %v GB/s", th, g)
		}
	}
}

// TestWeightBytesPerToken: every tensor counts, but for the token
// embedding of a model with its own classifier (a step reads one row of
// it); a tied model's embedding is its classifier and counts; a file
// that is not a GGUF has no figure.
func TestWeightBytesPerToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, output bool) string {
		emb, _ := gguf.QuantizeQ8_0(make([]float32, 64*8)) // 16 blocks of 34 bytes
		ts := []gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{64, 8}, Type: gguf.TypeQ8_0, Data: emb},
			{Name: "output_norm.weight", Dims: []uint64{64}, Type: gguf.TypeF32, Data: gguf.EncodeF32(make([]float32, 64))}}
		if output {
			out, _ := gguf.QuantizeQ4_0(make([]float32, 64*8)) // 16 blocks of 18 bytes
			ts = append(ts, gguf.WriteTensor{Name: "output.weight", Dims: []uint64{64, 8}, Type: gguf.TypeQ4_0, Data: out})
		}
		var buf bytes.Buffer
		if err := gguf.Write(&buf, map[string]any{"general.architecture": "llama"}, ts); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n, ok := weightBytesPerToken(write("tied.gguf", false)); !ok || n != 16*34+256 {
		t.Errorf("tied: %d %v, want %d", n, ok, 16*34+256)
	}
	if n, ok := weightBytesPerToken(write("untied.gguf", true)); !ok || n != 16*18+256 {
		t.Errorf("untied: %d %v, want %d", n, ok, 16*18+256)
	}
	p := filepath.Join(dir, "x.onnx")
	os.WriteFile(p, []byte("not a gguf"), 0o644)
	if _, ok := weightBytesPerToken(p); ok {
		t.Error("a non-GGUF file has a figure")
	}
}
