package llama_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/tinygguf"
	"github.com/switchyard-hal/switchyard/llm"
)

// kvGGUF is a small random GGUF whose head size (32) a q8_0 cache takes.
func kvGGUF(t testing.TB, name string) []byte { return kvGGUFContext(t, name, 64) }

// kvGGUFContext is kvGGUF declaring a context of n positions.
func kvGGUFContext(t testing.TB, name string, n int) []byte {
	t.Helper()
	s := tinygguf.Shapes[name]
	s.Dim, s.FFN, s.Heads, s.KVHeads, s.HeadDim, s.Context = 64, 96, 2, 1, 32, n
	if s.Window > 0 {
		s.Window = 5
	}
	b, err := tinygguf.Encode(s, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKVCacheGraph: a GGUF decoder's cache inputs and outputs are float16
// by default (float32 where the whole float32 cache is under 4 MiB),
// float32 and Q8_0 rows (uint8, 34 bytes a 32-value block) on request; a q8_0 cache is refused for a head size that is not a multiple
// of 32, an unknown type by name, and the ConcatCache form keeps float32.
func TestKVCacheGraph(t *testing.T) {
	data := kvGGUF(t, "mistral-tiny")
	for _, c := range []struct {
		kv    string
		dt    graph.DType
		width int64
	}{{"", graph.Float32, 32}, {"f16", graph.Float16, 32}, {"f32", graph.Float32, 32}, {"q8_0", graph.Uint8, 34}} {
		m, err := formats.Decode(data, "m.gguf", formats.Options{KVCache: c.kv})
		if err != nil {
			t.Fatalf("%q: %v", c.kv, err)
		}
		n := 0
		for _, vs := range [][]graph.ValueInfo{m.Graph.Inputs, m.Graph.Outputs} {
			for _, v := range vs {
				if strings.HasPrefix(v.Name, "past_key") || strings.HasPrefix(v.Name, "past_value") || strings.HasPrefix(v.Name, "present_") {
					n++
					if v.Type.DType != c.dt || v.Type.Shape[3].Value != c.width {
						t.Errorf("%q: %s is %v %v, want %v [.. %d]", c.kv, v.Name, v.Type.DType, v.Type.Shape, c.dt, c.width)
					}
				}
			}
		}
		if n != 8 {
			t.Errorf("%q: %d cache inputs and outputs, want 8", c.kv, n)
		}
	}
	// 32768 positions × 2 layers × keys and values × 32 float32s: 16 MiB
	big, err := formats.Decode(kvGGUFContext(t, "mistral-tiny", 32768), "m.gguf", formats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in := big.Graph.Inputs[2]; !strings.HasPrefix(in.Name, "past_") || in.Type.DType != graph.Float16 {
		t.Errorf("a 16 MiB cache by default: %s is %v, want float16", in.Name, in.Type.DType)
	}
	if _, err := formats.Decode(data, "m.gguf", formats.Options{KVCache: "q4_0"}); err == nil || !strings.Contains(err.Error(), "q4_0") {
		t.Errorf("KV cache q4_0: %v, want a refusal naming it", err)
	}
	if _, err := formats.Decode(microGGUF(t, "mistral-tiny"), "m.gguf", formats.Options{KVCache: "q8_0"}); !errors.Is(err, llama.ErrUnsupported) || !strings.Contains(err.Error(), "multiple of 32") {
		t.Errorf("q8_0 with head size 4: %v, want ErrUnsupported naming the head size", err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	w.Config.KVCache = llama.KVFloat16
	if _, err := llama.BuildWith(w, llama.ConcatCache); !errors.Is(err, llama.ErrUnsupported) {
		t.Errorf("ConcatCache with an f16 cache: %v, want ErrUnsupported", err)
	}
}

// TestKVCacheTypesDecode: on a random model (a sliding window too), the
// teacher-forced logits with a float16 and a Q8_0 cache stay near the
// float32 cache's (within 0.5% and 4% of each row's spread: the cache's
// rounding, nothing else), a token-by-token Sequence gives the prompt's
// logits of each position with every cache type (the in-place cache
// written one row a step), and the batched decoder's FeedBatch of two
// sequences gives each one's own logits.
func TestKVCacheTypesDecode(t *testing.T) {
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	for _, name := range []string{"mistral-tiny", "mistral-swa-tiny"} {
		data := kvGGUF(t, name)
		seq := []int{1, 7, 3, 44, 12, 9, 30, 2, 17, 5, 21}
		logits := map[string][]float32{}
		V := 0
		for _, kv := range []string{"f32", "f16", "q8_0"} {
			m, err := eng.OpenBytes(ctx, data, &switchyard.OpenOptions{Name: name + ".gguf", KVCache: kv, ContextLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			all, v, err := d.PromptLogits(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			logits[kv], V = all, v
			s, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range seq {
				row, err := s.Feed(ctx, []int{id})
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRel(row, all[i*v:(i+1)*v]); d > 1e-4 {
					t.Errorf("%s %s: position %d fed alone differs from the prompt's by %.2g of the row's spread", name, kv, i, d)
				}
			}
			_ = s.Close()
			_ = m.Close()

			bm, err := eng.OpenBytes(ctx, data, &switchyard.OpenOptions{Name: name + ".gguf", KVCache: kv, ContextLength: 32, Method: llama.BatchMethod})
			if err != nil {
				t.Fatal(err)
			}
			bd, err := llm.NewDecoder(bm)
			if err != nil {
				t.Fatal(err)
			}
			a, err := bd.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			b, err := bd.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Feed(ctx, seq[:4]); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				rows, err := bd.FeedBatch(ctx, []*llm.Sequence{a, b}, []int{seq[i], seq[4+i]})
				if err != nil {
					t.Fatal(err)
				}
				for j, p := range []int{i, 4 + i} {
					if d := maxRel(rows[j], all[p*v:(p+1)*v]); d > 1e-4 {
						t.Errorf("%s %s batched: sequence %d position %d differs from the prompt's by %.2g", name, kv, j, p, d)
					}
				}
			}
			_ = a.Close()
			_ = b.Close()
			_ = bm.Close()
		}
		for kv, bound := range map[string]float64{"f16": 0.005, "q8_0": 0.04} {
			worst := 0.0
			for r := 0; r < len(seq); r++ {
				worst = max(worst, maxRel(logits[kv][r*V:(r+1)*V], logits["f32"][r*V:(r+1)*V]))
			}
			t.Logf("%s: %s cache against f32: %.2g of a row's spread", name, kv, worst)
			if !(worst <= bound) {
				t.Errorf("%s: the %s cache's logits are %.2g of a row's spread from the f32 cache's (at most %v)", name, kv, worst, bound)
			}
			if worst == 0 {
				t.Errorf("%s: the %s cache's logits are the f32 cache's exactly: not a %s cache", name, kv, kv)
			}
		}
	}
}

// maxRel is max |a − b| over b's spread (max − min).
func maxRel(a, b []float32) float64 {
	d, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for i := range b {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
		lo, hi = math.Min(lo, float64(b[i])), math.Max(hi, float64(b[i]))
	}
	return d / (hi - lo)
}
