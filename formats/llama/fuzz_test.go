package llama_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
)

// tinyLlama2c is a valid legacy llama2.c checkpoint of a 2-layer model
// with width 4 (or, with q80, the version-2 int8 export).
func tinyLlama2c(q80 bool) []byte {
	const D, H, L, heads, kv, V, S = 4, 8, 2, 2, 1, 6, 4
	var b bytes.Buffer
	w := func(v ...any) {
		for _, x := range v {
			binary.Write(&b, binary.LittleEndian, x)
		}
	}
	kvd := kv * D / heads
	if !q80 {
		w(int32(D), int32(H), int32(L), int32(heads), int32(kv), int32(V), int32(S))
		n := V*D + L*D + L*D*D + 2*L*kvd*D + L*D*D + L*D + 3*L*H*D + D + S*D/heads
		for i := 0; i < n; i++ {
			w(float32(math.Sin(float64(i))))
		}
		return b.Bytes()
	}
	w([]byte("24ka"), int32(2), int32(D), int32(H), int32(L), int32(heads), int32(kv), int32(V), int32(S), uint8(1), int32(4))
	b.Write(make([]byte, 256-b.Len()))
	for i := 0; i < 2*L*D+D; i++ {
		w(float32(1))
	}
	per := [][2]int{{V * D, 1}, {D * D, L}, {kvd * D, L}, {kvd * D, L}, {D * D, L}, {H * D, L}, {D * H, L}, {H * D, L}}
	for _, p := range per {
		for r := 0; r < p[1]; r++ {
			for i := 0; i < p[0]; i++ {
				w(int8(i%7 - 3))
			}
			for i := 0; i < p[0]/4; i++ {
				w(float32(0.01))
			}
		}
	}
	return b.Bytes()
}

// FuzzDecode: decoding any bytes as a llama2.c checkpoint or a GGUF file
// builds a graph or returns an error, never panics or allocates without
// bound.
func FuzzDecode(f *testing.F) {
	f.Add(tinyLlama2c(false), false)
	f.Add(tinyLlama2c(true), false)
	var buf bytes.Buffer
	q8, _ := gguf.QuantizeQ8_0(make([]float32, 32*4))
	gguf.Write(&buf, map[string]any{"general.architecture": "llama", "llama.embedding_length": uint32(32), "llama.block_count": uint32(0),
		"llama.feed_forward_length": uint32(32), "llama.attention.head_count": uint32(2), "llama.context_length": uint32(8)},
		[]gguf.WriteTensor{{Name: "token_embd.weight", Dims: []uint64{32, 4}, Type: gguf.TypeQ8_0, Data: q8},
			{Name: "output_norm.weight", Dims: []uint64{32}, Type: gguf.TypeF32, Data: gguf.EncodeF32(make([]float32, 32))}})
	f.Add(buf.Bytes(), true)
	for _, name := range []string{"qwen3-tiny", "gemma2-tiny", "mistral-tiny", "phi3-longrope-tiny"} {
		f.Add(microGGUF(f, name), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, asGGUF bool) {
		name := "m.bin"
		if asGGUF {
			name = "m.gguf"
		}
		// A long context makes large (bounded) rotary tables: correct but
		// slow to fuzz through, so those inputs are left out here.
		if !gguf.IsGGUF(data) {
			off := 24
			if len(data) >= 4 && string(data[:4]) == "24ka" {
				off = 32
			}
			if len(data) >= off+4 && binary.LittleEndian.Uint32(data[off:]) > 4096 {
				return
			}
		} else if f, err := gguf.Parse(data); err == nil {
			arch, _ := f.String("general.architecture")
			if n, ok := f.Uint(arch + ".context_length"); !ok || n > 4096 {
				return
			}
		}
		// weights are copied once and transposed once; the rest is
		// bounded by the tensor limit
		allocguard.Check(t, "Decode", allocguard.Bound(len(data), 16, 64<<20), func() {
			formats.Decode(data, name, formats.Options{MaxTensorBytes: 1 << 20})
		})
	})
}

func TestTinyCheckpointsBuild(t *testing.T) {
	for _, q := range []bool{false, true} {
		if _, err := formats.Decode(tinyLlama2c(q), "m.bin", formats.Options{}); err != nil {
			t.Errorf("q80 %v: %v", q, err)
		}
	}
}
