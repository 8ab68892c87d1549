package onnx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

func msg(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func varint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// sparseModel is a model of a few dozen bytes whose one sparse
// initializer "w" (one float at index 0) declares a dense shape of n.
func sparseModel(n uint64) []byte {
	values := varint(varint(nil, 1, 1), 2, uint64(graph.Float32))
	values = append(msg(nil, 8, []byte("w")), values...)
	values = msg(values, 9, []byte{0, 0, 0x80, 0x3f})
	indices := varint(varint(nil, 1, 1), 2, uint64(graph.Int64))
	indices = msg(indices, 9, make([]byte, 8))
	sp := msg(msg(nil, 1, values), 2, indices)
	sp = varint(sp, 3, n)
	g := msg(nil, 15, sp)
	g = msg(g, 12, msg(nil, 1, []byte("w")))
	m := varint(nil, 1, 8)
	m = msg(m, 7, g)
	return msg(m, 8, varint(nil, 2, 17))
}

// TestSparseDenseShapeLimited: a sparse initializer's dense shape is
// checked against the tensor limit before it is allocated (a 2^31 dense
// shape took 8 GiB at load).
func TestSparseDenseShapeLimited(t *testing.T) {
	data := sparseModel(1 << 26) // 256 MiB dense
	var err error
	allocguard.Check(t, "decoding a 256 MiB sparse initializer under a 64 MiB limit", 16<<20, func() {
		_, err = Decode(data, Options{MaxTensorBytes: 64 << 20})
	})
	if !errors.Is(err, graph.ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	m, err := Decode(sparseModel(16), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := m.Graph.Initializers["w"]; w == nil || w.Len() != 16 || w.Float64At(0) != 1 {
		t.Fatalf("small sparse initializer: %v", w)
	}
}

// TestExternalDataReadOnce: 400 initializers naming the same 256 KiB
// region of one external file read it once, not once each (4,000 such
// initializers read a file 4,000 times, 4 GB, before).
func TestExternalDataReadOnce(t *testing.T) {
	dir := t.TempDir()
	const n, size = 400, 256 << 10
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), float32Bytes(make([]float32, size/4)...), 0o644); err != nil {
		t.Fatal(err)
	}
	m := tinyModel()
	m.Graph.Initializers = nil
	g := encodeGraph(m.Graph)
	for i := range n {
		name := "w"
		if i > 0 {
			name = "w" + itoa(i)
		}
		g = appendMessage(g, 5, externalTensor(name, "w.bin", 0, size, size/4))
	}
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, appendMessage(Encode(m), 7, g), 0o644); err != nil {
		t.Fatal(err)
	}
	var got *graph.Model
	var err error
	allocguard.Check(t, "loading 400 initializers of one 256 KiB external region", 8*size+1<<20, func() { got, err = LoadFile(path) })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Graph.Initializers) != n {
		t.Fatalf("%d initializers, want %d", len(got.Graph.Initializers), n)
	}
}

func TestHostileSeeds(t *testing.T) {
	allocguard.Seeds(t, "FuzzDecode", map[string][]byte{"sparse-dense-2e31": sparseModel(1 << 31)})
}
