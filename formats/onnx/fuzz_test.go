package onnx

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

// fuzzBound is what decoding n bytes may allocate under the fuzz
// targets' 1 MiB tensor limit: the graph's structs (a node of a few bytes
// becomes a struct of a hundred) and one tensor of the limit.
func fuzzBound(n int) uint64 { return allocguard.Bound(n, 64, 16<<20) }

// FuzzDecode: decoding arbitrary bytes as a model must not panic or
// allocate past fuzzBound, and a decoded model must survive validation
// without panicking. testdata/fuzz/FuzzDecode/hostile-* are issue #32's
// classes (TestHostileSeeds writes them).
func FuzzDecode(f *testing.F) {
	f.Add(Encode(tinyModel()))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m *graph.Model
		var err error
		allocguard.Check(t, "Decode", fuzzBound(len(b)), func() { m, err = Decode(b, Options{MaxTensorBytes: 1 << 20}) })
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
		var tt *graph.Tensor
		var err error
		allocguard.Check(t, "DecodeTensor", fuzzBound(len(b)), func() { tt, _, err = DecodeTensor(b) })
		if err == nil {
			if err := tt.Check(); err != nil {
				t.Fatalf("decoded an inconsistent tensor: %v", err)
			}
		}
	})
}
