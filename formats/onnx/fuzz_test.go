package onnx

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// FuzzDecode: decoding arbitrary bytes as a model must not panic, and a
// decoded model must survive validation without panicking.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(tinyModel()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b, Options{})
		if err == nil {
			_ = m.Validate()
			_, _ = m.Graph.TopoSort()
		}
	})
}

// FuzzDecodeTensor: arbitrary bytes as a TensorProto (.pb file).
func FuzzDecodeTensor(f *testing.F) {
	f.Add(EncodeTensor("x", graph.MustFromSlice([]int{2, 2}, []float32{1, 2, 3, 4})))
	f.Add(EncodeTensor("s", graph.MustFromSlice([]int{1}, []string{"a"})))
	f.Fuzz(func(t *testing.T, b []byte) {
		tt, _, err := DecodeTensor(b)
		if err == nil {
			if err := tt.Check(); err != nil {
				t.Fatalf("decoded an inconsistent tensor: %v", err)
			}
		}
	})
}
