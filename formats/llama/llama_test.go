package llama_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// reference is a direct transcription of the Llama forward pass (run.c's
// order of operations) in float64 over every position at once: the
// logits of each position of tokens.
func reference(w *llama.Weights, tokens []int) [][]float64 {
	c := w.Config
	D, hs, kvd := c.Dim, c.Dim/c.Heads, c.KVHeads*(c.Dim/c.Heads)
	mat := func(m *llama.Matrix) []float32 { return m.Float32s() }
	mv := func(W []float32, rows, cols int, x []float64) []float64 {
		y := make([]float64, rows)
		for r := 0; r < rows; r++ {
			for k := 0; k < cols; k++ {
				y[r] += float64(W[r*cols+k]) * x[k]
			}
		}
		return y
	}
	rms := func(x []float64, g []float32) []float64 {
		ss := 0.0
		for _, v := range x {
			ss += v * v
		}
		inv := 1 / math.Sqrt(ss/float64(len(x))+c.RMSEps)
		y := make([]float64, len(x))
		for i := range x {
			y[i] = x[i] * inv * float64(g[i])
		}
		return y
	}
	rope := func(v []float64, pos int) {
		for i := 0; i < len(v); i += 2 {
			freq := 1 / math.Pow(c.RopeTheta, float64(i%hs)/float64(hs))
			cs, sn := math.Cos(float64(pos)*freq), math.Sin(float64(pos)*freq)
			v[i], v[i+1] = v[i]*cs-v[i+1]*sn, v[i]*sn+v[i+1]*cs
		}
	}
	emb := mat(&w.Embed)
	xs := make([][]float64, len(tokens))
	for p, tk := range tokens {
		xs[p] = make([]float64, D)
		for i := range xs[p] {
			xs[p][i] = float64(emb[tk*D+i])
		}
	}
	for l := range w.Layers {
		L := &w.Layers[l]
		wq, wk, wv, wo := mat(&L.Q), mat(&L.K), mat(&L.V), mat(&L.O)
		w1, w2, w3 := mat(&L.Gate), mat(&L.Down), mat(&L.Up)
		ks, vs := make([][]float64, len(tokens)), make([][]float64, len(tokens))
		qs := make([][]float64, len(tokens))
		for p := range tokens {
			xn := rms(xs[p], L.AttnNorm)
			qs[p], ks[p], vs[p] = mv(wq, D, D, xn), mv(wk, kvd, D, xn), mv(wv, kvd, D, xn)
			rope(qs[p], p)
			rope(ks[p], p)
		}
		for p := range tokens {
			att := make([]float64, D)
			for h := 0; h < c.Heads; h++ {
				kh := h / (c.Heads / c.KVHeads)
				sc := make([]float64, p+1)
				mx := math.Inf(-1)
				for t := 0; t <= p; t++ {
					for i := 0; i < hs; i++ {
						sc[t] += qs[p][h*hs+i] * ks[t][kh*hs+i]
					}
					sc[t] /= math.Sqrt(float64(hs))
					mx = math.Max(mx, sc[t])
				}
				sum := 0.0
				for t := range sc {
					sc[t] = math.Exp(sc[t] - mx)
					sum += sc[t]
				}
				for t := range sc {
					for i := 0; i < hs; i++ {
						att[h*hs+i] += sc[t] / sum * vs[t][kh*hs+i]
					}
				}
			}
			o := mv(wo, D, D, att)
			for i := range o {
				xs[p][i] += o[i]
			}
			xn := rms(xs[p], L.FFNNorm)
			g, u := mv(w1, c.Hidden, D, xn), mv(w3, c.Hidden, D, xn)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := mv(w2, D, c.Hidden, g)
			for i := range d {
				xs[p][i] += d[i]
			}
		}
	}
	cls := w.Output
	if cls == nil {
		cls = &w.Embed
	}
	cw := mat(cls)
	out := make([][]float64, len(tokens))
	for p := range tokens {
		out[p] = mv(cw, c.Vocab, D, rms(xs[p], w.Norm))
	}
	return out
}

// checkAgainstReference runs the built graph, in each cache form, on a
// prefill of three tokens and three one-token decode steps, and compares
// every position's logits with the reference forward pass, relative to
// the largest logit. The SharedCache graph (opened from the file) runs
// with each present output bound to its past buffer, which must then
// hold the new positions; the ConcatCache one is fed its present caches.
func checkAgainstReference(t *testing.T, path string, w *llama.Weights, tokens []int, tol float64) {
	t.Helper()
	want := reference(w, tokens)
	for _, form := range []llama.Cache{llama.SharedCache, llama.ConcatCache} {
		ctx := context.Background()
		var last *switchyard.Stats
		opts := &switchyard.OpenOptions{Backends: []string{"cpu"}, KVCache: "f32", OnRun: func(_ string, st *switchyard.Stats) { last = st }}
		var m *switchyard.Model
		var err error
		if form == llama.SharedCache {
			m, err = switchyard.Open(ctx, path, opts)
		} else {
			var g *graph.Model
			if g, err = llama.BuildWith(w, form); err != nil {
				t.Fatal(err)
			}
			m, err = switchyard.OpenBytes(ctx, onnx.Encode(g), opts)
		}
		if err != nil {
			t.Fatal(err)
		}
		checkSteps(t, m, w, tokens, want, tol, form, func() *switchyard.Stats { return last })
		m.Close()
	}
}

func checkSteps(t *testing.T, m *switchyard.Model, w *llama.Weights, tokens []int, want [][]float64, tol float64, form llama.Cache, stats func() *switchyard.Stats) {
	t.Helper()
	ctx := context.Background()
	c := w.Config
	feeds := switchyard.Tensors{}
	past := 0
	if form == llama.SharedCache {
		past = c.ContextLength
	}
	for l := 0; l < c.Layers; l++ {
		for _, k := range []string{"past_key.", "past_value."} {
			z, err := switchyard.Zeros(switchyard.Float32, []int{1, c.KVHeads, past, c.Dim / c.Heads})
			if err != nil {
				t.Fatal(err)
			}
			feeds[k+string(rune('0'+l))] = z
		}
	}
	steps := [][]int{tokens[:3]}
	for _, tk := range tokens[3:] {
		steps = append(steps, []int{tk})
	}
	pos := 0
	for _, ids := range steps {
		in := make([]int64, len(ids))
		for i, v := range ids {
			in[i] = int64(v)
		}
		var err error
		feeds["input_ids"], err = switchyard.NewTensor([]int{1, len(ids)}, in)
		if err != nil {
			t.Fatal(err)
		}
		if feeds[llama.LogitsRowsInput], err = switchyard.NewTensor([]int{1}, []int64{0}); err != nil {
			t.Fatal(err)
		}
		var outs switchyard.Tensors
		if form == llama.SharedCache {
			if feeds[llama.PastLengthInput], err = switchyard.NewTensor([]int{1}, []int32{int32(pos)}); err != nil {
				t.Fatal(err)
			}
			lt, err := switchyard.Zeros(switchyard.Float32, []int{1, len(ids), c.Vocab})
			if err != nil {
				t.Fatal(err)
			}
			outs = switchyard.Tensors{"logits": lt}
			for name, v := range feeds {
				if n, ok := strings.CutPrefix(name, "past_"); ok && name != llama.PastLengthInput {
					outs["present_"+n] = v
				}
			}
			before, _ := switchyard.Values[float32](feeds["past_key.0"])
			before = slices.Clone(before)
			if err := m.RunInto(ctx, feeds, outs); err != nil {
				t.Fatal(err)
			}
			// every present output written by its kernel into the past
			// buffer, none copied after the run
			if st := stats(); st == nil || st.InPlace < 2*c.Layers || st.Copied != 0 {
				t.Fatalf("run stats %+v: want %d outputs written in place, none copied", st, 2*c.Layers)
			}
			// the buffer now holds the new positions after the old ones
			after, _ := switchyard.Values[float32](feeds["past_key.0"])
			hs := c.Dim / c.Heads
			for h := 0; h < c.KVHeads; h++ {
				row := func(v []float32, p int) []float32 { return v[(h*past+p)*hs : (h*past+p+1)*hs] }
				for p := 0; p < pos; p++ {
					if !slices.Equal(row(before, p), row(after, p)) {
						t.Fatalf("head %d: cached position %d changed", h, p)
					}
				}
				for p := pos; p < pos+len(ids); p++ {
					if slices.Equal(row(after, p), make([]float32, hs)) {
						t.Fatalf("head %d: position %d was not written into the shared buffer", h, p)
					}
				}
			}
		} else if outs, err = m.Run(ctx, feeds); err != nil {
			t.Fatal(err)
		}
		lg, err := switchyard.Values[float32](outs["logits"])
		if err != nil {
			t.Fatal(err)
		}
		for s := range ids {
			worst, scale := 0.0, 0.0
			for v := 0; v < c.Vocab; v++ {
				worst = math.Max(worst, math.Abs(float64(lg[s*c.Vocab+v])-want[pos][v]))
				scale = math.Max(scale, math.Abs(want[pos][v]))
			}
			if worst > tol*scale {
				t.Fatalf("cache form %d, position %d: logits differ from the reference by %g, %g of their largest magnitude %g (tolerance %g)", form, pos, worst, worst/scale, scale, tol)
			}
			pos++
		}
		if form == llama.ConcatCache {
			for l := 0; l < c.Layers; l++ {
				for _, k := range []string{"key.", "value."} {
					n := k + string(rune('0'+l))
					feeds["past_"+n] = outs["present_"+n]
				}
			}
			if got := outs["present_key.0"].Shape()[2]; got != pos {
				t.Fatalf("present cache has %d positions after %d", got, pos)
			}
		}
	}
}

func TestGraphMatchesReference(t *testing.T) {
	dir := shared.Path(t, "testdata/llm")
	t.Run("tiny-random-f16-untied", func(t *testing.T) {
		p := filepath.Join(dir, "tiny-random", "llama-2-tiny-random.gguf")
		f, err := gguf.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := llama.FromGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		if w.Output == nil || w.Config.Vocab != 32000 {
			t.Fatalf("tiny-random: classifier %v, vocab %d", w.Output != nil, w.Config.Vocab)
		}
		checkAgainstReference(t, p, w, []int{1, 450, 4996, 17354, 29871, 13}, 1e-5)
	})
	t.Run("stories260K-q80", func(t *testing.T) {
		p := filepath.Join(dir, "stories260K", "stories260K_q80.bin")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := llama.ReadLlama2c(b)
		if err != nil {
			t.Fatal(err)
		}
		if !w.Layers[0].Q.Quantized() || w.Layers[0].Down.Block != 64 {
			t.Fatalf("q80 weights: bits %d block %d", w.Layers[0].Q.Bits, w.Layers[0].Down.Block)
		}
		checkAgainstReference(t, p, w, []int{1, 403, 407, 261, 378, 432}, 1e-4)
	})
}

// TestWeightMemory reports, and bounds, the bytes of weights each format
// keeps: the int8 export holds about a quarter of the float32 model.
func TestWeightMemory(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	f32, err := os.ReadFile(filepath.Join(dir, "stories260K.bin"))
	if err != nil {
		t.Fatal(err)
	}
	q80, err := os.ReadFile(filepath.Join(dir, "stories260K_q80.bin"))
	if err != nil {
		t.Fatal(err)
	}
	wf, err := llama.ReadLlama2c(f32)
	if err != nil {
		t.Fatal(err)
	}
	wq, err := llama.ReadLlama2c(q80)
	if err != nil {
		t.Fatal(err)
	}
	bf, bq := wf.WeightBytes(), wq.WeightBytes()
	t.Logf("weights held: float32 %d bytes, int8 export %d bytes (%.2f×)", bf, bq, float64(bq)/float64(bf))
	if bq*2 > bf {
		t.Fatalf("the int8 model holds %d bytes, the float32 one %d", bq, bf)
	}
	m, err := llama.Build(wq)
	if err != nil {
		t.Fatal(err)
	}
	quant, mm := 0, 0
	for _, n := range m.Graph.Nodes {
		switch n.OpType {
		case "BlockQuantMatMul":
			quant++
		case "MatMul":
			mm++
		}
	}
	// 7 per layer and the classifier; attention is one GroupQueryAttention
	if quant != 7*5+1 || mm != 0 {
		t.Fatalf("%d BlockQuantMatMul and %d MatMul nodes", quant, mm)
	}
}

// TestFormatsAndBadFiles: the registered formats recognise the files, and
// truncated or inconsistent checkpoints are errors, not panics.
func TestFormatsAndBadFiles(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	for file, want := range map[string]string{"stories260K_f32.gguf": "gguf", "stories260K_q80.bin": "llama2c", "stories260K.bin": "llama2c", "stories260K_kv.onnx": "onnx"} {
		f, err := formats.Detect(filepath.Join(dir, file))
		if err != nil || f.Name != want {
			t.Errorf("%s: %v %v, want %s", file, f, err, want)
		}
	}
	for _, file := range []string{"stories260K.bin", "stories260K_q80.bin", "stories260K_f32.gguf"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 3, 27, 28, 100, 255, 256, 300, len(b) / 2, len(b) - 1} {
			if _, err := formats.Decode(b[:n], file, formats.Options{}); err == nil {
				t.Errorf("%s cut to %d bytes: no error", file, n)
			}
		}
	}
	hdr := func(v ...int32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return b
	}
	for _, h := range [][]byte{
		hdr(64, 172, 5, 8, 4, 512, 512),          // header only
		hdr(64, 172, 5, 7, 4, 512, 512),          // heads do not divide
		hdr(1<<30, 1<<30, 1<<20, 8, 4, 512, 512), // absurd sizes
		hdr(64, 172, 5, 8, 4, 512, -1),
		append([]byte("24ka"), hdr(1, 64, 172, 5, 8, 4, 512, 512)...), // export version 1
	} {
		_, err := llama.ReadLlama2c(h)
		if err == nil || !errors.Is(err, llama.ErrFormat) {
			t.Errorf("header %v: %v", h[:8], err)
		}
	}
	var sb strings.Builder
	if err := gguf.Write(&sb, map[string]any{"general.architecture": "gpt2"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := formats.Decode([]byte(sb.String()), "x.gguf", formats.Options{}); err == nil || !strings.Contains(err.Error(), "gpt2") {
		t.Errorf("a gpt2 GGUF: %v", err)
	}
}

// TestInt8ExportMatchesFloatWeights: every dequantised weight of the
// llama2.c int8 export is within half a quantization step (its group's
// scale) of the float32 checkpoint's, and the norms are equal.
func TestInt8ExportMatchesFloatWeights(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	read := func(f string) *llama.Weights {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		w, err := llama.ReadLlama2c(b)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	wf, wq := read("stories260K.bin"), read("stories260K_q80.bin")
	check := func(name string, f, q *llama.Matrix) {
		fv, qv := f.Float32s(), q.Float32s()
		for i := range fv {
			s := float64(q.Scales[i/q.Block])
			if d := math.Abs(float64(fv[i]) - float64(qv[i])); d > s/2*(1+1e-5) {
				t.Fatalf("%s[%d]: float %v, int8 %v (scale %v)", name, i, fv[i], qv[i], s)
			}
		}
	}
	check("embedding", &wf.Embed, &wq.Embed)
	for l := range wf.Layers {
		a, b := &wf.Layers[l], &wq.Layers[l]
		for _, m := range []struct {
			name string
			f, q *llama.Matrix
		}{{"wq", &a.Q, &b.Q}, {"wk", &a.K, &b.K}, {"wv", &a.V, &b.V}, {"wo", &a.O, &b.O}, {"w1", &a.Gate, &b.Gate}, {"w2", &a.Down, &b.Down}, {"w3", &a.Up, &b.Up}} {
			check(fmt.Sprintf("layer %d %s", l, m.name), m.f, m.q)
		}
		for i := range a.AttnNorm {
			if a.AttnNorm[i] != b.AttnNorm[i] || a.FFNNorm[i] != b.FFNNorm[i] {
				t.Fatalf("layer %d norms differ at %d", l, i)
			}
		}
	}
}
