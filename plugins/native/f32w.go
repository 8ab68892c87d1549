package native

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// BlockQuantMatMul nodes of type F32 hold W [N, K] as a GGUF file stores
// float32 matrices (B uint8 [N, 4K], little-endian float32 rows): the
// initializer's bytes, the file's mapping, are read in place. Before, an
// F32 matrix was copied at load, transposed for MatMul and packed again
// for the GEMM: three times the file resident.
//
// Each output is, by definition (f32wRowDot), the dot product of an
// activation row x with a weight row w summed in sixteen lanes: lane l
// adds x[k]·w[k] for k ≡ l (mod 16), in k order, one fused multiply-add
// a step from +0,
//
//	lane[k mod 16] = fma(x[k], w[k], lane[k mod 16])   (float32)
//
// then the lanes are reduced by halving: lane l += lane l+8 (l < 8),
// then l+4, l+2, l+1; the sum is lane 0. That is the order a 16-lane
// vector unit streams a row in (AVX-512: one register; AVX2: two 8-lane
// halves, added first), so the kernels read the rows as the file has
// them, with no transposes; every kernel, one activation row or many,
// computes exactly these sums, so decode, verify steps and prefill agree
// bit for bit.
//
// Kernels (f32wKernels, the best the CPU has unless
// SWITCHYARD_NATIVE_QKERNEL forces a family): AVX-512 and AVX2
// assembly (internal/asmgenf32w) taking 4 to 16 weight rows and 1 to 4
// activation rows a call (the one-row kernels prefetching where the
// matrix is larger than the caches); rows past their multiples, and machines
// without them, run the Go definition. More than four activation rows
// (prefill) are a GEMM: weight rows in blocks that stay in the L2 cache
// while every group of four activation rows passes over them. Rows are
// split over the pool's threads as the other weights' are.
type f32Weights struct {
	n, k int
	w    []float32 // N rows of K: a view of the initializer's bytes
	kern *f32wKernel
}

// f32wKernel is one family's kernels: dots[xr] for xr activation rows at
// once (1..4), most weight rows first. Each sets y[i*ldy+r] to
// f32wRowDot(w[r*ldw:][:k], x[i*ldx:][:k]) for its rows weight rows.
type f32wKernel struct {
	name string
	dots [5][]f32wDot
}

// f32wDot is a dot kernel of rows weight rows.
type f32wDot struct {
	rows int
	fn   func(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int)
}

// f32wGo is the portable kernel: the definition, row by row.
var f32wGo = &f32wKernel{name: "generic"}

// isF32WNode reports whether n is a BlockQuantMatMul of type F32.
func isF32WNode(n *graph.Node) bool { return n.AttrString("type", "") == ggml.F32.String() }

// f32View is raw's little-endian float32s: the same memory where raw is
// 4-byte aligned (a GGUF file aligns its tensors to 32 bytes), else a
// copy.
func f32View(raw []byte) []float32 {
	n := len(raw) / 4
	if n == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out
}

func newF32Weights(n *graph.Node, b *graph.Tensor) (*f32Weights, error) {
	N, K := int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	if N <= 0 || K <= 0 || int64(N) > graph.MaxTensorBytes/4/int64(K) {
		return nil, fmt.Errorf("BlockQuantMatMul: N %d and K %d must be positive", N, K)
	}
	if b == nil || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N, 4 * K}) {
		var got any = "nothing"
		if b != nil {
			got = fmt.Sprint(b.DType, b.Shape)
		}
		return nil, fmt.Errorf("BlockQuantMatMul: F32 B must be uint8 [%d %d], got %v", N, 4*K, got)
	}
	stream := int64(N)*int64(K)*4 > f32wStreamBytes
	return &f32Weights{n: N, k: K, w: f32View(graph.Data[uint8](b)), kern: f32wKernelFor(qkernelFamily(), stream, shortChunks(K))}, nil
}

func checkF32W(sg *hal.Subgraph, n *graph.Node) string {
	return checkWideWeights(sg, n, "F32", func(b *graph.Tensor) error {
		_, err := newF32Weights(n, b)
		return err
	})
}

func buildF32W(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w, err := newF32Weights(n, constInput(bc.sg, n, 1))
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

// f32wRowDot is the definition every kernel computes: x·w in sixteen
// lanes of k order, reduced by halving.
func f32wRowDot(w, x []float32) float32 {
	var l [16]float32
	w = w[:len(x)]
	k := 0
	for ; k+16 <= len(x); k += 16 {
		xs, ws := x[k:k+16], w[k:k+16]
		for i := range l {
			l[i] = fma32(xs[i], ws[i], l[i])
		}
	}
	for i := 0; k < len(x); i, k = i+1, k+1 {
		l[i] = fma32(x[k], w[k], l[i])
	}
	for h := 8; h >= 1; h /= 2 {
		for i := 0; i < h; i++ {
			l[i] += l[i+h]
		}
	}
	return l[0]
}

// f32wStreamBytes is the size over which a matrix is taken to come from
// memory at each product (its one-row kernels prefetch); smaller ones
// stay in the caches, where prefetching only costs instructions.
const f32wStreamBytes = 4 << 20

// f32wMaxShort is the most whole chunks of a row the short-row kernels
// take (internal/asmgenf32w's maxShortChunks).
const f32wMaxShort = 11

// shortChunks is the whole 16-value chunks of a row of k values where
// the short-row kernels take it (fewer than 12), else 0.
func shortChunks(k int) int {
	if c := k / 16; c >= 1 && c <= f32wMaxShort {
		return c
	}
	return 0
}

// f32wJob is one call's arguments for parallelFor.
type f32wJob struct {
	w      *f32Weights
	x, y   []float32
	m, per int
}

// run computes y [m, n] = x [m, k] · Wᵀ.
func (w *f32Weights) run(p *pool, x, y []float32, m int) {
	j := f32wJob{w: w, x: x, y: y, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		// two tasks a thread, whole 8-row blocks
		j.per = (w.n + 2*t - 1) / (2 * t)
		j.per = (j.per + 7) &^ 7
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j f32wJob, t int) {
		j.w.rows(j.x, j.y, j.m, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// f32wBlockBytes is the most weight bytes a block of rows holds when
// several groups of activation rows pass over it (the GEMM's blocking:
// about a quarter of a core's L2 cache).
const f32wBlockBytes = 256 << 10

// rows computes outputs n0..n1-1 of every row of x: up to four rows of x
// a pass over a block of weight rows.
func (w *f32Weights) rows(x, y []float32, m, n0, n1 int) {
	K, N := w.k, w.n
	step := n1 - n0
	if m > 4 {
		step = max(8, f32wBlockBytes/(4*K)&^7)
	}
	for b0 := n0; b0 < n1; b0 += step {
		b1 := min(n1, b0+step)
		for r0 := 0; r0 < m; r0 += 4 {
			xr := min(4, m-r0)
			j := b0
			for _, d := range w.kern.dots[xr] {
				for ; j+d.rows <= b1; j += d.rows {
					d.fn(&w.w[j*K], K, &x[r0*K], K, K, &y[r0*N+j], N)
				}
			}
			for r := r0; r < r0+xr; r++ {
				for i := j; i < b1; i++ {
					y[r*N+i] = f32wRowDot(w.w[i*K:(i+1)*K], x[r*K:r*K+K])
				}
			}
		}
	}
}
