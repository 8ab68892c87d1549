// Package tinygguf writes small GGUF decoders with random weights in the
// layout llama.cpp's converter (convert_hf_to_gguf.py) gives each
// architecture: its tensor names, its metadata keys with their GGUF
// types, and a real tokenizer copied from another GGUF file (every
// tokenizer.* key). Tests run them through Switchyard and llama.cpp and
// compare tokens and logits; the weights say nothing about text.
//
// It complements the llama.cpp peer kit's make-random-gguf.py (llama,
// qwen2, phi3 and gemma3 shapes) with the architectures that script
// does not write: qwen3, gemma2 and Mistral (a llama without tied
// embeddings, with or without Mistral 7B v0.1's sliding window on every
// layer). llama.cpp's llama graph has no sliding window, so the windowed
// Mistral is also written as its twin for llama.cpp (GraniteSWA): the
// same weights as architecture granite_swa, whose graph is the llama
// block with a window on the layers a pattern names once its multipliers
// are 1 and its attention sinks are off.
package tinygguf

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/gguf"
)

// Spec is a model to write.
type Spec struct {
	Arch                      string // general.architecture: llama, qwen3, gemma2 or phi3
	Name                      string
	Dim, Layers, FFN          int
	Heads, KVHeads, HeadDim   int
	Context                   int
	RopeBase                  float64 // 0: no rope.freq_base key (llama.cpp's default 10000)
	Eps                       float64
	Tied                      bool // no output.weight
	Window                    int  // attention.sliding_window (gemma2)
	AttnSoftcap, FinalSoftcap float64
	// phi3: the rotated dims of a head, LongRoPE's original context
	// (the long factors apply beyond it) and attention factor
	RopeDim, OrigContext int
	AttnFactor           float64
	Seed                 uint64
}

// Shapes are the tiny specs the tests use, by name.
var Shapes = map[string]Spec{
	// Qwen3-8B-like: untied, head size 128 on a 256-wide model (the
	// queries 512 wide: key_length is not dim/heads), q/k norms
	"qwen3-tiny": {Arch: "qwen3", Dim: 256, Layers: 2, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 128, Context: 40960,
		RopeBase: 1e6, Eps: 1e-6},
	// Gemma-2-like: layer 0 local (window 8), layer 1 global; soft-capping
	// stronger than Gemma 2's (50 and 30) so that random weights feel it
	"gemma2-tiny": {Arch: "gemma2", Dim: 256, Layers: 2, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64, Context: 8192,
		Eps: 1e-6, Tied: true, Window: 8, AttnSoftcap: 8, FinalSoftcap: 4},
	// Mistral-7B-like as llama.cpp's converter writes it: architecture
	// llama, untied classifier, rope base 1e6, no sliding-window key
	"mistral-tiny": {Arch: "llama", Name: "mistral", Dim: 256, Layers: 2, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64, Context: 32768,
		RopeBase: 1e6, Eps: 1e-5},
	// Mistral-7B-v0.1-like: the same, with a sliding window on every
	// layer (llama.attention.sliding_window; 4096 in the real model, 8
	// here so that 32- and 64-position runs feel it)
	"mistral-swa-tiny": {Arch: "llama", Name: "mistral sliding window", Dim: 256, Layers: 2, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64,
		Context: 32768, RopeBase: 1e6, Eps: 1e-5, Window: 8},
	// SmolLM2-135M-like: architecture llama, tied embeddings, rope base
	// 1e5, 9 query heads sharing 3 key/value heads (groups of 3) on a
	// 576-wide model (two layers, a narrower feed-forward)
	"smollm2-tiny": {Arch: "llama", Name: "smollm2", Dim: 576, Layers: 2, FFN: 512, Heads: 9, KVHeads: 3, HeadDim: 64, Context: 8192,
		RopeBase: 1e5, Eps: 1e-5, Tied: true},
	// Phi-3-like with an original context of 16, so that runs of 32 and
	// 64 positions take LongRoPE's long factors (the peer kit's phi3 shape
	// stays on the short ones), a quarter of each head unrotated
	"phi3-longrope-tiny": {Arch: "phi3", Name: "phi3 long rope", Dim: 256, Layers: 2, FFN: 512, Heads: 4, KVHeads: 2, HeadDim: 64,
		Context: 4096, RopeBase: 10000, Eps: 1e-5, Tied: true, RopeDim: 48, OrigContext: 16, AttnFactor: 1.19},
}

type tensor struct {
	name  string
	dims  []uint64 // innermost first
	kind  string   // mat, norm, bias
	fanIn int
}

func (s *Spec) tensors(vocab int) []tensor {
	d, q, kv, f := s.Dim, s.Heads*s.HeadDim, s.KVHeads*s.HeadDim, s.FFN
	u := func(v ...int) []uint64 {
		out := make([]uint64, len(v))
		for i, x := range v {
			out[i] = uint64(x)
		}
		return out
	}
	embFan := d
	if s.Arch == "gemma2" {
		embFan = 16 * d // Gemma multiplies the embeddings by √dim: keep them small
	}
	ts := []tensor{{"token_embd.weight", u(d, vocab), "mat", embFan}}
	if s.Arch == "phi3" {
		ts = append(ts, tensor{"rope_factors_long.weight", u(s.RopeDim / 2), "long", 0}, tensor{"rope_factors_short.weight", u(s.RopeDim / 2), "short", 0})
	}
	for i := 0; i < s.Layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, tensor{b + "attn_norm.weight", u(d), "norm", 0})
		if s.Arch == "phi3" {
			ts = append(ts, tensor{b + "attn_qkv.weight", u(d, q+2*kv), "mat", d})
		} else {
			ts = append(ts, tensor{b + "attn_q.weight", u(d, q), "mat", d}, tensor{b + "attn_k.weight", u(d, kv), "mat", d},
				tensor{b + "attn_v.weight", u(d, kv), "mat", d})
		}
		if s.Arch == "qwen3" {
			ts = append(ts, tensor{b + "attn_q_norm.weight", u(s.HeadDim), "norm", 0}, tensor{b + "attn_k_norm.weight", u(s.HeadDim), "norm", 0})
		}
		ts = append(ts, tensor{b + "attn_output.weight", u(q, d), "mat", q})
		if s.Arch == "granite_swa" { // one per head, switched off
			ts = append(ts, tensor{b + "attn_sinks.weight", u(s.Heads), "sink", 0})
		}
		if s.Arch == "gemma2" {
			ts = append(ts, tensor{b + "post_attention_norm.weight", u(d), "norm", 0})
		}
		ts = append(ts, tensor{b + "ffn_norm.weight", u(d), "norm", 0})
		if s.Arch == "phi3" { // gate and up fused, the gate's rows first
			ts = append(ts, tensor{b + "ffn_up.weight", u(d, 2*f), "mat", d})
		} else {
			ts = append(ts, tensor{b + "ffn_gate.weight", u(d, f), "mat", d}, tensor{b + "ffn_up.weight", u(d, f), "mat", d})
		}
		ts = append(ts, tensor{b + "ffn_down.weight", u(f, d), "mat", f})
		if s.Arch == "gemma2" {
			ts = append(ts, tensor{b + "post_ffw_norm.weight", u(d), "norm", 0})
		}
	}
	ts = append(ts, tensor{"output_norm.weight", u(d), "norm", 0})
	if !s.Tied {
		ts = append(ts, tensor{"output.weight", u(d, vocab), "mat", d})
	}
	return ts
}

func (s *Spec) metadata(vocab int) map[string]any {
	a := s.Arch
	name := s.Name
	if name == "" {
		name = a
	}
	m := map[string]any{
		"general.architecture": a, "general.name": "random " + name + " (switchyard tinygguf)", "general.file_type": uint32(0),
		a + ".context_length": uint32(s.Context), a + ".embedding_length": uint32(s.Dim), a + ".block_count": uint32(s.Layers),
		a + ".feed_forward_length": uint32(s.FFN), a + ".attention.head_count": uint32(s.Heads),
		a + ".attention.head_count_kv": uint32(s.KVHeads), a + ".attention.layer_norm_rms_epsilon": float32(s.Eps),
	}
	if s.RopeBase > 0 {
		m[a+".rope.freq_base"] = float32(s.RopeBase)
	}
	switch a {
	case "llama", "granite_swa":
		m[a+".rope.dimension_count"] = uint32(s.HeadDim)
		m[a+".vocab_size"] = uint32(vocab)
		if s.Window > 0 {
			m[a+".attention.sliding_window"] = uint32(s.Window)
		}
		if a == "granite_swa" {
			m[a+".logit_scale"] = float32(1)
			pattern := make([]bool, s.Layers) // every layer windowed
			for i := range pattern {
				pattern[i] = true
			}
			m[a+".attention.sliding_window_pattern"] = pattern
		}
	case "qwen3":
		m[a+".attention.key_length"] = uint32(s.HeadDim)
		m[a+".attention.value_length"] = uint32(s.HeadDim)
	case "phi3":
		m[a+".rope.dimension_count"] = uint32(s.RopeDim)
		m[a+".rope.scaling.original_context_length"] = uint32(s.OrigContext)
		m[a+".rope.scaling.attn_factor"] = float32(s.AttnFactor)
	case "gemma2":
		m[a+".attention.key_length"] = uint32(s.HeadDim)
		m[a+".attention.value_length"] = uint32(s.HeadDim)
		m[a+".attn_logit_softcapping"] = float32(s.AttnSoftcap)
		m[a+".final_logit_softcapping"] = float32(s.FinalSoftcap)
		m[a+".attention.sliding_window"] = uint32(s.Window)
	}
	return m
}

// GraniteSWA is the twin of s, a llama with a sliding window on every
// layer, that llama.cpp runs with the window (its llama graph ignores
// the key): architecture granite_swa, whose graph is the llama block with
// logit, residual, embedding and attention multipliers (logit_scale 1,
// the others absent), per-head attention sinks (written as -10⁴: off)
// and a window on each layer sliding_window_pattern marks (all). The
// other tensors are s's, drawn from the same streams.
func GraniteSWA(s Spec) (Spec, error) {
	if s.Arch != "llama" || s.Window <= 0 {
		return Spec{}, fmt.Errorf("tinygguf: the granite_swa twin is of a llama with a sliding window (%s, window %d)", s.Arch, s.Window)
	}
	s.Arch = "granite_swa"
	return s, nil
}

// Write writes the model to path at float32 (1-D tensors and matrices),
// with the tokenizer of the GGUF file vocabPath.
func Write(path string, s Spec, vocabPath string) error {
	vf, err := gguf.ReadFile(vocabPath)
	if err != nil {
		return err
	}
	toks, _ := vf.Strings("tokenizer.ggml.tokens")
	if len(toks) == 0 {
		return fmt.Errorf("tinygguf: %s has no tokenizer.ggml.tokens", vocabPath)
	}
	tok := map[string]any{}
	for _, k := range vf.Keys {
		if strings.HasPrefix(k, "tokenizer.") {
			tok[k] = narrow(vf.Meta[k])
		}
	}
	b, err := Encode(s, len(toks), tok)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Encode is the model as GGUF bytes with a vocabulary of vocab tokens and
// the tokenizer.* keys of tokenizer (nil: none, for tests of the weights
// alone).
func Encode(s Spec, vocab int, tokenizer map[string]any) ([]byte, error) {
	switch s.Arch {
	case "llama", "qwen3", "gemma2", "phi3", "granite_swa":
	default:
		return nil, fmt.Errorf("tinygguf: architecture %q is not written", s.Arch)
	}
	meta := s.metadata(vocab)
	for k, v := range tokenizer {
		meta[k] = v
	}
	var ts []gguf.WriteTensor
	for _, t := range s.tensors(vocab) {
		ts = append(ts, gguf.WriteTensor{Name: t.name, Dims: t.dims, Type: gguf.TypeF32, Data: values(t, s.Seed)})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, meta, ts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// narrow gives a metadata value read by package gguf (integers widened
// to 64 bits, floats to float64) the type llama.cpp's tokenizer keys
// have: uint32 ids, int32 token types, float32 scores.
func narrow(v any) any {
	switch x := v.(type) {
	case uint64:
		return uint32(x)
	case int64:
		return int32(x)
	case float64:
		return float32(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = narrow(e)
		}
		return out
	}
	return v
}

// values draws a tensor: matrices uniform in (-A, A), A the power of two
// nearest √(3/fan_in) (unit-scale activations); norms 1 + U(-1/16, 1/16);
// each tensor from its own stream seeded by the seed and its name. Every
// value is a float16 value (as the peer kit's make-random-gguf.py draws
// them): the F32 file and llama.cpp's F16 conversion of it hold the same
// weights, so the two differ only by how they are computed.
func values(t tensor, seed uint64) []byte {
	h := fnv.New64a()
	h.Write([]byte(t.name))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	n := 1
	for _, d := range t.dims {
		n *= int(d)
	}
	v := make([]float32, n)
	switch t.kind {
	case "mat":
		a := math.Exp2(math.Round(math.Log2(math.Sqrt(3 / float64(t.fanIn)))))
		for i := range v {
			v[i] = float32((2*rng.Float64() - 1) * a)
		}
	case "sink": // attention sinks off: exp(-10⁴ − max) is 0
		for i := range v {
			v[i] = -1e4
		}
	case "norm":
		for i := range v {
			v[i] = float32(1 + (2*rng.Float64()-1)/16)
		}
	case "long", "short": // LongRoPE-like: near 1 (short), growing with the pair (long)
		for i := range v {
			x := float64(i) / float64(max(1, n-1))
			if t.kind == "long" {
				v[i] = float32(1 + 40*x*x)
			} else {
				v[i] = float32(1 + 0.2*x*x*x)
			}
		}
	}
	for i, x := range v {
		v[i] = graph.F16FromFloat32(x).Float32()
	}
	return gguf.EncodeF32(v)
}
