package llama_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/tinygguf"
)

// microSpec is a tinygguf shape shrunk to a few hundred weights (for
// seeds and bad-file tests).
func microSpec(name string) tinygguf.Spec {
	s := tinygguf.Shapes[name]
	s.Dim, s.FFN, s.Heads, s.KVHeads, s.HeadDim, s.Context = 8, 16, 2, 1, 4, 16
	if s.Window > 0 {
		s.Window = 3
	}
	if s.RopeDim > 0 {
		s.RopeDim, s.OrigContext = 2, 8
	}
	return s
}

func microGGUF(t testing.TB, name string) []byte {
	t.Helper()
	b, err := tinygguf.Encode(microSpec(name), 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestArchitecturesBuild: each tinygguf architecture reads into the Block
// llama.cpp's graph implies and builds a graph with one GroupQueryAttention
// per layer carrying those attributes.
func TestArchitecturesBuild(t *testing.T) {
	for _, name := range []string{"qwen3-tiny", "gemma2-tiny", "mistral-tiny", "mistral-swa-tiny", "phi3-longrope-tiny"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Parse(microGGUF(t, name))
			if err != nil {
				t.Fatal(err)
			}
			w, err := llama.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			b := w.Config.Block
			switch name {
			case "qwen3-tiny":
				if !b.NeoxRope || !b.QKNorm || b.PostNorms || b.GELU || w.Output == nil || w.Config.HeadSize != 4 {
					t.Errorf("qwen3 block %+v, head size %d, classifier %v", b, w.Config.HeadSize, w.Output != nil)
				}
			case "gemma2-tiny":
				if !b.NeoxRope || b.QKNorm || !b.PostNorms || !b.GELU || b.EmbedScale == 0 || b.AttnSoftcap != 8 || b.FinalSoftcap != 4 ||
					b.SlidingWindow != 3 || len(b.Local) != 2 || !b.Local[0] || b.Local[1] || w.Output != nil {
					t.Errorf("gemma2 block %+v", b)
				}
			case "phi3-longrope-tiny":
				L := w.Layers[0]
				if !b.NeoxRope || b.RotaryDim != 2 || len(b.RopeFactors) != 1 || len(b.LongRopeLong) != 1 || b.RopeOrigContext != 8 ||
					math.Abs(b.RopeAttnFactor-1.19) > 1e-6 || L.QKV == nil || L.GateUp == nil || w.Output != nil {
					t.Errorf("phi3 block %+v, fused %v %v", b, L.QKV != nil, L.GateUp != nil)
				}
			case "mistral-tiny":
				if b.NeoxRope || b.QKNorm || b.SlidingWindow != 0 || w.Output == nil {
					t.Errorf("mistral block %+v", b)
				}
			case "mistral-swa-tiny": // the window on every layer
				if b.NeoxRope || b.QKNorm || b.SlidingWindow != 3 || b.Local != nil || w.Output == nil {
					t.Errorf("mistral block %+v", b)
				}
			}
			m, err := llama.Build(w)
			if err != nil {
				t.Fatal(err)
			}
			var gqa []*graph.Node
			for _, n := range m.Graph.Nodes {
				if n.OpType == "GroupQueryAttention" {
					gqa = append(gqa, n)
				}
			}
			if len(gqa) != 2 {
				t.Fatalf("%d GroupQueryAttention nodes for 2 layers", len(gqa))
			}
			for l, n := range gqa {
				win := n.AttrInt("local_window_size", -1)
				wantWin := int64(-1)
				if b.SlidingWindow > 0 && (b.Local == nil || b.Local[l]) {
					wantWin = int64(b.SlidingWindow)
				}
				if win != wantWin || n.AttrInt("rotary_interleaved", 0) == 1 == b.NeoxRope || n.AttrFloat("softcap", 0) != float32(b.AttnSoftcap) {
					t.Errorf("layer %d: window %d (want %d), interleaved %d, softcap %v", l, win, wantWin, n.AttrInt("rotary_interleaved", 0), n.AttrFloat("softcap", 0))
				}
			}
		})
	}
}

// TestGGUFRefusals: another architecture is refused by name; metadata that
// contradicts itself or the tensors is refused naming the key or the
// tensor; a tensor the graph would leave out is refused, not ignored.
func TestGGUFRefusals(t *testing.T) {
	base, err := gguf.Parse(microGGUF(t, "qwen3-tiny"))
	if err != nil {
		t.Fatal(err)
	}
	// rewrite re-encodes base with meta changed and tensors edited
	rewrite := func(meta map[string]any, edit func([]gguf.WriteTensor) []gguf.WriteTensor) []byte {
		m := map[string]any{}
		for _, k := range base.Keys {
			switch v := base.Meta[k].(type) {
			case uint64:
				m[k] = uint32(v)
			case float64:
				m[k] = float32(v)
			default:
				m[k] = v
			}
		}
		for k, v := range meta {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		var ts []gguf.WriteTensor
		for _, ti := range base.Tensors {
			v, err := base.Float32s(&ti)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: gguf.TypeF32, Data: gguf.EncodeF32(v)})
		}
		if edit != nil {
			ts = edit(ts)
		}
		var b bytes.Buffer
		if err := gguf.Write(&b, m, ts); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	for _, c := range []struct {
		name  string
		data  []byte
		kind  error
		words []string
	}{
		{"another architecture", rewrite(map[string]any{"general.architecture": "gpt2"}, nil), graph.ErrUnsupported, []string{`"gpt2"`, "qwen3"}},
		{"kv heads do not divide", rewrite(map[string]any{"qwen3.attention.head_count_kv": uint32(3)}, nil), llama.ErrFormat, []string{"qwen3.attention.head_count_kv"}},
		{"zero heads", rewrite(map[string]any{"qwen3.attention.head_count": uint32(0)}, nil), llama.ErrFormat, []string{"qwen3.attention.head_count"}},
		{"no key length, width not a multiple", rewrite(map[string]any{"qwen3.attention.key_length": nil, "qwen3.attention.value_length": nil, "qwen3.attention.head_count": uint32(3), "qwen3.attention.head_count_kv": uint32(1)}, nil), llama.ErrFormat, []string{"qwen3.embedding_length", "qwen3.attention.head_count"}},
		{"heads disagree with attn_q", rewrite(map[string]any{"qwen3.attention.head_count": uint32(4)}, nil), llama.ErrFormat, []string{"blk.0.attn_q.weight", "qwen3.attention.head_count"}},
		{"ffn disagrees", rewrite(map[string]any{"qwen3.feed_forward_length": uint32(24)}, nil), llama.ErrFormat, []string{"blk.0.ffn_gate.weight", "qwen3.feed_forward_length"}},
		{"missing q norm", rewrite(nil, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return drop(ts, "blk.1.attn_q_norm.weight")
		}), llama.ErrFormat, []string{"blk.1.attn_q_norm.weight"}},
		{"a tensor the graph leaves out", rewrite(nil, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
			return append(ts, gguf.WriteTensor{Name: "blk.0.attn_output.bias", Dims: []uint64{8}, Type: gguf.TypeF32, Data: gguf.EncodeF32(make([]float32, 8))})
		}), graph.ErrUnsupported, []string{"blk.0.attn_output.bias"}},
		{"rotary wider than the head", rewrite(map[string]any{"qwen3.rope.dimension_count": uint32(6)}, nil), llama.ErrFormat, []string{"qwen3.rope.dimension_count"}},
		{"array head counts", rewrite(map[string]any{"qwen3.attention.head_count": []any{uint32(2), uint32(2)}}, nil), llama.ErrFormat, []string{"qwen3.attention.head_count", "array"}},
		{"huge block count", rewrite(map[string]any{"qwen3.block_count": uint32(1 << 30)}, nil), gguf.ErrFormat, []string{"qwen3.block_count"}}, // the GGUF reader checks it against the blk.N tensors
		{"yarn scaling", rewrite(map[string]any{"qwen3.rope.scaling.type": "yarn"}, nil), graph.ErrUnsupported, []string{"qwen3.rope.scaling.type"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := formats.Decode(c.data, "m.gguf", formats.Options{})
			if err == nil || !errors.Is(err, c.kind) {
				t.Fatalf("err %v, want %v", err, c.kind)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: does not name %s", err, w)
				}
			}
		})
	}
}

func drop(ts []gguf.WriteTensor, name string) []gguf.WriteTensor {
	var out []gguf.WriteTensor
	for _, t := range ts {
		if t.Name != name {
			out = append(out, t)
		}
	}
	return out
}

// TestLongContextCapped: a context whose rotary tables would be too large
// (Gemma 3 4B's 131072 × 256 scaled down) reads, is refused when built
// whole, and builds when the load caps the context.
func TestLongContextCapped(t *testing.T) {
	s := microSpec("gemma2-tiny")
	s.HeadDim, s.Context = 8, 1<<22
	b, err := tinygguf.Encode(s, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llama.Build(w); !errors.Is(err, graph.ErrUnsupported) {
		t.Fatalf("the whole context built: %v", err)
	}
	m, err := formats.Decode(b, "m.gguf", formats.Options{ContextLength: 64})
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata["llama.context_length"] != "64" {
		t.Fatalf("context %s", m.Metadata["llama.context_length"])
	}
}
