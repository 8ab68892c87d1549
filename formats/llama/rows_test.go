package llama_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestLogitsRowsDefault: the decoder graph's logits_rows input is
// optional, its default 0 (every row): a caller that runs the graph
// directly and leaves it out gets every position's logits, bit for bit
// those of logits_rows 0, and logits_rows 1 gives the last of them.
func TestLogitsRowsDefault(t *testing.T) {
	p := filepath.Join(shared.Path(t, "testdata/llm"), "stories260K", "stories260K_f32.gguf")
	ctx := context.Background()
	m, err := switchyard.Open(ctx, p, &switchyard.OpenOptions{Backends: []string{"cpu"}, KVCache: "f32"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	optional := false
	for _, in := range m.Inputs() {
		if in.Name == llama.LogitsRowsInput {
			optional = in.Optional
		} else if in.Optional {
			t.Errorf("input %q is optional; only %s has a default", in.Name, llama.LogitsRowsInput)
		}
	}
	if !optional {
		t.Fatalf("%s is not an optional input (inputs %v)", llama.LogitsRowsInput, m.Inputs())
	}
	ids := []int64{1, 403, 407, 261, 378, 16}
	run := func(rows []int64) []float32 {
		t.Helper()
		feeds := switchyard.Tensors{}
		for _, in := range m.Inputs() {
			switch {
			case in.Name == "input_ids":
				feeds[in.Name], err = switchyard.NewTensor([]int{1, len(ids)}, ids)
			case in.Name == llama.PastLengthInput:
				feeds[in.Name], err = switchyard.NewTensor([]int{1}, []int32{0})
			case in.Name == llama.LogitsRowsInput:
				if rows != nil {
					feeds[in.Name], err = switchyard.NewTensor([]int{1}, rows)
				}
			default: // a key/value cache
				feeds[in.Name], err = switchyard.Zeros(in.DType, in.Shape)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		out, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("logits_rows %v: %v", rows, err)
		}
		l := out["logits"]
		v, err := switchyard.Values[float32](l)
		if err != nil {
			t.Fatal(err)
		}
		want := len(ids)
		if rows != nil && rows[0] > 0 {
			want = int(rows[0])
		}
		if l.Shape()[1] != want {
			t.Fatalf("logits_rows %v: logits %v, want %d rows", rows, l.Shape(), want)
		}
		return append([]float32(nil), v...)
	}
	omitted, zero, one := run(nil), run([]int64{0}), run([]int64{1})
	vocab := len(zero) / len(ids)
	if len(omitted) != len(zero) || len(one) != vocab {
		t.Fatalf("%d logits omitted, %d with 0, %d with 1; vocab %d", len(omitted), len(zero), len(one), vocab)
	}
	for i := range zero {
		if math.Float32bits(omitted[i]) != math.Float32bits(zero[i]) {
			t.Fatalf("logit %d: %v without logits_rows, %v with 0", i, omitted[i], zero[i])
		}
	}
	last := zero[(len(ids)-1)*vocab:]
	for i := range one {
		if math.Float32bits(one[i]) != math.Float32bits(last[i]) {
			t.Fatalf("logit %d of the last row: %v with logits_rows 1, %v with every row", i, one[i], last[i])
		}
	}
}
