package gguf_test

import (
	"bytes"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// TestNoTensorsNoPadding: a file without tensors may end right after its
// metadata, unpadded (llama.cpp's vocabulary-only GGUFs do); one with a
// tensor may not stop short of its data.
func TestNoTensorsNoPadding(t *testing.T) {
	var b bytes.Buffer
	if err := gguf.Write(&b, map[string]any{"general.architecture": "llama", "zzz": "end"}, nil); err != nil {
		t.Fatal(err)
	}
	data := bytes.TrimRight(b.Bytes(), "\x00")
	if len(data)%32 == 0 {
		t.Fatalf("the metadata ends on the alignment (%d bytes): the test needs an unaligned end", len(data))
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatalf("unpadded tensor-less file: %v", err)
	}
	if s, _ := f.String("zzz"); s != "end" || len(f.Tensors) != 0 {
		t.Fatalf("read %q, %d tensors", s, len(f.Tensors))
	}
	b.Reset()
	if err := gguf.Write(&b, map[string]any{"zzz": "end"}, []gguf.WriteTensor{{Name: "t", Dims: []uint64{1}, Type: gguf.TypeF32, Data: gguf.EncodeF32([]float32{1})}}); err != nil {
		t.Fatal(err)
	}
	if _, err := gguf.Parse(b.Bytes()[:b.Len()-32]); err == nil {
		t.Fatal("a file cut inside its tensor data was read")
	}
}
