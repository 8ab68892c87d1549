package switchyard_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// storiesGGUF returns stories260K_f32.gguf re-encoded with its matrices of
// whole 32-blocks in Q8_0 (quantized) or left float32.
func storiesGGUF(t *testing.T, quantize bool) []byte {
	t.Helper()
	f, err := gguf.ReadFile(filepath.Join(shared.Path(t, "testdata/llm/stories260K"), "stories260K_f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{}
	for _, k := range f.Keys {
		meta[k] = f.Meta[k]
	}
	var ts []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		v, err := f.Float32s(ti)
		if err != nil {
			t.Fatal(err)
		}
		wt := gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: gguf.EncodeF32(v)}
		if quantize && len(ti.Dims) == 2 && ti.Dims[0]%32 == 0 {
			if wt.Data, err = gguf.QuantizeQ8_0(v); err != nil {
				t.Fatal(err)
			}
			wt.Type = gguf.TypeQ8_0
		}
		ts = append(ts, wt)
	}
	var b bytes.Buffer
	if err := gguf.Write(&b, meta, ts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGGUFDefaultPrecision: through the Go API, as through `generate`, a
// GGUF decoder with quantized weights computes its products on int8
// activations unless the caller asks for float32, and the plan says so; a
// float32 GGUF and an explicit PrecisionFloat32 stay float32.
func TestGGUFDefaultPrecision(t *testing.T) {
	ctx := context.Background()
	int8Parts := func(data []byte, p switchyard.Precision) int {
		t.Helper()
		m, err := switchyard.OpenBytes(ctx, data, &switchyard.OpenOptions{Backends: []string{"native"}, Precision: p})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		n := 0
		for _, part := range m.Plan().Partitions {
			if part.Precision == string(switchyard.PrecisionInt8) {
				n++
			}
		}
		return n
	}
	q8, f32 := storiesGGUF(t, true), storiesGGUF(t, false)
	if n := int8Parts(q8, ""); n == 0 {
		t.Errorf("quantized GGUF, no precision chosen: no partition computes in int8")
	}
	if n := int8Parts(q8, switchyard.PrecisionFloat32); n != 0 {
		t.Errorf("quantized GGUF with PrecisionFloat32: %d partitions in int8", n)
	}
	if n := int8Parts(f32, ""); n != 0 {
		t.Errorf("float32 GGUF: %d partitions in int8", n)
	}
}
