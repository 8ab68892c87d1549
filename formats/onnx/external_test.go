package onnx

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// externalTensor builds a TensorProto whose data lives in an external file.
func externalTensor(name, location string, offset, length int, dims ...int64) []byte {
	var b []byte
	for _, d := range dims {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(graph.Float32))
	b = appendString(b, 8, name)
	entry := func(k, v string) []byte { return appendString(appendString(nil, 1, k), 2, v) }
	b = appendMessage(b, 13, entry("location", location))
	b = appendMessage(b, 13, entry("offset", itoa(offset)))
	b = appendMessage(b, 13, entry("length", itoa(length)))
	b = protowire.AppendTag(b, 14, protowire.VarintType)
	return protowire.AppendVarint(b, 1)
}

func itoa(v int) string {
	s := ""
	if v == 0 {
		return "0"
	}
	for ; v > 0; v /= 10 {
		s = string(rune('0'+v%10)) + s
	}
	return s
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 8+12)
	for i, v := range []float32{1.5, -2, 4} {
		u := math.Float32bits(v)
		for k := 0; k < 4; k++ {
			data[8+4*i+k] = byte(u >> (8 * k))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "weights.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	m := tinyModel()
	m.Graph.Initializers = nil
	b := Encode(m)
	g := encodeGraph(m.Graph)
	g = appendMessage(g, 5, externalTensor("w", "weights.bin", 8, 12, 3))
	b = appendMessage(b, 7, g)
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := graph.Data[float32](got.Graph.Initializers["w"])
	if len(w) != 3 || w[0] != 1.5 || w[2] != 4 {
		t.Fatalf("w = %v", w)
	}
	// a length that disagrees with the shape, and data past the file's end
	for _, bad := range [][]byte{
		externalTensor("w", "weights.bin", 8, 16, 3),
		externalTensor("w", "weights.bin", 16, 12, 3),
	} {
		g := appendMessage(encodeGraph(m.Graph), 5, bad)
		if _, err := Decode(appendMessage(Encode(m), 7, g), Options{BaseDir: dir}); err == nil {
			t.Error("bad external data accepted")
		}
	}
	// from bytes, external data cannot be resolved: a clear error
	if _, err := Decode(b, Options{}); err == nil || !strings.Contains(err.Error(), "external data") {
		t.Errorf("got %v", err)
	}
}
