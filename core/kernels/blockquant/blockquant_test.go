package blockquant_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	_ "github.com/switchyard-hal/switchyard/core/kernels/nn"
)

func node(N, K, bits, block int) *graph.Node {
	a := func(name string, v int) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInt, I: int64(v)}
	}
	return &graph.Node{OpType: blockquant.OpType, Domain: blockquant.Domain, Inputs: []string{"a", "b", "s"}, Outputs: []string{"y"},
		Attrs: map[string]*graph.Attribute{"N": a("N", N), "K": a("K", K), "bits": a("bits", bits), "block_size": a("block_size", block)}}
}

func run(t *testing.T, n *graph.Node, in ...*graph.Tensor) (*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup(n.Domain, n.OpType)
	if !ok {
		t.Fatalf("no kernel for %s", n.OpType)
	}
	out, err := s.Kernel(&kernels.Context{Opset: 1}, n, in)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// TestMatchesDequantisedMatMul: for int8 and 4-bit weights, blocks that
// span rows (K not a multiple of the block, as llama2.c's export has),
// BlockQuantMatMul equals the product with the dequantised weight: bit
// for bit against a float64 reference in the same order, and within
// float32 rounding against the MatMul kernel on the dequantised weight.
func TestMatchesDequantisedMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ M, N, K, bits, block int }{
		{1, 8, 64, 8, 32}, {3, 16, 172, 8, 64}, {2, 7, 64, 4, 32}, {4, 6, 20, 4, 8}, {1, 3, 12, 8, 36},
	} {
		nk := c.N * c.K
		scales := make([]float32, nk/c.block)
		for i := range scales {
			scales[i] = rng.Float32()*0.1 + 0.001
		}
		var b *graph.Tensor
		var q8 []int8
		var q4 []uint8
		if c.bits == 8 {
			q8 = make([]int8, nk)
			for i := range q8 {
				q8[i] = int8(rng.IntN(255) - 127)
			}
			b = graph.MustFromSlice([]int{c.N, c.K}, q8)
		} else {
			q4 = make([]uint8, nk/2)
			for i := range q4 {
				q4[i] = uint8(rng.IntN(256))
			}
			b = graph.MustFromSlice([]int{nk / 2}, q4)
		}
		av := make([]float32, c.M*c.K)
		for i := range av {
			av[i] = rng.Float32()*2 - 1
		}
		a := graph.MustFromSlice([]int{1, c.M, c.K}, av)
		y, err := run(t, node(c.N, c.K, c.bits, c.block), a, b, graph.MustFromSlice([]int{len(scales)}, scales))
		if err != nil {
			t.Fatal(err)
		}
		if !graph.SameShape(y.Shape, []int{1, c.M, c.N}) {
			t.Fatalf("%+v: output shape %v", c, y.Shape)
		}
		w := blockquant.Dequantise(c.bits, c.block, q8, q4, scales, nk)
		// the float64 reference, block by block as the kernel sums
		yv := graph.Data[float32](y)
		for m := 0; m < c.M; m++ {
			for j := 0; j < c.N; j++ {
				var acc, blk float64
				for k := 0; k < c.K; k++ {
					e := j*c.K + k
					var q float64
					if c.bits == 8 {
						q = float64(q8[e])
					} else {
						q = float64(int(q4[e/2]>>(4*(e%2))&15) - 8)
					}
					blk += float64(av[m*c.K+k]) * q
					if (e+1)%c.block == 0 || k == c.K-1 {
						acc += float64(scales[e/c.block]) * blk
						blk = 0
					}
				}
				if got := yv[m*c.N+j]; got != float32(acc) {
					t.Fatalf("%+v: y[%d,%d] = %v, float64 reference %v", c, m, j, got, float32(acc))
				}
			}
		}
		// against MatMul(A, Wᵀ) on the dequantised weight
		wt := make([]float32, nk)
		for j := 0; j < c.N; j++ {
			for k := 0; k < c.K; k++ {
				wt[k*c.N+j] = w[j*c.K+k]
			}
		}
		mm, err := run(t, &graph.Node{OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}, a, graph.MustFromSlice([]int{c.K, c.N}, wt))
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range graph.Data[float32](mm) {
			if d := math.Abs(float64(v - yv[i])); d > 1e-5*(1+math.Abs(float64(v))) {
				t.Fatalf("%+v: element %d: BlockQuantMatMul %v, MatMul of the dequantised weight %v", c, i, yv[i], v)
			}
		}
	}
}

// TestRefusesBadInputs: wrong shapes, dtypes, blocks and bit widths are
// errors naming the problem.
func TestRefusesBadInputs(t *testing.T) {
	a := graph.MustFromSlice([]int{1, 4}, []float32{1, 2, 3, 4})
	q := graph.MustFromSlice([]int{2, 4}, make([]int8, 8))
	s := graph.MustFromSlice([]int{2}, []float32{1, 1})
	for _, c := range []struct {
		n    *graph.Node
		in   []*graph.Tensor
		want string
	}{
		{node(2, 4, 8, 4), []*graph.Tensor{a, q, graph.MustFromSlice([]int{1}, []float32{1})}, "scales"},
		{node(2, 4, 8, 3), []*graph.Tensor{a, q, s}, "blocks"},
		{node(2, 5, 8, 5), []*graph.Tensor{a, q, s}, "A must be"},
		{node(2, 4, 4, 4), []*graph.Tensor{a, q, s}, "4-bit"},
		{node(2, 4, 2, 4), []*graph.Tensor{a, q, s}, "bits 2"},
		{node(0, 4, 8, 4), []*graph.Tensor{a, q, s}, "positive"},
	} {
		_, err := run(t, c.n, c.in...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one with %q", c.n.Attrs, err, c.want)
		}
	}
}

// TestTypedNode: a node with the type attribute multiplies by W kept in
// ggml's block layout: the output equals the float64 product with W
// dequantised by core/ggml (which its own tests check against hand-packed
// blocks), and malformed typed nodes are refused.
func TestTypedNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const N, K, M = 3, 256, 2
	for _, ty := range []ggml.Type{ggml.Q4_1, ggml.Q5_0, ggml.Q2_K, ggml.Q4_K, ggml.Q6_K} {
		rb, _ := ty.RowBytes(K)
		raw := make([]byte, N*rb)
		for i := range raw {
			raw[i] = byte(rng.IntN(256))
		}
		// small float16 scales everywhere a block has one: clear the
		// exponent's top bits of every halfword a scale may sit at
		for b := 0; b < len(raw); b += ty.BlockBytes() {
			for _, o := range []int{0, 2, 80, 82, 108, 208} {
				if o+2 <= ty.BlockBytes() {
					raw[b+o+1] &= 0x23
				}
			}
		}
		attrs := map[string]*graph.Attribute{
			"N":    {Name: "N", Type: graph.AttrInt, I: N},
			"K":    {Name: "K", Type: graph.AttrInt, I: K},
			"type": {Name: "type", Type: graph.AttrString, S: ty.String()},
		}
		n := &graph.Node{OpType: blockquant.OpType, Domain: blockquant.Domain, Inputs: []string{"a", "b"}, Outputs: []string{"y"}, Attrs: attrs}
		av := make([]float32, M*K)
		for i := range av {
			av[i] = rng.Float32()*2 - 1
		}
		y, err := run(t, n, graph.MustFromSlice([]int{M, K}, av), graph.MustFromSlice([]int{N, rb}, raw))
		if err != nil {
			t.Fatalf("%s: %v", ty, err)
		}
		w := make([]float32, N*K)
		if err := ggml.Dequantize(ty, raw, w); err != nil {
			t.Fatal(err)
		}
		for m := 0; m < M; m++ {
			for j := 0; j < N; j++ {
				var acc float64
				for k := 0; k < K; k++ {
					acc += float64(av[m*K+k]) * float64(w[j*K+k])
				}
				if got := graph.Data[float32](y)[m*N+j]; got != float32(acc) {
					t.Errorf("%s [%d %d] = %v, want %v", ty, m, j, got, float32(acc))
				}
			}
		}
		// refused: B of the wrong shape, a scales input, K not whole blocks
		if _, err := run(t, n, graph.MustFromSlice([]int{M, K}, av), graph.MustFromSlice([]int{N*rb - 1}, raw[1:])); err == nil {
			t.Errorf("%s: a short B was accepted", ty)
		}
		attrs["K"].I = K + 32
		if _, err := run(t, n, graph.MustFromSlice([]int{M, K + 32}, make([]float32, M*(K+32))), graph.MustFromSlice([]int{N, rb}, raw)); err == nil {
			t.Errorf("%s: K of %d was accepted", ty, K+32)
		}
	}
}
