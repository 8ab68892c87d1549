//go:generate go run ./internal/asmgenbq -out blockquant_amd64.s -stubs blockquant_stubs_amd64.go -pkg native
//go:generate go run ./internal/asmgenbqi -out blockquant_int_amd64.s -stubs blockquant_int_stubs_amd64.go -pkg native

package native

import (
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
)

// BlockQuantMatMul (domain switchyard.blockquant; the operator and its
// reference kernel are core/kernels/blockquant's): Y = A·Wᵀ with W [N, K]
// held as int8 (Q8_0-style) or packed 4-bit (Q4_0-style) values with one
// float32 scale per block_size consecutive elements of the row-major W.
//
// The weights stay quantized: Compile keeps the initializers' int8 or
// packed bytes and scales as they are (no dequantised float32 copy; the
// kernel's memory is the model's, 1.125 or 0.625 bytes a weight for
// blocks of 32). Each output is a float32 dot product of the row of A
// with the row of W dequantised on the fly, block by block:
//
//	Y[m, n] = Σ_b s_b · Σ_{k in block b} A[m, k] · q(n, k)
//
// summed in float32 (the reference sums in float64 and rounds once).
// Where every row of W is whole blocks of a multiple of 32 (GGUF's Q8_0
// and Q4_0 always are) this runs in AVX2+FMA assembly (internal/asmgenbq:
// int8 or nibbles widened to int32, converted to float32, FMA into
// 8-lane accumulators) when the CPU has it; otherwise, and for blocks
// that span rows (llama2.c's int8 export with a hidden size that is not a
// multiple of its group), the portable Go loop computes the same sums in
// scalar order. Either way the error against the exact product is a
// float32 dot product's: at most about (K+2)·2⁻²⁴·Σ_k |A[m,k]·w(n,k)|
// (Higham's γ bound for a K-term sum and the scale's product), which the
// tests check against the reference kernel.
//
// By default the activations are never quantized and the executable
// computes in float32. Compiled with the opt-in hal.PrecisionInt8
// (switchyard.OpenOptions.Precision, `--precision int8`), nodes whose blocks
// are 32 elements and whose K is a multiple of 32 take the integer path
// instead (blockquant_int.go): A quantized to int8 blocks of 32 as
// llama.cpp's Q8_0, exact integer dot products per block (AVX-512 VNNI
// VPDPBUSD, AVX2 VPMADDUBSW, or Go: the same bits), scaled by d_w·d_a and
// summed in float32; about twice the float path's speed at one thread,
// and the executable reports int8. The other nodes stay here.
//
// The outputs are split over the pool's threads by output feature when the
// product is large enough (M·N·K ≥ 2¹⁶ multiply-adds).

// bqWeights is a BlockQuantMatMul's constant weight, kept quantized.
type bqWeights struct {
	n, k, bits, block int
	q8                []int8
	q4                []uint8
	s                 []float32
	// g is block/32 when every row is whole blocks and block is a
	// multiple of 32 (the assembly's layout), else 0.
	g int
	// ik, when set, is the integer path's kernel family (the executable
	// was compiled with hal.PrecisionInt8; blockquant_int.go), and acts
	// its scratch for the quantized activations.
	ik   *bqiKernel
	acts sync.Pool
	// typ, when not 0, is the ggml type of a weight kept in ggml's block
	// layout (blockquant_ggml.go): raw holds N rows of rb bytes, and gk,
	// when set, is the integer path's kernel (acts then holds *ggml.Act).
	typ ggml.Type
	raw []byte
	rb  int
	gk  *bqkKernel
	// x16, when set, is the integer path's copy of the rows in the x16
	// layout (blockquant_x16.go).
	x16 *x16Weights
	// pfl, when set, is the node's place in decode's weight prefetch
	// (bw_prefetch.go).
	pfl *pfLink
}

// newBQWeights checks a node's attributes against its constant B and
// scales.
func newBQWeights(n *graph.Node, b, sc *graph.Tensor) (*bqWeights, error) {
	if name := n.AttrString("type", ""); name != "" {
		return newGGMLWeights(n, name, b, sc)
	}
	if b == nil || sc == nil {
		return nil, fmt.Errorf("BlockQuantMatMul: B and scales must be constants")
	}
	N, K := int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	bits, block := int(n.AttrInt("bits", 8)), int(n.AttrInt("block_size", 32))
	if N <= 0 || K <= 0 || block <= 0 || int64(N) > graph.MaxTensorBytes/int64(K) {
		return nil, fmt.Errorf("BlockQuantMatMul: N %d, K %d and block_size %d must be positive", N, K, block)
	}
	if (N*K)%block != 0 {
		return nil, fmt.Errorf("BlockQuantMatMul: N·K = %d is not a whole number of %d-element blocks", N*K, block)
	}
	w := &bqWeights{n: N, k: K, bits: bits, block: block}
	switch bits {
	case 8:
		if b.DType != graph.Int8 || !graph.SameShape(b.Shape, []int{N, K}) {
			return nil, fmt.Errorf("BlockQuantMatMul: 8-bit B must be int8 [%d %d], got %v%v", N, K, b.DType, b.Shape)
		}
		w.q8 = graph.Data[int8](b)
	case 4:
		if (N*K)%2 != 0 || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N * K / 2}) {
			return nil, fmt.Errorf("BlockQuantMatMul: 4-bit B must be uint8 [%d], got %v%v", N*K/2, b.DType, b.Shape)
		}
		w.q4 = graph.Data[uint8](b)
	default:
		return nil, fmt.Errorf("BlockQuantMatMul: bits %d (8 and 4 are implemented)", bits)
	}
	if sc.DType != graph.Float32 || !graph.SameShape(sc.Shape, []int{N * K / block}) {
		return nil, fmt.Errorf("BlockQuantMatMul: scales must be float32 [%d], got %v%v", N*K/block, sc.DType, sc.Shape)
	}
	w.s = f32(sc)
	if K%block == 0 && block%32 == 0 {
		w.g = block / 32
	}
	return w, nil
}

func checkBlockQuant(sg *hal.Subgraph, n *graph.Node) string {
	if isF16Node(n) {
		return checkF16(sg, n) // f16.go
	}
	if isF32WNode(n) {
		return checkF32W(sg, n) // f32w.go
	}
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	b, sc := constInput(sg, n, 1), constInput(sg, n, 2)
	if b == nil || (sc == nil && n.AttrString("type", "") == "") {
		return "native: BlockQuantMatMul with non-constant weights or scales not implemented"
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" && sc == nil {
		return "native: BlockQuantMatMul with non-constant scales not implemented"
	}
	if _, err := newBQWeights(n, b, sc); err != nil {
		return "native: " + err.Error()
	}
	return ""
}

func buildBlockQuant(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	if isF16Node(n) {
		return buildF16(bc, n) // f16.go
	}
	if isF32WNode(n) {
		return buildF32W(bc, n) // f32w.go
	}
	w, err := bc.productWeights(n, constInput(bc.sg, n, 2))
	if err != nil {
		return nil, err
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a := in[0]
		y, err := bqMatMulOut(ctx, a, w.k, w.n)
		if err != nil {
			return nil, err
		}
		w.run(bc.pool, f32(a), f32(y), a.Len()/w.k)
		return ctx.Outputs(y), nil
	}, nil
}

// productWeights is the weights of a single product n (its B, with
// scales where given) at the executable's precision, linked into
// decode's read-ahead chain (bw_prefetch.go) in the order of its own
// tasks.
func (bc *buildCtx) productWeights(n *graph.Node, scales *graph.Tensor) (*bqWeights, error) {
	w, err := newBQWeights(n, constInput(bc.sg, n, 1), scales)
	if err != nil {
		return nil, err
	}
	bc.bqPrecision(n, w)
	if w.gk != nil && w.x16 == nil { // x16's tasks read their own copy
		w.pfl = bc.pf.link(w.singleTaskRows(bc.pool, 1)*w.rb, w.raw)
	}
	return w, nil
}

// bqPrecision gives node n's weight w the integer path's kernel when the
// executable is compiled for hal.PrecisionInt8 and w can take it (else
// notes why not).
func (bc *buildCtx) bqPrecision(n *graph.Node, w *bqWeights) {
	if bc.precision == hal.PrecisionInt8 && w.typ != 0 {
		w.gk = bqkKernelFor(w.typ)
		w.acts.New = func() any { return new(ggml.Act) }
		w.initX16() // blockquant_x16.go
		bc.int8Nodes++
		bc.int8Kernel = w.gk.name
	} else if bc.precision == hal.PrecisionInt8 {
		if r := bqIntReason(w); r != "" {
			bc.floatNotes = append(bc.floatNotes, n.Label()+": "+r)
		} else {
			w.ik = bqiKernelFor()
			w.acts.New = func() any { return new(bqAct) }
			bc.int8Nodes++
			bc.int8Kernel = w.ik.name
		}
	}
}

// bqJob is one call's arguments for parallelFor.
type bqJob struct {
	w      *bqWeights
	x, y   []float32
	m, per int
}

// run computes y [m, n] = x [m, k] · Wᵀ.
func (w *bqWeights) run(p *pool, x, y []float32, m int) {
	if w.pfl != nil || m > 1 {
		// decode reads the next product ahead (bw_prefetch.go); a
		// group's member leaves the group's hint alone
		p.prefetchNext(decodeLink(w.pfl, m))
	}
	if w.gk != nil {
		if m > 1 && !w.x16Gemm(m) && w.runGEMM(p, x, y, m) {
			return // the rows together in tiles (qgemm.go)
		}
		w.runGGMLInt(p, x, y, m)
		return
	}
	if w.typ != 0 {
		w.runGGMLFloat(p, x, y, m)
		return
	}
	if w.ik != nil {
		w.runInt(p, x, y, m)
		return
	}
	j := bqJob{w: w, x: x, y: y, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		j.per = (w.n + 2*t - 1) / (2 * t)
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j bqJob, t int) {
		j.w.rows(j.x, j.y, j.m, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// rows computes outputs n0..n1-1 of every row of x.
func (w *bqWeights) rows(x, y []float32, m, n0, n1 int) {
	if m > 1 && w.rowsMulti(x, y, nil, m, n0, n1) {
		return // a batch's rows together (blockquant_multi.go)
	}
	K, N := w.k, w.n
	for r := 0; r < m; r++ {
		xr, yr := x[r*K:r*K+K], y[r*N:r*N+N]
		for j := n0; j < n1; j++ {
			yr[j] = w.rowDot(j, xr)
		}
	}
}

// bqAsm turns the assembly on (tests compare both paths).
var bqAsm = true

// rowDot is the dot product of x (K floats) with row j of W.
func (w *bqWeights) rowDot(j int, x []float32) float32 {
	if w.typ != 0 {
		return w.ggmlRowDot(j, x)
	}
	if w.g > 0 && bqAsm {
		if v, ok := bqRowAsm(w, j, x); ok {
			return v
		}
	}
	return w.rowDotGo(j, x)
}

// rowDotGo is rowDot in Go: each run of the row inside one block summed
// in order, times the block's scale, added up in order.
func (w *bqWeights) rowDotGo(j int, x []float32) float32 {
	K, block := w.k, w.block
	x = x[:K]
	base := j * K
	var acc float32
	for k := 0; k < K; {
		e := base + k
		end := min(K, k+block-e%block)
		var blk float32
		if w.bits == 8 {
			q := w.q8[e : e+end-k]
			for i, v := range x[k:end] {
				blk += v * float32(q[i])
			}
		} else {
			for i := k; i < end; i++ {
				f := base + i
				blk += x[i] * float32(int(w.q4[f>>1]>>(4*(f&1))&15)-8)
			}
		}
		acc += w.s[e/block] * blk
		k = end
	}
	return acc
}

// bqDomainOK says a node of another domain is one native takes.
func bqDomainOK(n *graph.Node) bool {
	return n.Domain == blockquant.Domain && n.OpType == blockquant.OpType
}

// bqMatMulOut checks a BlockQuantMatMul's A (float32 [..., k], rank 1 to
// 8) and allocates its output [..., n].
func bqMatMulOut(ctx *kernels.Context, a *graph.Tensor, k, n int) (*graph.Tensor, error) {
	if a == nil || a.DType != graph.Float32 || len(a.Shape) < 1 || len(a.Shape) > 8 || a.Shape[len(a.Shape)-1] != k {
		var shape []int
		if a != nil {
			shape = a.Shape
		}
		return nil, fmt.Errorf("%w: BlockQuantMatMul: A must be float32 [..., %d], got %v", kernels.ErrInvalid, k, shape)
	}
	var ob [8]int
	out := append(ob[:0], a.Shape...)
	out[len(out)-1] = n
	return ctx.NewUninit(graph.Float32, out)
}
