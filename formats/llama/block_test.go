package llama_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/llm"
)

// blockWeights draws a model of c's shape with every part its Block asks
// for; fused puts Q/K/V and gate/up in one matrix each, biases adds q/k/v
// biases.
func blockWeights(c llama.Config, fused, biases bool, seed uint64) *llama.Weights {
	rng := rand.New(rand.NewPCG(seed, 7))
	vec := func(n int, center, amp float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(center + amp*(2*rng.Float64()-1))
		}
		return v
	}
	mat := func(rows, cols int) llama.Matrix {
		return llama.Matrix{Rows: rows, Cols: cols, F32: vec(rows*cols, 0, math.Sqrt(3/float64(cols)))}
	}
	hs := c.HeadSize
	q, kv := c.Heads*hs, c.KVHeads*hs
	w := &llama.Weights{Config: c, Embed: mat(c.Vocab, c.Dim), Norm: vec(c.Dim, 1, 1.0/16)}
	for l := 0; l < c.Layers; l++ {
		L := llama.Layer{AttnNorm: vec(c.Dim, 1, 1.0/16), FFNNorm: vec(c.Dim, 1, 1.0/16), O: mat(c.Dim, q), Down: mat(c.Dim, c.Hidden)}
		if fused {
			qkv, gu := mat(q+2*kv, c.Dim), mat(2*c.Hidden, c.Dim)
			L.QKV, L.GateUp = &qkv, &gu
		} else {
			L.Q, L.K, L.V, L.Gate, L.Up = mat(q, c.Dim), mat(kv, c.Dim), mat(kv, c.Dim), mat(c.Hidden, c.Dim), mat(c.Hidden, c.Dim)
		}
		if biases {
			L.QBias, L.KBias, L.VBias = vec(q, 0, 0.25), vec(kv, 0, 0.25), vec(kv, 0, 0.25)
		}
		if c.Block.QKNorm {
			L.QNorm, L.KNorm = vec(hs, 1, 1.0/16), vec(hs, 1, 1.0/16)
		}
		if c.Block.PostNorms {
			L.PostAttnNorm, L.PostFFNNorm = vec(c.Dim, 1, 1.0/16), vec(c.Dim, 1, 1.0/16)
		}
		w.Layers = append(w.Layers, L)
	}
	return w
}

// blockReference is the forward pass of a Block-described model written
// out directly in float64 (every position at once): the logits of each
// position of tokens.
func blockReference(w *llama.Weights, tokens []int) [][]float64 {
	c, b := w.Config, w.Config.Block
	D, hs := c.Dim, c.HeadSize
	q, kv := c.Heads*hs, c.KVHeads*hs
	rot := b.RotaryDim
	if rot == 0 {
		rot = hs
	}
	mv := func(m *llama.Matrix, x []float64, r0, r1 int) []float64 {
		W := m.Float32s()
		y := make([]float64, r1-r0)
		for r := r0; r < r1; r++ {
			for k := 0; k < m.Cols; k++ {
				y[r-r0] += float64(W[r*m.Cols+k]) * x[k]
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
	addBias := func(x []float64, bias []float32) {
		for i := range bias {
			x[i] += float64(bias[i])
		}
	}
	rope := func(v []float64, heads, pos int, theta float64, local bool) {
		factors := b.RopeFactors
		if b.LongRopeLong != nil && c.ContextLength > b.RopeOrigContext {
			factors = b.LongRopeLong
		}
		scale, attn := b.RopeFreqScale, b.RopeAttnFactor
		if local {
			scale = b.RopeFreqScaleLocal
		}
		if scale == 0 {
			scale = 1
		}
		if attn == 0 {
			attn = 1
		}
		for h := 0; h < heads; h++ {
			x := v[h*hs : (h+1)*hs]
			for i := 0; i < rot/2; i++ {
				f := math.Pow(theta, -float64(2*i)/float64(rot)) * scale
				if factors != nil && !local {
					f /= float64(factors[i])
				}
				cs, sn := math.Cos(float64(pos)*f)*attn, math.Sin(float64(pos)*f)*attn
				i1, i2 := 2*i, 2*i+1
				if b.NeoxRope {
					i1, i2 = i, i+rot/2
				}
				x[i1], x[i2] = x[i1]*cs-x[i2]*sn, x[i1]*sn+x[i2]*cs
			}
		}
	}
	// GELU as llama.cpp's CPU backend computes it: the tanh
	// approximation of the input rounded to float16, rounded to float16,
	// 0 from -10 down, x from 10 up
	half := func(x float64) float64 { return float64(graph.F16FromFloat64(x).Float32()) }
	gelu := func(x float64) float64 {
		switch {
		case float32(x) <= -10:
			return 0
		case float32(x) >= 10:
			return x
		}
		h := half(x)
		return half(0.5 * h * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(h+0.044715*h*h*h))))
	}
	emb := w.Embed.Float32s()
	xs := make([][]float64, len(tokens))
	for p, tk := range tokens {
		xs[p] = make([]float64, D)
		for i := range xs[p] {
			xs[p][i] = float64(emb[tk*D+i])
			if b.EmbedScale != 0 {
				xs[p][i] *= b.EmbedScale
			}
		}
	}
	for l := range w.Layers {
		L := &w.Layers[l]
		local := b.SlidingWindow > 0 && (b.Local == nil || b.Local[l])
		theta := c.RopeTheta
		if local && b.RopeThetaLocal > 0 {
			theta = b.RopeThetaLocal
		}
		qs, ks, vs := make([][]float64, len(tokens)), make([][]float64, len(tokens)), make([][]float64, len(tokens))
		for p := range tokens {
			xn := rms(xs[p], L.AttnNorm)
			if L.QKV != nil {
				qs[p], ks[p], vs[p] = mv(L.QKV, xn, 0, q), mv(L.QKV, xn, q, q+kv), mv(L.QKV, xn, q+kv, q+2*kv)
			} else {
				qs[p], ks[p], vs[p] = mv(&L.Q, xn, 0, q), mv(&L.K, xn, 0, kv), mv(&L.V, xn, 0, kv)
			}
			addBias(qs[p], L.QBias)
			addBias(ks[p], L.KBias)
			addBias(vs[p], L.VBias)
			if b.QKNorm {
				for h := 0; h < c.Heads; h++ {
					copy(qs[p][h*hs:], rms(qs[p][h*hs:(h+1)*hs], L.QNorm))
				}
				for h := 0; h < c.KVHeads; h++ {
					copy(ks[p][h*hs:], rms(ks[p][h*hs:(h+1)*hs], L.KNorm))
				}
			}
			rope(qs[p], c.Heads, p, theta, local)
			rope(ks[p], c.KVHeads, p, theta, local)
		}
		scale := b.AttnScale
		if scale == 0 {
			scale = 1 / math.Sqrt(float64(hs))
		}
		for p := range tokens {
			att := make([]float64, q)
			first := 0
			if local {
				first = max(0, p+1-b.SlidingWindow)
			}
			for h := 0; h < c.Heads; h++ {
				kh := h / (c.Heads / c.KVHeads)
				sc := make([]float64, p+1)
				mx := math.Inf(-1)
				for t := first; t <= p; t++ {
					for i := 0; i < hs; i++ {
						sc[t] += qs[p][h*hs+i] * ks[t][kh*hs+i]
					}
					sc[t] *= scale
					if b.AttnSoftcap > 0 {
						sc[t] = b.AttnSoftcap * math.Tanh(sc[t]/b.AttnSoftcap)
					}
					mx = math.Max(mx, sc[t])
				}
				sum := 0.0
				for t := first; t <= p; t++ {
					sc[t] = math.Exp(sc[t] - mx)
					sum += sc[t]
				}
				for t := first; t <= p; t++ {
					for i := 0; i < hs; i++ {
						att[h*hs+i] += sc[t] / sum * vs[t][kh*hs+i]
					}
				}
			}
			o := mv(&L.O, att, 0, D)
			if b.PostNorms {
				o = rms(o, L.PostAttnNorm)
			}
			for i := range o {
				xs[p][i] += o[i]
			}
			xn := rms(xs[p], L.FFNNorm)
			var g, u []float64
			if L.GateUp != nil {
				g, u = mv(L.GateUp, xn, 0, c.Hidden), mv(L.GateUp, xn, c.Hidden, 2*c.Hidden)
			} else {
				g, u = mv(&L.Gate, xn, 0, c.Hidden), mv(&L.Up, xn, 0, c.Hidden)
			}
			for i := range g {
				if b.GELU {
					g[i] = gelu(g[i]) * u[i]
				} else {
					g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
				}
			}
			d := mv(&L.Down, g, 0, D)
			if b.PostNorms {
				d = rms(d, L.PostFFNNorm)
			}
			for i := range d {
				xs[p][i] += d[i]
			}
		}
	}
	cls := w.Output
	if cls == nil {
		cls = &w.Embed
	}
	out := make([][]float64, len(tokens))
	for p := range tokens {
		out[p] = mv(cls, rms(xs[p], w.Norm), 0, c.Vocab)
		if b.FinalSoftcap > 0 {
			for i, v := range out[p] {
				out[p][i] = b.FinalSoftcap * math.Tanh(v/b.FinalSoftcap)
			}
		}
	}
	return out
}

// TestBlocksMatchReference: the graph of each architecture's block, built
// from random weights, gives the logits of the float64 reference forward
// pass at every position of a prefill longer than the sliding windows,
// on the reference kernels (cpu) and on the default placement.
func TestBlocksMatchReference(t *testing.T) {
	base := llama.Config{Dim: 16, Hidden: 24, Layers: 2, Heads: 4, KVHeads: 2, Vocab: 40, ContextLength: 16, RMSEps: 1e-6, RopeTheta: 10000}
	factors := func(n int, f func(i int) float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	cases := []struct {
		name           string
		block          llama.Block
		headSize       int
		fused, biases  bool
		untied, theta0 bool
	}{
		{name: "llama3", block: llama.Block{Arch: "llama", RopeFactors: factors(2, func(i int) float32 { return float32(1 + 3*i) })}, untied: true},
		{name: "qwen2", block: llama.Block{Arch: "qwen2", NeoxRope: true}, biases: true},
		{name: "qwen3", block: llama.Block{Arch: "qwen3", NeoxRope: true, QKNorm: true}, headSize: 8, untied: true},
		{name: "phi3", block: llama.Block{Arch: "phi3", NeoxRope: true, RotaryDim: 2, RopeFactors: []float32{1.5},
			LongRopeLong: []float32{7}, RopeOrigContext: 8, RopeAttnFactor: 1.19}, fused: true},
		{name: "gemma2", block: llama.Block{Arch: "gemma2", NeoxRope: true, PostNorms: true, GELU: true, EmbedScale: 4,
			AttnSoftcap: 1.5, FinalSoftcap: 2, SlidingWindow: 3, Local: []bool{true, false}, RopeThetaLocal: 10000, RopeFreqScale: 0.25, RopeFreqScaleLocal: 0.25}},
		{name: "gemma3", block: llama.Block{Arch: "gemma3", NeoxRope: true, QKNorm: true, PostNorms: true, GELU: true, EmbedScale: 4,
			AttnScale: 0.3, SlidingWindow: 4, Local: []bool{true, false}, RopeThetaLocal: 100, RopeFreqScale: 0.5}, headSize: 8},
		{name: "mistral-window", block: llama.Block{Arch: "llama", SlidingWindow: 5}, untied: true},
	}
	tokens := []int{1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 2, 6}
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Block, c.HeadSize = tc.block, tc.headSize
			if c.HeadSize == 0 {
				c.HeadSize = c.Dim / c.Heads
			}
			w := blockWeights(c, tc.fused, tc.biases, uint64(i))
			if tc.untied {
				o := blockWeights(c, false, false, uint64(i+100)).Embed
				w.Output = &o
			}
			g, err := llama.Build(w)
			if err != nil {
				t.Fatal(err)
			}
			want := blockReference(w, tokens)
			for _, backends := range [][]string{{"cpu"}, nil} {
				var opts *switchyard.OpenOptions
				if backends != nil {
					opts = &switchyard.OpenOptions{Backends: backends}
				}
				m, err := switchyard.OpenBytes(ctx, onnx.Encode(g), opts)
				if err != nil {
					t.Fatal(err)
				}
				d, err := llm.NewDecoder(m)
				if err != nil {
					t.Fatal(err)
				}
				got, v, err := d.PromptLogits(ctx, tokens)
				m.Close()
				if err != nil {
					t.Fatal(err)
				}
				worst := 0.0
				for p := range tokens {
					for j := 0; j < v; j++ {
						worst = math.Max(worst, math.Abs(float64(got[p*v+j])-want[p][j]))
					}
				}
				if worst > 1e-4 {
					t.Errorf("backends %v: logits differ from the reference by up to %.3g", backends, worst)
				}
			}
		})
	}
}
