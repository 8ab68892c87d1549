package llama_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/tinygguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// halfGGUFs writes two versions of the tiny model name to dir: its
// matrices in 16-bit type typ (F16 or BF16, rounded from the random
// float32 values), and the same values widened back to float32 (an F32
// file). Vectors stay F32 in both.
func halfGGUFs(t *testing.T, dir, name string, typ uint32) (half, wide string) {
	t.Helper()
	s := tinygguf.Shapes[name]
	s.Context = 64
	data, err := tinygguf.Encode(s, 300, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var hs, ws []gguf.WriteTensor
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		v, err := f.Float32s(ti)
		if err != nil {
			t.Fatal(err)
		}
		h, w := gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: gguf.EncodeF32(v)}, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32}
		if len(ti.Dims) == 2 {
			h.Type, h.Data = typ, make([]byte, 2*len(v))
			for j, x := range v {
				var b uint16
				if typ == gguf.TypeBF16 {
					b = uint16(graph.BF16FromFloat32(x))
					v[j] = graph.BF16(b).Float32()
				} else {
					b = uint16(graph.F16FromFloat32(x))
					v[j] = graph.F16(b).Float32()
				}
				binary.LittleEndian.PutUint16(h.Data[2*j:], b)
			}
		}
		w.Data = gguf.EncodeF32(v)
		hs, ws = append(hs, h), append(ws, w)
	}
	for _, p := range []struct {
		path string
		ts   []gguf.WriteTensor
	}{{filepath.Join(dir, name+"-half.gguf"), hs}, {filepath.Join(dir, name+"-wide.gguf"), ws}} {
		var buf bytes.Buffer
		if err := gguf.Write(&buf, f.Meta, p.ts); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, name+"-half.gguf"), filepath.Join(dir, name+"-wide.gguf")
}

// TestHalfMatricesAsWidened: a GGUF with F16 or BF16 matrices, kept as
// its 16-bit values, gives on the native backend the same logits, bit for
// bit, as the F32 file of those values widened (what the loader made of
// it before): at every position of a prompt (the GEMM path: more rows
// than the dot kernels take), and fed one token at a time (the dot path).
// (The F32 file is loaded as copies, SetF32Copies: read in place, its
// matrices are summed in another order, f32w's sixteen lanes.)
func TestHalfMatricesAsWidened(t *testing.T) {
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ref, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	dir := t.TempDir()
	seq := []int{1, 7, 3, 44, 12, 9, 30, 2, 17, 5, 21, 260, 8}
	for _, name := range []string{"mistral-tiny", "phi3-longrope-tiny", "qwen3-tiny"} {
		for _, typ := range []uint32{gguf.TypeF16, gguf.TypeBF16} {
			half, wide := halfGGUFs(t, dir, name, typ)
			var logits [2][]float32
			var steps [2][][]float32
			for i, path := range []string{half, wide} {
				// the widened file as the loader made it before: float32
				// copies multiplied by the packed GEMM (its F32 matrices are
				// now read in place, summed in 16 lanes: another order)
				was := llama.SetF32Copies(i == 1)
				m, err := eng.Open(ctx, path, &switchyard.OpenOptions{ContextLength: 32})
				llama.SetF32Copies(was)
				if err != nil {
					t.Fatal(err)
				}
				d, err := llm.NewDecoder(m)
				if err != nil {
					t.Fatal(err)
				}
				if logits[i], _, err = d.PromptLogits(ctx, seq); err != nil {
					t.Fatal(err)
				}
				s, err := d.NewSequence(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range seq[:4] {
					row, err := s.Feed(ctx, []int{id})
					if err != nil {
						t.Fatal(err)
					}
					steps[i] = append(steps[i], row)
				}
				_ = s.Close()
				_ = m.Close()
			}
			same := func(what string, a, b []float32) {
				if len(a) != len(b) || len(a) == 0 {
					t.Fatalf("%s %s %s: %d and %d logits", name, gguf.TypeName(typ), what, len(a), len(b))
				}
				for j := range a {
					if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
						t.Fatalf("%s %s %s: logit %d is %v, the widened file's %v", name, gguf.TypeName(typ), what, j, a[j], b[j])
					}
				}
			}
			same("prompt", logits[0], logits[1])
			// the reference kernels read the same 16-bit weights (summing
			// in float64: close, not the same bits)
			m, err := ref.Open(ctx, half, &switchyard.OpenOptions{ContextLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			rl, v, err := d.PromptLogits(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			_ = m.Close()
			for r := range seq {
				if e := maxRel(rl[r*v:(r+1)*v], logits[0][r*v:(r+1)*v]); !(e < 1e-4) {
					t.Errorf("%s %s: the reference backend's logits at %d are %.2g of the row's spread from native's", name, gguf.TypeName(typ), r, e)
				}
			}
			for p := range steps[0] {
				same("fed alone", steps[0][p], steps[1][p])
			}
		}
	}
}
