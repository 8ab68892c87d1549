package rnn

import (
	"errors"
	"math"
	"math/rand"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	rnnops "github.com/switchyard-hal/switchyard/core/ops/rnn"
)

// ---- a naive reference written straight from the ONNX formulas ----

type refAct func(float64) float64

func refActs(t *testing.T, names []string, alphas, betas []float64) []refAct {
	t.Helper()
	var out []refAct
	for i, n := range names {
		a, b := alphas[i], betas[i]
		switch n {
		case "Sigmoid":
			out = append(out, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) })
		case "Tanh":
			out = append(out, math.Tanh)
		case "Relu":
			out = append(out, func(x float64) float64 { return math.Max(0, x) })
		case "Affine":
			out = append(out, func(x float64) float64 { return a*x + b })
		case "LeakyRelu":
			out = append(out, func(x float64) float64 {
				if x >= 0 {
					return x
				}
				return a * x
			})
		case "ThresholdedRelu":
			out = append(out, func(x float64) float64 {
				if x > a {
					return x
				}
				return 0
			})
		case "ScaledTanh":
			out = append(out, func(x float64) float64 { return a * math.Tanh(b*x) })
		case "HardSigmoid":
			out = append(out, func(x float64) float64 { return math.Min(math.Max(a*x+b, 0), 1) })
		case "Elu":
			out = append(out, func(x float64) float64 {
				if x >= 0 {
					return x
				}
				return a * (math.Exp(x) - 1)
			})
		case "Softsign":
			out = append(out, func(x float64) float64 { return x / (1 + math.Abs(x)) })
		case "Softplus":
			out = append(out, func(x float64) float64 { return math.Log(1 + math.Exp(x)) })
		default:
			t.Fatalf("ref: unknown activation %s", n)
		}
	}
	return out
}

type refProblem struct {
	kind          cellKind
	S, B, I, H, D int
	reverse       bool
	X             []float64 // [S,B,I]
	W, R, Bias, P []float64
	H0, C0        []float64 // [D,B,H]
	lens          []int
	acts          []refAct // per direction
	clip          float64  // 0 = none
	inputForget   bool
	lbr           bool
}

// reference returns Y [S,D,B,H], Yh and Yc [D,B,H].
func (p *refProblem) reference() (Y, Yh, Yc []float64) {
	S, B, I, H, D := p.S, p.B, p.I, p.H, p.D
	g := cells[p.kind].gates
	na := cells[p.kind].nact
	Y = make([]float64, S*D*B*H)
	Yh = make([]float64, D*B*H)
	Yc = make([]float64, D*B*H)
	cl := func(v float64) float64 {
		if p.clip > 0 {
			return math.Max(-p.clip, math.Min(p.clip, v))
		}
		return v
	}
	for d := 0; d < D; d++ {
		f := p.acts[d*na:]
		// pre(gate, j, x, h) = x·W_gate[j] + h·R_gate[j] (biases separate)
		wx := func(gate, j int, x []float64) float64 {
			s := 0.0
			for k := 0; k < I; k++ {
				s += p.W[((d*g+gate)*H+j)*I+k] * x[k]
			}
			return s
		}
		rh := func(gate, j int, h []float64) float64 {
			s := 0.0
			for k := 0; k < H; k++ {
				s += p.R[((d*g+gate)*H+j)*H+k] * h[k]
			}
			return s
		}
		wb := func(gate, j int) float64 {
			if p.Bias == nil {
				return 0
			}
			return p.Bias[d*2*g*H+gate*H+j]
		}
		rb := func(gate, j int) float64 {
			if p.Bias == nil {
				return 0
			}
			return p.Bias[d*2*g*H+g*H+gate*H+j]
		}
		peep := func(k, j int) float64 {
			if p.P == nil {
				return 0
			}
			return p.P[d*3*H+k*H+j]
		}
		for b := 0; b < B; b++ {
			h := make([]float64, H)
			c := make([]float64, H)
			if p.H0 != nil {
				copy(h, p.H0[(d*B+b)*H:])
			}
			if p.C0 != nil {
				copy(c, p.C0[(d*B+b)*H:])
			}
			L := p.lens[b]
			for s := 0; s < L; s++ {
				t := s
				if p.reverse || d == 1 {
					t = L - 1 - s
				}
				x := p.X[(t*B+b)*I : (t*B+b+1)*I]
				nh := make([]float64, H)
				nc := make([]float64, H)
				for j := 0; j < H; j++ {
					switch p.kind {
					case kindRNN:
						nh[j] = f[0](cl(wx(0, j, x) + rh(0, j, h) + wb(0, j) + rb(0, j)))
					case kindGRU:
						z := f[0](cl(wx(0, j, x) + rh(0, j, h) + wb(0, j) + rb(0, j)))
						var hh float64
						if p.lbr {
							r := f[0](cl(wx(1, j, x) + rh(1, j, h) + wb(1, j) + rb(1, j)))
							hh = f[1](cl(wx(2, j, x) + r*(rh(2, j, h)+rb(2, j)) + wb(2, j)))
						} else {
							rhv := make([]float64, H)
							for k := range rhv {
								r := f[0](cl(wx(1, k, x) + rh(1, k, h) + wb(1, k) + rb(1, k)))
								rhv[k] = r * h[k]
							}
							hh = f[1](cl(wx(2, j, x) + rh(2, j, rhv) + rb(2, j) + wb(2, j)))
						}
						nh[j] = (1-z)*hh + z*h[j]
					case kindLSTM: // gate order i, o, f, c; P order i, o, f
						i := f[0](cl(wx(0, j, x) + rh(0, j, h) + peep(0, j)*c[j] + wb(0, j) + rb(0, j)))
						ff := f[0](cl(wx(2, j, x) + rh(2, j, h) + peep(2, j)*c[j] + wb(2, j) + rb(2, j)))
						if p.inputForget {
							ff = 1 - i
						}
						cc := f[1](cl(wx(3, j, x) + rh(3, j, h) + wb(3, j) + rb(3, j)))
						nc[j] = ff*c[j] + i*cc
						o := f[0](cl(wx(1, j, x) + rh(1, j, h) + peep(1, j)*nc[j] + wb(1, j) + rb(1, j)))
						nh[j] = o * f[2](cl(nc[j]))
					}
				}
				h = nh
				if p.kind == kindLSTM {
					c = nc
				}
				copy(Y[((t*D+d)*B+b)*H:], h)
			}
			if L == 0 { // ONNX Runtime zeroes the final state of an empty sequence
				continue
			}
			copy(Yh[(d*B+b)*H:], h)
			copy(Yc[(d*B+b)*H:], c)
		}
	}
	return
}

// ---- helpers ----

func randVals(rng *rand.Rand, n int, scale float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = (rng.Float64()*2 - 1) * scale
	}
	return v
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func tensor(dt graph.DType, shape []int, v []float64) *graph.Tensor {
	if v == nil {
		return nil
	}
	t, err := graph.FromFloat64s(dt, shape, v)
	if err != nil {
		panic(err)
	}
	return t
}

// swap3 maps [a,b,c] to [b,a,c].
func swap3(v []float64, a, b, c int) []float64 {
	out := make([]float64, len(v))
	for i := 0; i < a; i++ {
		for j := 0; j < b; j++ {
			copy(out[(j*a+i)*c:(j*a+i+1)*c], v[(i*b+j)*c:(i*b+j+1)*c])
		}
	}
	return out
}

func opName(k cellKind) string {
	return map[cellKind]string{kindRNN: "RNN", kindGRU: "GRU", kindLSTM: "LSTM"}[k]
}

func runOp(t *testing.T, opset int64, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	if err := kernels.CheckNode(n, opset); err != nil {
		t.Fatalf("CheckNode: %v", err)
	}
	outs, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	if len(outs) != len(n.Outputs) {
		t.Fatalf("got %d outputs for %d names", len(outs), len(n.Outputs))
	}
	for i, o := range outs {
		if (o == nil) != (n.Outputs[i] == "") {
			t.Fatalf("output %d (%q): nil=%v", i, n.Outputs[i], o == nil)
		}
		if o != nil {
			if err := o.Check(); err != nil {
				t.Fatalf("output %d: %v", i, err)
			}
		}
	}
	// Inference must agree with the computed shapes.
	inf := make([]kernels.InferInput, len(in))
	for i, x := range in {
		if x != nil {
			inf[i].Type = graph.ValueType{Kind: "tensor", DType: x.DType, Shape: graph.StaticShape(x.Shape...)}
		}
	}
	types, err := s.Infer(n, opset, inf)
	if err != nil {
		t.Fatalf("Infer: %v", err)
	}
	for i, o := range outs {
		if o == nil {
			continue
		}
		got, ok := types[i].Shape.Ints()
		if !ok || !graph.SameShape(got, o.Shape) || types[i].DType != o.DType {
			t.Fatalf("output %d: inferred %v, computed %v%v", i, types[i], o.DType, o.Shape)
		}
	}
	return outs, nil
}

func checkClose(t *testing.T, what string, got *graph.Tensor, want []float64, tol float64) {
	t.Helper()
	if got.Len() != len(want) {
		t.Fatalf("%s: %d values, want %d", what, got.Len(), len(want))
	}
	for i, w := range want {
		g := got.Float64At(i)
		if !(math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g, w)
		}
	}
}

type attrSet map[string]*graph.Attribute

func (a attrSet) str(k, v string) attrSet {
	a[k] = &graph.Attribute{Name: k, Type: graph.AttrString, S: v}
	return a
}
func (a attrSet) int(k string, v int64) attrSet {
	a[k] = &graph.Attribute{Name: k, Type: graph.AttrInt, I: v}
	return a
}
func (a attrSet) flt(k string, v float32) attrSet {
	a[k] = &graph.Attribute{Name: k, Type: graph.AttrFloat, F: v}
	return a
}
func (a attrSet) strs(k string, v ...string) attrSet {
	a[k] = &graph.Attribute{Name: k, Type: graph.AttrStrings, Strings: v}
	return a
}
func (a attrSet) flts(k string, v ...float32) attrSet {
	a[k] = &graph.Attribute{Name: k, Type: graph.AttrFloats, Floats: v}
	return a
}

// ---- tests ----

// TestHandComputed checks a 1-unit RNN, GRU and LSTM against values worked
// out from the formulas.
func TestHandComputed(t *testing.T) {
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	X := []float64{1, 2} // S=2, B=1, I=1
	// RNN: h1 = tanh(0.5*1 + 0.1 + 0.2), h2 = tanh(0.5*2 + 0.25*h1 + 0.3)
	h1 := math.Tanh(0.8)
	h2 := math.Tanh(1.3 + 0.25*h1)
	n := &graph.Node{OpType: "RNN", Inputs: []string{"x", "w", "r", "b"}, Outputs: []string{"y", "yh"}, Attrs: attrSet{}.int("hidden_size", 1)}
	outs, err := runOp(t, 7, n, []*graph.Tensor{
		tensor(graph.Float32, []int{2, 1, 1}, X), tensor(graph.Float32, []int{1, 1, 1}, []float64{0.5}),
		tensor(graph.Float32, []int{1, 1, 1}, []float64{0.25}), tensor(graph.Float32, []int{1, 2}, []float64{0.1, 0.2})})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "RNN Y", outs[0], []float64{h1, h2}, 1e-6)
	checkClose(t, "RNN Y_h", outs[1], []float64{h2}, 1e-6)

	// GRU, W = [z r h] = [1 1 1], R = [0.5 0.5 0.5], no bias, h0 = 0.
	// step 1: z = sig(1), r = sig(1), hh = tanh(1 + 0) , h = (1-z)*hh
	z := sig(1)
	g1 := (1 - z) * math.Tanh(1)
	// step 2 (x=2): z = r = sig(2 + 0.5*g1); hh = tanh(2 + 0.5*(r*g1))
	z2 := sig(2 + 0.5*g1)
	g2 := (1-z2)*math.Tanh(2+0.5*z2*g1) + z2*g1
	// with linear_before_reset: hh = tanh(2 + r*(0.5*g1)) — equal here since Rbh = 0
	for _, lbr := range []int64{0, 1} {
		n = &graph.Node{OpType: "GRU", Inputs: []string{"x", "w", "r"}, Outputs: []string{"", "yh"}, Attrs: attrSet{}.int("linear_before_reset", lbr)}
		outs, err = runOp(t, 14, n, []*graph.Tensor{
			tensor(graph.Float64, []int{2, 1, 1}, X), tensor(graph.Float64, []int{1, 3, 1}, []float64{1, 1, 1}),
			tensor(graph.Float64, []int{1, 3, 1}, []float64{0.5, 0.5, 0.5})})
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, "GRU Y_h", outs[1], []float64{g2}, 1e-12)
	}

	// LSTM, one step x=1, W = [i o f c] = [1 2 3 4], R = 0, c0 = 0.5, h0 = 0
	// i = sig(1), o = sig(2), f = sig(3), c = f*0.5 + i*tanh(4), h = o*tanh(c)
	cN := sig(3)*0.5 + sig(1)*math.Tanh(4)
	hN := sig(2) * math.Tanh(cN)
	n = &graph.Node{OpType: "LSTM", Inputs: []string{"x", "w", "r", "", "", "h0", "c0"}, Outputs: []string{"y", "yh", "yc"}}
	outs, err = runOp(t, 22, n, []*graph.Tensor{
		tensor(graph.Float32, []int{1, 1, 1}, []float64{1}), tensor(graph.Float32, []int{1, 4, 1}, []float64{1, 2, 3, 4}),
		tensor(graph.Float32, []int{1, 4, 1}, []float64{0, 0, 0, 0}), nil, nil,
		tensor(graph.Float32, []int{1, 1, 1}, []float64{0}), tensor(graph.Float32, []int{1, 1, 1}, []float64{0.5})})
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "LSTM Y", outs[0], []float64{hN}, 1e-6)
	checkClose(t, "LSTM Y_h", outs[1], []float64{hN}, 1e-6)
	checkClose(t, "LSTM Y_c", outs[2], []float64{cN}, 1e-6)
}

type refCase struct {
	name        string
	kind        cellKind
	S, B, I, H  int
	dir         string
	layout      int
	bias, h0    bool
	c0, peep    bool
	lens        []int
	acts        []string
	alphas      []float32 // as given to the op
	betas       []float32
	refAlpha    []float64 // per activation, as the reference should use them
	refBeta     []float64
	clip        float32
	inputForget bool
	lbr         bool
	dtype       graph.DType
	outputs     []string
}

func TestAgainstReference(t *testing.T) {
	cases := []refCase{
		{name: "rnn fwd", kind: kindRNN, S: 3, B: 2, I: 4, H: 5, dir: "forward", bias: true},
		{name: "rnn reverse h0", kind: kindRNN, S: 4, B: 3, I: 2, H: 3, dir: "reverse", h0: true},
		{name: "rnn bidi lens", kind: kindRNN, S: 5, B: 3, I: 3, H: 4, dir: "bidirectional", bias: true, h0: true, lens: []int{5, 2, 0}},
		{name: "rnn relu", kind: kindRNN, S: 3, B: 2, I: 2, H: 2, dir: "forward", acts: []string{"Relu"}, bias: true},
		{name: "rnn bidi acts alphas", kind: kindRNN, S: 3, B: 2, I: 3, H: 3, dir: "bidirectional", acts: []string{"LeakyRelu", "ScaledTanh"},
			alphas: []float32{0.3, 1.5}, betas: []float32{0.7}, refAlpha: []float64{0.3, 1.5}, refBeta: []float64{0, 0.7}},
		{name: "rnn affine elu", kind: kindRNN, S: 2, B: 1, I: 2, H: 3, dir: "bidirectional", acts: []string{"Affine", "Elu"},
			alphas: []float32{2, 0.5}, betas: []float32{-0.25}, refAlpha: []float64{2, 0.5}, refBeta: []float64{-0.25, 0}},
		{name: "rnn defaults for alpha", kind: kindRNN, S: 2, B: 2, I: 2, H: 3, dir: "bidirectional", acts: []string{"HardSigmoid", "ThresholdedRelu"},
			refAlpha: []float64{0.2, 1}, refBeta: []float64{0.5, 0}},
		{name: "rnn softsign softplus", kind: kindRNN, S: 3, B: 2, I: 2, H: 3, dir: "bidirectional", acts: []string{"Softsign", "Softplus"}},
		{name: "rnn layout1", kind: kindRNN, S: 3, B: 2, I: 3, H: 2, dir: "bidirectional", layout: 1, bias: true, h0: true},
		{name: "rnn clip", kind: kindRNN, S: 3, B: 2, I: 3, H: 4, dir: "forward", acts: []string{"Relu"}, clip: 0.3, bias: true},
		{name: "gru fwd", kind: kindGRU, S: 3, B: 2, I: 4, H: 5, dir: "forward", bias: true},
		{name: "gru lbr", kind: kindGRU, S: 3, B: 2, I: 4, H: 5, dir: "forward", bias: true, h0: true, lbr: true},
		{name: "gru bidi lens lbr", kind: kindGRU, S: 4, B: 3, I: 2, H: 3, dir: "bidirectional", bias: true, h0: true, lbr: true, lens: []int{1, 4, 3}},
		{name: "gru reverse lens", kind: kindGRU, S: 4, B: 3, I: 2, H: 3, dir: "reverse", bias: true, h0: true, lens: []int{2, 4, 0}},
		{name: "gru layout1 clip", kind: kindGRU, S: 3, B: 2, I: 3, H: 6, dir: "bidirectional", layout: 1, bias: true, clip: 0.5},
		{name: "gru acts", kind: kindGRU, S: 3, B: 2, I: 3, H: 3, dir: "forward", acts: []string{"HardSigmoid", "Softsign"},
			alphas: []float32{0.3}, betas: []float32{0.4}, refAlpha: []float64{0.3, 0}, refBeta: []float64{0.4, 0}},
		{name: "lstm fwd", kind: kindLSTM, S: 3, B: 2, I: 4, H: 5, dir: "forward", bias: true},
		{name: "lstm peep h0 c0", kind: kindLSTM, S: 4, B: 3, I: 3, H: 4, dir: "forward", bias: true, h0: true, c0: true, peep: true},
		{name: "lstm bidi lens", kind: kindLSTM, S: 5, B: 3, I: 3, H: 4, dir: "bidirectional", bias: true, h0: true, c0: true, peep: true, lens: []int{3, 5, 1}},
		{name: "lstm reverse lens zero", kind: kindLSTM, S: 3, B: 3, I: 3, H: 4, dir: "reverse", bias: true, h0: true, c0: true, lens: []int{0, 2, 3}},
		{name: "lstm reverse", kind: kindLSTM, S: 4, B: 2, I: 2, H: 3, dir: "reverse", bias: true, c0: true},
		{name: "lstm input_forget", kind: kindLSTM, S: 3, B: 2, I: 3, H: 4, dir: "forward", bias: true, c0: true, peep: true, inputForget: true},
		{name: "lstm layout1 clip", kind: kindLSTM, S: 3, B: 3, I: 2, H: 5, dir: "bidirectional", layout: 1, bias: true, h0: true, c0: true, clip: 0.4},
		{name: "lstm acts", kind: kindLSTM, S: 3, B: 2, I: 3, H: 3, dir: "bidirectional",
			acts:   []string{"HardSigmoid", "ScaledTanh", "Tanh", "Sigmoid", "Softsign", "Elu"},
			alphas: []float32{0.25, 0.9, 0.8}, betas: []float32{0.45, 1.1}, refAlpha: []float64{0.25, 0.9, 0, 0, 0, 0.8}, refBeta: []float64{0.45, 1.1, 0, 0, 0, 0}},
		{name: "lstm acts for both directions", kind: kindLSTM, S: 2, B: 2, I: 2, H: 3, dir: "bidirectional", acts: []string{"Sigmoid", "Relu", "Softsign"}},
		{name: "lstm float64", kind: kindLSTM, S: 3, B: 2, I: 3, H: 4, dir: "bidirectional", bias: true, peep: true, dtype: graph.Float64},
		{name: "lstm float16", kind: kindLSTM, S: 3, B: 2, I: 3, H: 4, dir: "forward", bias: true, h0: true, dtype: graph.Float16},
		{name: "gru bfloat16", kind: kindGRU, S: 2, B: 2, I: 3, H: 4, dir: "reverse", bias: true, dtype: graph.BFloat16},
		{name: "lstm only Y_c", kind: kindLSTM, S: 3, B: 2, I: 2, H: 3, dir: "forward", bias: true, outputs: []string{"", "", "yc"}},
		{name: "rnn only Y", kind: kindRNN, S: 3, B: 2, I: 2, H: 3, dir: "forward", bias: true, outputs: []string{"y"}},
		{name: "large lstm (parallel projection)", kind: kindLSTM, S: 40, B: 5, I: 64, H: 48, dir: "bidirectional", bias: true, lens: []int{40, 17, 3, 40, 39}},
		{name: "empty seq", kind: kindGRU, S: 0, B: 2, I: 2, H: 3, dir: "forward", h0: true},
		{name: "empty batch", kind: kindLSTM, S: 2, B: 0, I: 2, H: 3, dir: "bidirectional"},
		{name: "zero input size", kind: kindLSTM, S: 2, B: 2, I: 0, H: 3, dir: "forward", bias: true},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runRefCase(t, tc, int64(ci)) })
	}
}

func runRefCase(t *testing.T, tc refCase, seed int64) {
	rng := rand.New(rand.NewSource(seed + 1))
	D := 1
	if tc.dir == "bidirectional" {
		D = 2
	}
	ci := cells[tc.kind]
	G := ci.gates * tc.H
	S, B, I, H := tc.S, tc.B, tc.I, tc.H
	dt := tc.dtype
	if dt == graph.Undefined {
		dt = graph.Float32
	}
	p := &refProblem{kind: tc.kind, S: S, B: B, I: I, H: H, D: D, reverse: tc.dir == "reverse",
		clip: float64(tc.clip), inputForget: tc.inputForget, lbr: tc.lbr}
	round := func(v []float64) []float64 { // to the tensor dtype, so both sides see the same inputs
		if v == nil {
			return nil
		}
		return tensor(dt, []int{len(v)}, v).Float64s()
	}
	p.X = round(randVals(rng, S*B*I, 1.5))
	p.W = round(randVals(rng, D*G*I, 0.8))
	p.R = round(randVals(rng, D*G*H, 0.8))
	if tc.bias {
		p.Bias = round(randVals(rng, D*2*G, 0.5))
	}
	if tc.h0 {
		p.H0 = round(randVals(rng, D*B*H, 1))
	}
	if tc.c0 {
		p.C0 = round(randVals(rng, D*B*H, 1))
	}
	if tc.peep {
		p.P = round(randVals(rng, D*3*H, 0.7))
	}
	p.lens = tc.lens
	if p.lens == nil {
		p.lens = make([]int, B)
		for i := range p.lens {
			p.lens[i] = S
		}
	}
	names := tc.acts
	if names == nil {
		names = ci.defaultActs
	}
	refNames := names
	if len(refNames) < ci.nact*D {
		refNames = append(append([]string{}, names...), names...)
	}
	ra, rb := tc.refAlpha, tc.refBeta
	if ra == nil {
		ra = make([]float64, len(refNames))
	}
	if rb == nil {
		rb = make([]float64, len(refNames))
	}
	if len(ra) < len(refNames) {
		ra = append(append([]float64{}, ra...), ra...)
		rb = append(append([]float64{}, rb...), rb...)
	}
	p.acts = refActs(t, refNames, ra, rb)
	wantY, wantYh, wantYc := p.reference()

	// Build the node and its inputs in the op's layout.
	a := attrSet{}.str("direction", tc.dir).int("hidden_size", int64(H))
	if tc.acts != nil {
		a.strs("activations", tc.acts...)
	}
	if tc.alphas != nil {
		a.flts("activation_alpha", tc.alphas...)
	}
	if tc.betas != nil {
		a.flts("activation_beta", tc.betas...)
	}
	if tc.clip > 0 {
		a.flt("clip", tc.clip)
	}
	if tc.layout != 0 {
		a.int("layout", int64(tc.layout))
	}
	if tc.inputForget {
		a.int("input_forget", 1)
	}
	if tc.lbr {
		a.int("linear_before_reset", 1)
	}
	X, H0, C0 := p.X, p.H0, p.C0
	xShape, stShape := []int{S, B, I}, []int{D, B, H}
	if tc.layout == 1 {
		X = swap3(X, S, B, I)
		xShape = []int{B, S, I}
		stShape = []int{B, D, H}
		if H0 != nil {
			H0 = swap3(H0, D, B, H)
		}
		if C0 != nil {
			C0 = swap3(C0, D, B, H)
		}
	}
	in := []*graph.Tensor{tensor(dt, xShape, X), tensor(dt, []int{D, G, I}, p.W), tensor(dt, []int{D, G, H}, p.R),
		tensor(dt, []int{D, 2 * G}, p.Bias), nil, tensor(dt, stShape, H0)}
	if tc.lens != nil {
		l := make([]int32, B)
		for i, v := range tc.lens {
			l[i] = int32(v)
		}
		in[4] = graph.MustFromSlice([]int{B}, l)
	}
	if tc.kind == kindLSTM {
		in = append(in, tensor(dt, stShape, C0), tensor(dt, []int{D, 3 * H}, p.P))
	}
	inNames := make([]string, len(in))
	for i, x := range in {
		if x != nil {
			inNames[i] = "in"
		}
	}
	outNames := tc.outputs
	if outNames == nil {
		outNames = []string{"y", "yh", "yc"}[:ci.maxOutputs]
	}
	n := &graph.Node{OpType: opName(tc.kind), Inputs: inNames, Outputs: outNames, Attrs: a}
	outs, err := runOp(t, 22, n, in)
	if err != nil {
		t.Fatal(err)
	}
	tol := 1e-5
	switch dt {
	case graph.Float64:
		tol = 1e-12
	case graph.Float16:
		tol = 2e-3
	case graph.BFloat16:
		tol = 1e-2
	}
	if tc.layout == 1 {
		wantY = swap3(wantY, S*D, B, H)
		wantYh = swap3(wantYh, D, B, H)
		wantYc = swap3(wantYc, D, B, H)
	}
	for i, want := range [][]float64{wantY, wantYh, wantYc} {
		if i < len(outs) && outs[i] != nil {
			if outs[i].DType != dt {
				t.Fatalf("output %d dtype %v", i, outs[i].DType)
			}
			checkClose(t, outNames[i], outs[i], want, tol)
		}
	}
}

// TestOpsetBehaviour: before opset 14 layout is ignored; before opset 3 GRU
// ignores linear_before_reset.
func TestOpsetBehaviour(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	x := tensor(graph.Float32, []int{2, 3, 2}, randVals(rng, 12, 1))
	w := tensor(graph.Float32, []int{1, 9, 2}, randVals(rng, 18, 1))
	r := tensor(graph.Float32, []int{1, 9, 3}, randVals(rng, 27, 1))
	b := tensor(graph.Float32, []int{1, 18}, randVals(rng, 18, 1))
	run := func(opset int64, a attrSet) []float64 {
		n := &graph.Node{OpType: "GRU", Inputs: []string{"x", "w", "r", "b"}, Outputs: []string{"y", "yh"}, Attrs: a}
		outs, err := runOp(t, opset, n, []*graph.Tensor{x, w, r, b})
		if err != nil {
			t.Fatal(err)
		}
		return outs[0].Float64s()
	}
	plain := run(13, attrSet{})
	if got := run(13, attrSet{}.int("layout", 1)); !equal(got, plain) {
		t.Errorf("layout changed the result at opset 13")
	}
	if got := run(14, attrSet{}.int("layout", 1)); equal(got, plain) {
		t.Errorf("layout=1 ignored at opset 14")
	}
	if got := run(1, attrSet{}.int("linear_before_reset", 1)); !equal(got, plain) {
		t.Errorf("linear_before_reset honoured at opset 1")
	}
	if got := run(3, attrSet{}.int("linear_before_reset", 1)); equal(got, plain) {
		t.Errorf("linear_before_reset ignored at opset 3")
	}
}

func equal(a, b []float64) bool {
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

func TestInvalid(t *testing.T) {
	f := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return tensor(graph.Float32, shape, make([]float64, n))
	}
	x, w, r := f(2, 1, 3), f(1, 16, 3), f(1, 16, 4)
	cases := []struct {
		name  string
		a     attrSet
		in    []*graph.Tensor
		unsup bool
	}{
		{"bad direction", attrSet{}.str("direction", "sideways"), []*graph.Tensor{x, w, r}, false},
		{"hidden mismatch", attrSet{}.int("hidden_size", 5), []*graph.Tensor{x, w, r}, false},
		{"W shape", attrSet{}, []*graph.Tensor{x, f(1, 12, 3), r}, false},
		{"X rank", attrSet{}, []*graph.Tensor{f(2, 3), w, r}, false},
		{"B shape", attrSet{}, []*graph.Tensor{x, w, r, f(1, 16)}, false},
		{"seq lens too long", attrSet{}, []*graph.Tensor{x, w, r, nil, graph.MustFromSlice([]int{1}, []int32{3})}, false},
		{"seq lens negative", attrSet{}, []*graph.Tensor{x, w, r, nil, graph.MustFromSlice([]int{1}, []int32{-1})}, false},
		{"seq lens shape", attrSet{}, []*graph.Tensor{x, w, r, nil, graph.MustFromSlice([]int{2}, []int32{1, 1})}, false},
		{"initial_h shape", attrSet{}, []*graph.Tensor{x, w, r, nil, nil, f(2, 1, 4)}, false},
		{"P shape", attrSet{}, []*graph.Tensor{x, w, r, nil, nil, nil, nil, f(1, 16)}, false},
		{"dtype mismatch", attrSet{}, []*graph.Tensor{x, tensor(graph.Float64, []int{1, 16, 3}, make([]float64, 48)), r}, false},
		{"activation count", attrSet{}.strs("activations", "Sigmoid", "Tanh"), []*graph.Tensor{x, w, r}, false},
		{"negative clip", attrSet{}.flt("clip", -1), []*graph.Tensor{x, w, r}, false},
		{"bad layout", attrSet{}.int("layout", 2), []*graph.Tensor{x, w, r}, false},
		{"unknown activation", attrSet{}.strs("activations", "Sigmoid", "Tanh", "Gelu"), []*graph.Tensor{x, w, r}, true},
		{"int dtype", attrSet{}, []*graph.Tensor{graph.MustFromSlice([]int{2, 1, 3}, make([]int32, 6)), w, r}, true},
	}
	for _, tc := range cases {
		names := make([]string, len(tc.in))
		for i, x := range tc.in {
			if x != nil {
				names[i] = "in"
			}
		}
		n := &graph.Node{OpType: "LSTM", Inputs: names, Outputs: []string{"y", "yh", "yc"}, Attrs: tc.a}
		s, _ := kernels.Lookup("", "LSTM")
		_, err := s.Kernel(&kernels.Context{Opset: 22}, n, tc.in)
		want := kernels.ErrInvalid
		if tc.unsup {
			want = kernels.ErrUnsupported
		}
		if !errors.Is(err, want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, want)
		}
	}
}

func TestInferUnknown(t *testing.T) {
	s, _ := kernels.Lookup("", "LSTM")
	n := &graph.Node{OpType: "LSTM", Inputs: []string{"x", "w", "r"}, Outputs: []string{"y", "yh", ""},
		Attrs: attrSet{}.str("direction", "bidirectional").int("layout", 1)}
	x := graph.ValueType{Kind: "tensor", DType: graph.Float16, Shape: graph.Shape{{Param: "batch"}, {Value: -1}, {Value: 8}}}
	types, err := s.Infer(n, 14, []kernels.InferInput{{Type: x}, {}, {Type: graph.ValueType{Kind: "tensor", DType: graph.Float16, Shape: graph.StaticShape(2, 16, 4)}}})
	if err != nil {
		t.Fatal(err)
	}
	if types[0].DType != graph.Float16 || types[0].Shape.String() != "[batch,?,2,4]" || types[1].Shape.String() != "[batch,2,4]" {
		t.Fatalf("got %v %v", types[0], types[1])
	}
}

func TestGemm(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, dims := range [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 8, 0}, {7, 9, 13}, {64, 64, 600}} {
		m, n, k := dims[0], dims[1], dims[2]
		a, b := f32(randVals(rng, m*k, 1)), f32(randVals(rng, n*k, 1))
		c := make([]float32, m*n)
		gemmNTPar(m, n, k, a, b, c, n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want := 0.0
				for p := 0; p < k; p++ {
					want += float64(a[i*k+p]) * float64(b[j*k+p])
				}
				if math.Abs(float64(c[i*n+j])-want) > 1e-4*math.Max(1, math.Abs(want)) {
					t.Fatalf("%v: c[%d,%d] = %v, want %v", dims, i, j, c[i*n+j], want)
				}
			}
		}
	}
}

func BenchmarkLSTM(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	S, B, I, H := 64, 1, 128, 128
	x := tensor(graph.Float32, []int{S, B, I}, randVals(rng, S*B*I, 1))
	w := tensor(graph.Float32, []int{1, 4 * H, I}, randVals(rng, 4*H*I, 0.1))
	r := tensor(graph.Float32, []int{1, 4 * H, H}, randVals(rng, 4*H*H, 0.1))
	bias := tensor(graph.Float32, []int{1, 8 * H}, randVals(rng, 8*H, 0.1))
	n := &graph.Node{OpType: "LSTM", Inputs: []string{"x", "w", "r", "b"}, Outputs: []string{"y", "yh", "yc"}, Attrs: attrSet{}}
	s, _ := kernels.Lookup("", "LSTM")
	ctx := &kernels.Context{Opset: 14}
	for b.Loop() {
		if _, err := s.Kernel(ctx, n, []*graph.Tensor{x, w, r, bias}); err != nil {
			b.Fatal(err)
		}
	}
}

// The reference recurrence below is written against its own table of
// gate and activation counts, independent of core/ops/rnn's.
type cellKind = rnnops.CellKind

const (
	kindRNN  = rnnops.KindRNN
	kindGRU  = rnnops.KindGRU
	kindLSTM = rnnops.KindLSTM
)

var cells = map[cellKind]struct {
	gates, nact, maxOutputs int
	defaultActs             []string
}{
	kindRNN:  {gates: 1, nact: 1, maxOutputs: 2, defaultActs: []string{"Tanh"}},
	kindGRU:  {gates: 3, nact: 2, maxOutputs: 2, defaultActs: []string{"Sigmoid", "Tanh"}},
	kindLSTM: {gates: 4, nact: 3, maxOutputs: 3, defaultActs: []string{"Sigmoid", "Tanh", "Tanh"}},
}
