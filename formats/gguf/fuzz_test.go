package gguf

import (
	"bytes"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

// FuzzParse: Parse of any bytes returns a file or an error, never panics,
// allocates at most parseBound of the input's size, and every tensor of a
// file it accepts can be read. testdata/fuzz/FuzzParse/hostile-* are
// issue #32's classes (TestHostileSeeds writes them).
func FuzzParse(f *testing.F) {
	seed := func(meta map[string]any, ts []WriteTensor) {
		var buf bytes.Buffer
		if err := Write(&buf, meta, ts); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	q8, _ := QuantizeQ8_0(make([]float32, 64))
	q4, _ := QuantizeQ4_0(make([]float32, 32))
	seed(map[string]any{"general.architecture": "llama", "llama.block_count": uint32(1)},
		[]WriteTensor{{Name: "a", Dims: []uint64{2}, Type: TypeF32, Data: EncodeF32([]float32{1, 2})}})
	seed(map[string]any{"general.alignment": uint32(64), "t": []any{"x", "y"}, "n": []any{float32(1)}},
		[]WriteTensor{{Name: "q8", Dims: []uint64{32, 2}, Type: TypeQ8_0, Data: q8}, {Name: "q4", Dims: []uint64{32}, Type: TypeQ4_0, Data: q4}})
	seed(map[string]any{"h": uint64(7)}, []WriteTensor{{Name: "h", Dims: []uint64{1, 1}, Type: TypeF16, Data: []byte{0, 0x3c}}})
	f.Add([]byte("GGUF\x02\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var file *File
		var err error
		allocguard.Check(t, "Parse", parseBound(len(data)), func() { file, err = Parse(data) })
		if err != nil {
			return
		}
		for i := range file.Tensors {
			ti := &file.Tensors[i]
			if ti.Elements() > 1<<20 {
				continue
			}
			v, err := file.Float32s(ti)
			if err == nil && uint64(len(v)) != ti.Elements() {
				t.Fatalf("%s: %d values for %d elements", ti.Name, len(v), ti.Elements())
			}
		}
	})
}
