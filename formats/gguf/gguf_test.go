package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

const storiesDir = "testdata/llm/stories260K/"

// TestStories260K reads the real stories260K GGUF: its metadata, its
// tensor directory, and its float32 weights, which must equal the llama2.c
// checkpoint's (the same model in the other format) value for value.
func TestStories260K(t *testing.T) {
	f, err := ReadFile(shared.Path(t, storiesDir+"stories260K_f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 {
		t.Errorf("version %d, want 3", f.Version)
	}
	if a, _ := f.String("general.architecture"); a != "llama" {
		t.Errorf("architecture %q", a)
	}
	for k, want := range map[string]uint64{
		"llama.context_length": 512, "llama.embedding_length": 64, "llama.block_count": 5,
		"llama.feed_forward_length": 172, "llama.attention.head_count": 8, "llama.attention.head_count_kv": 4,
		"llama.rope.dimension_count": 8, "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
	} {
		if v, ok := f.Uint(k); !ok || v != want {
			t.Errorf("%s = %v (%v), want %d", k, f.Meta[k], ok, want)
		}
	}
	if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || math.Abs(eps-1e-5) > 1e-9 {
		t.Errorf("rms epsilon %v", eps)
	}
	toks, _ := f.Meta["tokenizer.ggml.tokens"].([]string)
	scores, _ := f.Meta["tokenizer.ggml.scores"].([]float32)
	if len(toks) != 512 || len(scores) != 512 || toks[1] != "<s>" || toks[3] != "<0x00>" {
		t.Fatalf("tokens: %d, scores %d, first %v", len(toks), len(scores), toks[:4])
	}
	if len(f.Tensors) != 2+5*9 {
		t.Fatalf("%d tensors, want 47", len(f.Tensors))
	}
	if _, ok := f.Tensor("output.weight"); ok {
		t.Error("stories260K shares its classifier with the embedding; no output.weight expected")
	}

	// The llama2.c checkpoint: 7 int32 header, then float32 weights in
	// llama2.c's order (embedding, attention norms, wq, wk, wv, wo, ffn
	// norms, w1, w2, w3, final norm).
	bin, err := os.ReadFile(shared.Path(t, storiesDir+"stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	const d, h, L, kv, V = 64, 172, 5, 32, 512
	off := 28
	take := func(n int) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(bin[off+4*i:]))
		}
		off += 4 * n
		return out
	}
	type part struct {
		name string
		n    int
		dims []uint64
	}
	order := []part{{"token_embd.weight", V * d, []uint64{d, V}}}
	perLayer := func(name string, n int, dims ...uint64) {
		for l := 0; l < L; l++ {
			order = append(order, part{"blk." + string(rune('0'+l)) + "." + name, n, dims})
		}
	}
	perLayer("attn_norm.weight", d, d)
	perLayer("attn_q.weight", d*d, d, d)
	perLayer("attn_k.weight", d*kv, d, kv)
	perLayer("attn_v.weight", d*kv, d, kv)
	perLayer("attn_output.weight", d*d, d, d)
	perLayer("ffn_norm.weight", d, d)
	perLayer("ffn_gate.weight", h*d, d, h)
	perLayer("ffn_down.weight", d*h, h, d)
	perLayer("ffn_up.weight", h*d, d, h)
	order = append(order, part{"output_norm.weight", d, []uint64{d}})
	for _, p := range order {
		want := take(p.n)
		ti, ok := f.Tensor(p.name)
		if !ok {
			t.Fatalf("no tensor %s", p.name)
		}
		if ti.Type != TypeF32 || !equalU64(ti.Dims, p.dims) {
			t.Fatalf("%s: %s %v, want F32 %v", p.name, TypeName(ti.Type), ti.Dims, p.dims)
		}
		got, err := f.Float32s(ti)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s[%d] = %v, the llama2.c checkpoint has %v", p.name, i, got[i], want[i])
			}
		}
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTinyRandomF16 reads the F16 tiny-random GGUF: the float16 tensors
// dequantise to finite values and its metadata is what its header says.
func TestTinyRandomF16(t *testing.T) {
	f, err := ReadFile(shared.Path(t, "testdata/llm/tiny-random/llama-2-tiny-random.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := f.Uint("llama.embedding_length"); n != 8 {
		t.Errorf("embedding length %d", n)
	}
	ti, ok := f.Tensor("output.weight")
	if !ok || ti.Type != TypeF16 || ti.Size != 8*32000*2 {
		t.Fatalf("output.weight: %+v", ti)
	}
	v, err := f.Float32s(ti)
	if err != nil {
		t.Fatal(err)
	}
	raw := f.Raw(ti)
	nonzero := 0
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("value %d is %v", i, x)
		}
		if x != 0 {
			nonzero++
		}
		// an F16 bit pattern with a zero exponent and mantissa is ±0
		if bits := binary.LittleEndian.Uint16(raw[2*i:]); bits&0x7fff == 0 && x != 0 {
			t.Fatalf("value %d: bits %#x gave %v", i, bits, x)
		}
	}
	if nonzero < len(v)/2 {
		t.Errorf("only %d of %d values are non-zero", nonzero, len(v))
	}
}

// TestQuantizedBlocks checks Q8_0 and Q4_0 dequantisation on blocks
// written by hand, and that the quantizers round-trip within half a step.
func TestQuantizedBlocks(t *testing.T) {
	// Q8_0: scale 0.5 (float16 0x3800), values -16..15 → -8..7.5
	blk := []byte{0x00, 0x38}
	for j := 0; j < 32; j++ {
		blk = append(blk, byte(int8(j-16)))
	}
	f := mustWrite(t, []WriteTensor{{Name: "q8", Dims: []uint64{32}, Type: TypeQ8_0, Data: blk}})
	got, err := f.Float32s(&f.Tensors[0])
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range got {
		if want := 0.5 * float32(j-16); v != want {
			t.Fatalf("Q8_0[%d] = %v, want %v", j, v, want)
		}
	}
	// Q4_0: scale 2 (0x4000); byte j holds element j (low) and j+16 (high)
	// as q+8: element j = j%16 - 8 for j < 16, and 7 - j%16 above.
	blk = []byte{0x00, 0x40}
	for j := 0; j < 16; j++ {
		blk = append(blk, byte(j)|byte(15-j)<<4)
	}
	f = mustWrite(t, []WriteTensor{{Name: "q4", Dims: []uint64{32}, Type: TypeQ4_0, Data: blk}})
	got, err = f.Float32s(&f.Tensors[0])
	if err != nil {
		t.Fatal(err)
	}
	for j, v := range got {
		want := float32(2 * (j - 8))
		if j >= 16 {
			want = float32(2 * (7 - (j - 16)))
		}
		if v != want {
			t.Fatalf("Q4_0[%d] = %v, want %v", j, v, want)
		}
	}
	packed, scales := Q4_0(f.Raw(&f.Tensors[0]))
	if scales[0] != 2 || packed[0] != 0|1<<4 || packed[8] != (15-0)|(15-1)<<4 {
		t.Errorf("Q4_0 split: scale %v, bytes %#x %#x", scales[0], packed[0], packed[8])
	}

	x := make([]float32, 96)
	for i := range x {
		x[i] = float32(math.Sin(float64(i)*0.37)) * float32(1+i%7)
	}
	for _, c := range []struct {
		typ  uint32
		q    func([]float32) ([]byte, error)
		step float32 // quantization step relative to max|x| of the block
	}{{TypeQ8_0, QuantizeQ8_0, 1.0 / 127}, {TypeQ4_0, QuantizeQ4_0, 1.0 / 8}} {
		data, err := c.q(x)
		if err != nil {
			t.Fatal(err)
		}
		f := mustWrite(t, []WriteTensor{{Name: "w", Dims: []uint64{32, 3}, Type: c.typ, Data: data}})
		back, err := f.Float32s(&f.Tensors[0])
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < 3; b++ {
			amax := float32(0)
			for _, v := range x[32*b : 32*b+32] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			for i := 32 * b; i < 32*b+32; i++ {
				if e := float32(math.Abs(float64(back[i] - x[i]))); e > amax*c.step*0.51+1e-3*amax {
					t.Fatalf("%s: value %d: %v back as %v (block max %v)", TypeName(c.typ), i, x[i], back[i], amax)
				}
			}
		}
	}
	if _, err := QuantizeQ8_0(x[:31]); err == nil {
		t.Error("Q8_0 of 31 values: no error")
	}
}

func mustWrite(t *testing.T, ts []WriteTensor) *File {
	t.Helper()
	var buf bytes.Buffer
	meta := map[string]any{"general.architecture": "test", "u32": uint32(7), "i32": int32(-3), "f32": float32(1.5),
		"b": true, "u64": uint64(1 << 40), "i64": int64(-1 << 40), "f64": 0.25, "arr": []any{"a", "bc"}, "nums": []any{int32(1), int32(-2)}}
	if err := Write(&buf, meta, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMetadataAndErrors: every metadata type Write emits reads back, and
// every truncation of a valid file is an ErrFormat error, not a panic.
func TestMetadataAndErrors(t *testing.T) {
	f := mustWrite(t, []WriteTensor{{Name: "x", Dims: []uint64{2, 2}, Type: TypeF32, Data: EncodeF32([]float32{1, 2, 3, 4})}})
	checks := map[string]any{"u32": uint64(7), "i32": int64(-3), "f32": 1.5, "b": true, "u64": uint64(1 << 40), "i64": int64(-1 << 40), "f64": 0.25}
	for k, want := range checks {
		if f.Meta[k] != want {
			t.Errorf("%s = %#v, want %#v", k, f.Meta[k], want)
		}
	}
	if arr, _ := f.Meta["arr"].([]string); len(arr) != 2 || arr[1] != "bc" {
		t.Errorf("arr = %#v", f.Meta["arr"])
	}
	if n, ok := f.Uint("i32"); ok {
		t.Errorf("Uint of a negative value: %d, true", n)
	}
	v, err := f.Float32s(&f.Tensors[0])
	if err != nil || len(v) != 4 || v[3] != 4 {
		t.Fatalf("x = %v, %v", v, err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, map[string]any{"k": "v"}, []WriteTensor{{Name: "x", Dims: []uint64{32}, Type: TypeQ8_0, Data: make([]byte, 34)}}); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	for n := 0; n < len(full); n++ {
		_, err := Parse(full[:n])
		if n < 4 {
			if err == nil {
				t.Fatalf("%d bytes: no error", n)
			}
			continue
		}
		// the padding after the last tensor may be cut without harm
		if err == nil && n < len(full)-32+34%32 {
			t.Fatalf("%d of %d bytes parsed", n, len(full))
		}
		if err != nil && !errors.Is(err, ErrFormat) {
			t.Fatalf("%d bytes: %v is not ErrFormat", n, err)
		}
	}
	bad := append([]byte(nil), full...)
	bad[4] = 9 // version 9
	if _, err := Parse(bad); err == nil || !errors.Is(err, ErrFormat) {
		t.Errorf("version 9: %v", err)
	}
	if err := Write(&buf, map[string]any{"k": struct{}{}}, nil); err == nil {
		t.Error("writing a struct value: no error")
	}
}

// TestKQuantTypes: tensors of the K types and the other 32-element types
// read back as core/ggml dequantises their bytes, and a K-type row that is
// not whole 256-element super-blocks is refused naming the type.
func TestKQuantTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var ts []WriteTensor
	for _, ty := range []uint32{TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K} {
		g := ggml.Type(ty)
		raw := make([]byte, 2*g.BlockBytes())
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		for i := 1; i < len(raw); i += 2 {
			raw[i] &= 0x3b // no float16 Inf or NaN wherever a scale sits
		}
		ts = append(ts, WriteTensor{Name: TypeName(ty), Dims: []uint64{uint64(g.BlockSize()), 2}, Type: ty, Data: raw})
	}
	var buf bytes.Buffer
	if err := Write(&buf, map[string]any{"general.architecture": "test"}, ts); err != nil {
		t.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range ts {
		ti, ok := f.Tensor(w.Name)
		if !ok || ti.Type != w.Type || ti.Size != uint64(len(w.Data)) {
			t.Fatalf("%s: %+v", w.Name, ti)
		}
		got, err := f.Float32s(ti)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, len(got))
		if err := ggml.Dequantize(ggml.Type(w.Type), w.Data, want); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: element %d = %v, want %v", w.Name, i, got[i], want[i])
			}
		}
	}
	buf.Reset()
	bad := []WriteTensor{{Name: "w", Dims: []uint64{128, 2}, Type: TypeQ4_K, Data: make([]byte, 144)}}
	if err := Write(&buf, map[string]any{}, bad); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "Q4_K") {
		t.Errorf("a Q4_K row of 128 elements: %v", err)
	}
}

// TestMetadataOnlyUnpadded: a file without tensors may end right after its
// metadata, unpadded (llama.cpp's vocabulary-only GGUFs do); one with
// tensors may not.
func TestMetadataOnlyUnpadded(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, map[string]any{"tokenizer.ggml.model": "gpt2", "x": "abc"}, nil); err != nil {
		t.Fatal(err)
	}
	b := bytes.TrimRight(buf.Bytes(), "\x00") // the last value, "abc", ends in a letter
	if len(b) == buf.Len() {
		t.Fatalf("Write wrote no padding to remove (%d bytes)", len(b))
	}
	f, err := Parse(b)
	if err != nil {
		t.Fatalf("metadata-only file without padding: %v", err)
	}
	if len(f.Tensors) != 0 {
		t.Fatalf("%d tensors", len(f.Tensors))
	}
}

func TestNumbers(t *testing.T) {
	f := &File{Meta: map[string]any{
		"f32": []float32{0.5, -1}, "f64": []float64{2.25}, "u8": []uint8{255}, "i8": []int8{-128},
		"u16": []uint16{65535}, "i16": []int16{-2}, "u32": []uint32{1 << 31}, "i32": []int32{-3},
		"u64": []uint64{1 << 40}, "i64": []int64{-1 << 40}, "bools": []bool{true}, "str": "x",
		"strs": []string{"a"},
	}}
	want := map[string][]float64{
		"f32": {0.5, -1}, "f64": {2.25}, "u8": {255}, "i8": {-128}, "u16": {65535}, "i16": {-2},
		"u32": {1 << 31}, "i32": {-3}, "u64": {1 << 40}, "i64": {-1 << 40},
	}
	for k := range f.Meta {
		got, ok := f.Numbers(k)
		w, numeric := want[k]
		if ok != numeric || !slices.Equal(got, w) {
			t.Errorf("%s: %v %v, want %v %v", k, got, ok, w, numeric)
		}
	}
	if _, ok := f.Numbers("absent"); ok {
		t.Error("absent key is numeric")
	}
}
