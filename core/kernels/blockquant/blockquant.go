// Package blockquant holds the switchyard.blockquant operator domain and
// its reference kernel: BlockQuantMatMul, a matrix product with a weight
// kept in group-wise quantized form (int8 like GGUF's and llama2.c's
// Q8_0, or 4-bit like GGUF's Q4_0), so a quantized language model's
// weights stay quantized in memory. formats/llama builds graphs with it.
//
// BlockQuantMatMul(A, B, scales) with attributes N, K, bits (8 or 4) and
// block_size: A is float32 [..., K]; B holds the weight W [N, K] (row n
// is output feature n, the nn.Linear layout) as int8 values (bits 8,
// shape [N, K]) or as packed unsigned nibbles stored q+8 (bits 4, shape
// [N·K/2], element i of the row-major W in byte i/2, the low nibble for
// even i); scales is float32 [N·K/block_size], one per block_size
// consecutive elements of the row-major W (a block may span rows, as
// llama2.c's export does). The output is float32 [..., N]:
//
//	Y[m, n] = Σ_k A[m, k] · scales[(n·K+k)/block_size] · q(n, k)
//
// accumulated in float64 and rounded once to float32: exactly the product
// with W dequantised (scale·q), up to that rounding.
//
// With the string attribute type (a ggml block-quantized type name:
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K; F16 or
// BF16, 16-bit values; or F32), W keeps ggml's own layout, as a GGUF file
// stores it (core/ggml describes each): B is uint8 [N, R], R the bytes of
// a row of K elements (K a multiple of the type's block, 32 or 256, or 1
// for F32, F16 and BF16: R = 4K or 2K), and there is no scales input
// (bits and block_size are ignored). The weight is dequantized exactly as
// ggml does (core/ggml.Dequantize), a row at a time, and the product
// accumulated in float64 and rounded once, as above.
//
// BlockQuantGather (gather.go) looks rows up in such a typed table (a
// token embedding), dequantizing only the rows asked.
package blockquant

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// Domain is the operator domain of this package.
const Domain = "switchyard.blockquant"

// OpType is the block-quantized matrix product.
const OpType = "BlockQuantMatMul"

func init() {
	kernels.Register(kernels.Schema{
		Domain: Domain, OpType: OpType, MinOpset: 1, MaxOpset: 1,
		MinInputs: 2, MaxInputs: 3, Types: []graph.DType{graph.Float32},
		Infer: infer, Kernel: kernel,
	})
}

func infer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	return floatOut(n, "N", in[0].Type.Shape, true)
}

// floatOut infers a float32 output of shape s (less its last dim, A's K,
// when dropLast) followed by the positive attribute attr; an unknown s
// gives an unknown shape.
func floatOut(n *graph.Node, attr string, s graph.Shape, dropLast bool) ([]graph.ValueType, error) {
	v := n.AttrInt(attr, 0)
	if v <= 0 {
		return nil, ops.Invalidf(n, "attribute %s must be positive", attr)
	}
	if s == nil {
		return []graph.ValueType{{Kind: "tensor", DType: graph.Float32}}, nil
	}
	if dropLast {
		if len(s) == 0 {
			return nil, ops.Invalidf(n, "A must have rank >= 1")
		}
		s = s[:len(s)-1]
	}
	out := append(append(graph.Shape{}, s...), graph.Dim{Value: v})
	return []graph.ValueType{{Kind: "tensor", DType: graph.Float32, Shape: out}}, nil
}

// params checks the node's attributes against its inputs.
func params(n *graph.Node, a, b, sc *graph.Tensor) (N, K, bits, block int, err error) {
	N, K = int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	bits, block = int(n.AttrInt("bits", 8)), int(n.AttrInt("block_size", 32))
	if N <= 0 || K <= 0 || block <= 0 {
		return 0, 0, 0, 0, kernels.Invalidf(n, "N %d, K %d and block_size %d must be positive", N, K, block)
	}
	if (N*K)%block != 0 {
		return 0, 0, 0, 0, kernels.Invalidf(n, "N·K = %d is not a whole number of %d-element blocks", N*K, block)
	}
	if a.DType != graph.Float32 || a.Rank() == 0 || a.Shape[a.Rank()-1] != K {
		return 0, 0, 0, 0, kernels.Invalidf(n, "A must be float32 [..., %d], got %v%v", K, a.DType, a.Shape)
	}
	switch bits {
	case 8:
		if b.DType != graph.Int8 || !graph.SameShape(b.Shape, []int{N, K}) {
			return 0, 0, 0, 0, kernels.Invalidf(n, "8-bit B must be int8 [%d %d], got %v%v", N, K, b.DType, b.Shape)
		}
	case 4:
		if (N*K)%2 != 0 || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N * K / 2}) {
			return 0, 0, 0, 0, kernels.Invalidf(n, "4-bit B must be uint8 [%d], got %v%v", N*K/2, b.DType, b.Shape)
		}
	default:
		return 0, 0, 0, 0, kernels.Unsupportedf(n, "bits %d (8 and 4 are supported)", bits)
	}
	if sc.DType != graph.Float32 || !graph.SameShape(sc.Shape, []int{N * K / block}) {
		return 0, 0, 0, 0, kernels.Invalidf(n, "scales must be float32 [%d], got %v%v", N*K/block, sc.DType, sc.Shape)
	}
	return N, K, bits, block, nil
}

func kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if n.AttrString("type", "") != "" {
		return typedKernel(ctx, n, in)
	}
	if len(in) < 3 {
		return nil, kernels.Invalidf(n, "needs A, B and scales (or the attribute type)")
	}
	a, b, sc := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	for i, what := range []string{"A", "B", "scales"} {
		if err := kernels.CheckInput(n, in[i], what); err != nil {
			return nil, err
		}
	}
	N, K, bits, block, err := params(n, a, b, sc)
	if err != nil {
		return nil, err
	}
	shape := append(append([]int{}, a.Shape[:a.Rank()-1]...), N)
	out, err := ctx.New(graph.Float32, shape)
	if err != nil {
		return nil, err
	}
	av, y, s := graph.Data[float32](a), graph.Data[float32](out), graph.Data[float32](sc)
	M := len(av) / K
	var q8 []int8
	var q4 []uint8
	if bits == 8 {
		q8 = graph.Data[int8](b)
	} else {
		q4 = graph.Data[uint8](b)
	}
	x := make([]float64, K) // the row of A, converted once for all N outputs
	for m := 0; m < M; m++ {
		if m%16 == 0 && ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		for i, v := range av[m*K : m*K+K] {
			x[i] = float64(v)
		}
		for j := 0; j < N; j++ {
			var acc float64
			base := j * K
			for k := 0; k < K; {
				// the run of row j inside one block
				e := base + k
				end := min(K, k+block-e%block)
				var blk float64
				if bits == 8 {
					w := q8[e : e+end-k]
					for i, q := range w {
						blk += x[k+i] * float64(q)
					}
				} else {
					for i := k; i < end; i++ {
						f := base + i
						blk += x[i] * float64(int(q4[f>>1]>>(4*(f&1))&15)-8)
					}
				}
				acc += float64(s[e/block]) * blk
				k = end
			}
			y[m*N+j] = float32(acc)
		}
	}
	return ctx.Outputs(out), nil
}

// Dequantise returns W [N, K] as float32 (scale·q rounded to float32),
// for tests and for weights that are used other than in a product (an
// embedding table's rows).
func Dequantise(bits, block int, q8 []int8, q4 []uint8, scales []float32, count int) []float32 {
	out := make([]float32, count)
	for i := range out {
		var q int
		if bits == 8 {
			q = int(q8[i])
		} else {
			q = int(q4[i>>1]>>(4*(i&1))&15) - 8
		}
		out[i] = float32(float64(scales[i/block]) * float64(q))
	}
	return out
}

// TypedWeight reports whether t is a type a typed node holds: a ggml
// block-quantized type, F16 or BF16 (16-bit values, a row of K of them 2K
// bytes), or F32 (a row 4K bytes).
func TypedWeight(t ggml.Type) bool {
	return t.Quantized() || t == ggml.F32 || t == ggml.F16 || t == ggml.BF16
}

// TypedParams checks a typed node's attributes (type, N, K) against A and
// B: the ggml type, N, K and the bytes of a row.
func TypedParams(n *graph.Node, a, b *graph.Tensor) (t ggml.Type, N, K, rowBytes int, err error) {
	name := n.AttrString("type", "")
	t, ok := ggml.ParseType(name)
	if !ok || !TypedWeight(t) {
		return 0, 0, 0, 0, kernels.Unsupportedf(n, "type %q is not a ggml block-quantized type, F32, F16 or BF16", name)
	}
	N, K = int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	if N <= 0 || K <= 0 || int64(N) > graph.MaxTensorBytes/int64(K) {
		return 0, 0, 0, 0, kernels.Invalidf(n, "N %d and K %d must be positive", N, K)
	}
	if rowBytes, err = t.RowBytes(K); err != nil {
		return 0, 0, 0, 0, kernels.Invalidf(n, "%v", err)
	}
	if a == nil || a.DType != graph.Float32 || a.Rank() == 0 || a.Shape[a.Rank()-1] != K {
		return 0, 0, 0, 0, kernels.Invalidf(n, "A must be float32 [..., %d]", K)
	}
	if b == nil || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N, rowBytes}) {
		return 0, 0, 0, 0, kernels.Invalidf(n, "%s B must be uint8 [%d %d]", t, N, rowBytes)
	}
	return t, N, K, rowBytes, nil
}

func typedKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if len(in) > 2 && in[2] != nil {
		return nil, kernels.Invalidf(n, "a typed weight takes no scales input")
	}
	a, b := kernels.Input(in, 0), kernels.Input(in, 1)
	for i, what := range []string{"A", "B"} {
		if err := kernels.CheckInput(n, in[i], what); err != nil {
			return nil, err
		}
	}
	t, N, K, rb, err := TypedParams(n, a, b)
	if err != nil {
		return nil, err
	}
	shape := append(append([]int{}, a.Shape[:a.Rank()-1]...), N)
	out, err := ctx.New(graph.Float32, shape)
	if err != nil {
		return nil, err
	}
	av, y, raw := graph.Data[float32](a), graph.Data[float32](out), graph.Data[uint8](b)
	M := len(av) / K
	w := make([]float32, K)
	for j := 0; j < N; j++ {
		if j%16 == 0 && ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		if err := ggml.Dequantize(t, raw[j*rb:(j+1)*rb], w); err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		for m := 0; m < M; m++ {
			var acc float64
			for i, v := range av[m*K : m*K+K] {
				acc += float64(v) * float64(w[i])
			}
			y[m*N+j] = float32(acc)
		}
	}
	return ctx.Outputs(out), nil
}
