//go:generate go run ./internal/asmgenbqk -out blockquant_ggml_amd64.s -stubs blockquant_ggml_stubs_amd64.go -pkg native

package native

import (
	"fmt"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
)

// BlockQuantMatMul nodes with the attribute type (a ggml type name:
// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) hold their
// weight in ggml's own block layout, as the GGUF file stores it: B is
// uint8 [N, row bytes], no scales input. The bytes are used in place (the
// kernel's memory is the file's: 4.5 bits a weight for Q4_K, 6.5 for Q6_K).
//
// The float path (the default precision) dequantizes one block at a time
// to float32 on the stack, exactly as core/ggml does, and takes its dot
// product with the float32 activations in eight float32 accumulators:
// the error against the exact product is a float32 dot product's, about
// (K/8+8)·2⁻²⁴·Σ|a·w|. Q4_K, Q6_K and Q5_0 run it in AVX2+FMA assembly where
// the CPU has it (internal/asmgenbqk; Q4_K's minimums take each row's
// 32-value sums of A, computed once a call), with a float32 dot product's
// rounding too.
//
// The integer path (opt-in hal.PrecisionInt8, as for the split layout)
// quantizes each row of A as llama.cpp does (core/ggml's Act: blocks of 32
// for the 32-element types, super-blocks of 256 for the K types) and
// computes core/ggml's Dot, whose float32 steps are fixed (llama.cpp's
// x86 ones; for Q4_0 those of its repacked Q4_0, one fused multiply-add
// a block of the block's int32 sum): the Go kernel
// and the assembly ones (internal/asmgenbqk: Q4_0, Q4_1, Q5_0, Q5_1,
// Q8_0, Q4_K, Q5_K and Q6_K, four weight rows a call sharing each
// activation load and prefetching the next four, in AVX-512 VNNI where
// the CPU has it, else AVX2; Q2_K and Q3_K four rows in AVX-512 VNNI
// only) give the same bits; the rest runs Go. Decode's products (one
// activation row) call each kernel once a task over all its rows (dot4n);
// Q4_0, Q5_0 and Q8_0 take ZMM kernels of four and eight rows there
// (AVX-512 BW, internal/asmgenbqk's z32.go), a group's rows taken from
// eight runs of consecutive rows so that each streams memory in order.
// SWITCHYARD_NATIVE_QKERNEL=avx2 forces AVX2, =generic Go, =vnni256 the
// YMM VNNI kernels instead of the ZMM ones.

// bqkKernel is the integer path's dot product for one ggml type: dot is
// output j of activation row r; dot4, where the type has it, outputs
// j..j+3 of row r at once (the activations loaded once for four weight
// rows), into y[0..3].
//
// dot4n, where the type has it, is ng groups of dot4 (outputs j..j+4·ng-1
// of row r) in one call of the assembly: decode's products call it once
// a task instead of once every four rows.
type bqkKernel struct {
	name  string
	dot   func(w *bqWeights, j int, a *ggml.Act, r int) float32
	dot4  func(w *bqWeights, j int, a *ggml.Act, r int, y []float32)
	dot4n func(w *bqWeights, j, ng int, a *ggml.Act, r int, y []float32)
}

// zEight: where an architecture has kernels of eight rows, dot4n takes
// them for pairs of four-row groups (tests turn it off to compare).
var zEight = true

// bqkGo is the portable kernel of every type.
var bqkGo = &bqkKernel{name: "generic", dot: func(w *bqWeights, j int, a *ggml.Act, r int) float32 {
	return ggml.Dot(w.typ, w.raw[j*w.rb:(j+1)*w.rb], a, r)
}}

// bqkKernelFor is the kernel a node of type t compiled now takes.
func bqkKernelFor(t ggml.Type) *bqkKernel {
	if k := archBQKKernel(t, qkernelFamily()); k != nil {
		return k
	}
	return bqkGo
}

// newGGMLWeights checks a typed node's attributes against its constant B.
func newGGMLWeights(n *graph.Node, name string, b, sc *graph.Tensor) (*bqWeights, error) {
	t, ok := ggml.ParseType(name)
	if !ok || !t.Quantized() {
		return nil, fmt.Errorf("BlockQuantMatMul: type %q is not a ggml block-quantized type", name)
	}
	N, K := int(n.AttrInt("N", 0)), int(n.AttrInt("K", 0))
	if N <= 0 || K <= 0 || int64(N) > graph.MaxTensorBytes/int64(K) {
		return nil, fmt.Errorf("BlockQuantMatMul: N %d and K %d must be positive", N, K)
	}
	rb, err := t.RowBytes(K)
	if err != nil {
		return nil, fmt.Errorf("BlockQuantMatMul: %v", err)
	}
	if b == nil || b.DType != graph.Uint8 || !graph.SameShape(b.Shape, []int{N, rb}) {
		var got any = "nothing"
		if b != nil {
			got = fmt.Sprint(b.DType, b.Shape)
		}
		return nil, fmt.Errorf("BlockQuantMatMul: %s B must be uint8 [%d %d], got %v", t, N, rb, got)
	}
	if sc != nil {
		return nil, fmt.Errorf("BlockQuantMatMul: a %s weight takes no scales input", t)
	}
	return &bqWeights{n: N, k: K, typ: t, raw: graph.Data[uint8](b), rb: rb}, nil
}

// ggmlRowDot is rowDot for a typed weight (the float path).
func (w *bqWeights) ggmlRowDot(j int, x []float32) float32 {
	bs, be := w.typ.BlockBytes(), w.typ.BlockSize()
	row := w.raw[j*w.rb : (j+1)*w.rb]
	x = x[:w.k]
	var buf [ggml.QK]float32
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	for b := 0; b < w.k/be; b++ {
		ggml.DequantizeBlock(w.typ, row[b*bs:(b+1)*bs], buf[:be])
		xs := x[b*be : b*be+be]
		ws := buf[:len(xs)]
		for i := 0; i+8 <= len(xs); i += 8 {
			a0 += xs[i] * ws[i]
			a1 += xs[i+1] * ws[i+1]
			a2 += xs[i+2] * ws[i+2]
			a3 += xs[i+3] * ws[i+3]
			a4 += xs[i+4] * ws[i+4]
			a5 += xs[i+5] * ws[i+5]
			a6 += xs[i+6] * ws[i+6]
			a7 += xs[i+7] * ws[i+7]
		}
	}
	return ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7))
}

// bqkJob is one typed integer-path call's arguments for parallelFor.
type bqkJob struct {
	w      *bqWeights
	a      *ggml.Act
	y      []float32
	m, per int
}

// runGGMLInt is run on the integer path of a typed weight.
func (w *bqWeights) runGGMLInt(p *pool, x, y []float32, m int) {
	a := w.acts.Get().(*ggml.Act)
	defer w.acts.Put(a)
	quantizeGGMLAct(a, x, m, w.k, ggml.ActBlock(w.typ))
	j := bqkJob{w: w, a: a, y: y, m: m, per: w.singleTaskRows(p, m)}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j bqkJob, t int) {
		j.w.intRows(j.a, j.y, j.m, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// intTaskRows is the rows of one of a sibling group's tasks (bqfuse.go;
// a single product's are singleTaskRows) for m activation rows on p (all
// of them when the product is small or p has one thread).
func (w *bqWeights) intTaskRows(p *pool, m int) int {
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		return w.x16TaskRows(bqkTaskRowsMax(w.n, w.rb, m, t, w.typ.BlockSize() == ggml.QK, groupTaskBytes))
	}
	return w.n
}

// groupTaskBytes is bqkTaskBytes for a sibling group's tasks: as for a
// single product's (singleTaskBytes), tasks of up to 512 KB start fewer
// row streams on a memory latency. Qwen2.5-0.5B Q4_0 at 2 threads: the
// gate+up group's loop in 16 tasks of 608 rows (the 4 tasks a thread
// each product keeps at least) instead of 20 of 520, TestTailDecodeAB
// with the two alternating, six runs (load 3-4): the loop's median
// 0.4-2.5% faster in all six; Q, K, V and O keep their split (their
// 4-task floor or bqkTaskMinBytes sets it). Llama-3.2-1B Q4_0 (gate and
// up in tasks of 448 rows instead of 224, Q of 256 instead of 224),
// five runs: the step's median 0.3-8.3% faster.
const groupTaskBytes = 512 << 10

// intRows is the integer path's work on outputs n0..n1-1 of the m
// activation rows of a (quantized for w's type), into y [m, N]: a task
// of runGGMLInt, and of a sibling group's (bqfuse.go).
func (w *bqWeights) intRows(a *ggml.Act, y []float32, m, n0, n1 int) {
	N, k := w.n, w.gk
	n := w.x16Rows(a, y, m, n0, n1) // the rows in the x16 layout (blockquant_x16.go)
	if ng := (n1 - n) / 4; m == 1 && k.dot4n != nil && ng > 0 {
		k.dot4n(w, n, ng, a, 0, y[n:n+4*ng])
		n += 4 * ng
	}
	if k.dot4 != nil {
		// four weight rows against every activation row while they
		// are in cache
		for ; n+4 <= n1; n += 4 {
			for r := 0; r < m; r++ {
				k.dot4(w, n, a, r, y[r*N+n:r*N+n+4])
			}
		}
	}
	for ; n < n1; n++ {
		for r := 0; r < m; r++ {
			y[r*N+n] = k.dot(w, n, a, r)
		}
	}
}

// bqkTaskBytes is about how many weight bytes a task of a product with
// one activation row (decode) reads at most: the tasks are claimed as
// they come, so a loop ends with one thread finishing its last task
// while the others wait, on average about half a task. With four tasks
// a thread (the split before) that is about a sixteenth of each product
// at 2 threads, and Llama-3.2-1B's classifier had tasks of 27 MB.
const bqkTaskBytes = 256 << 10

// bqkTaskBytesK is bqkTaskBytes for the K types: their ZMM kernels read a
// task as four sequential streams (the hardware prefetcher's), which
// restart every task; at 2 threads 1 MB tasks measured Llama-3.2-1B
// Q4_K_M at 21.0 ms/token where 256 KB ones took 24.3 (load ~2).
const bqkTaskBytesK = 1 << 20

// bqkTaskMinBytes is about how many weight bytes a task of a product
// with one activation row reads at least: each task starts its row
// streams (eight of them in the eight-row kernels) on a memory latency
// before the hardware prefetchers follow, so a small product cut in
// small tasks streams slowly. Qwen2.5-0.5B Q4_0 at 2 threads (its Q, K
// and V had tasks of 56, 16 and 16 KB, its O of 56 KB; now 4, 1, 1 and
// 4 tasks of up to 133 KB), TestTailDecodeAB, load 6-7, three runs: the
// Q,K,V loop 16% faster (24 × median 796 → 667 µs a step), O's 12%
// (538 → 472), the others unchanged; tasks of at least 64 KB gained
// about half of it.
const bqkTaskMinBytes = 128 << 10

// bqkTaskRows is the rows of a task of an N-row product with rows of rb
// bytes and m activation rows on t threads: multiples of 8 rows (the
// eight-row kernels), at least 32 rows, four tasks a thread at most
// (claimed as they come: a thread the machine slows takes fewer), and
// for one activation row at most bqkTaskBytes of weights (bqkTaskBytesK
// for the K types, kType: their kernels restart four row streams a
// task) and at least bqkTaskMinBytes.
func bqkTaskRows(N, rb, m, t int, kType bool) int {
	return bqkTaskRowsMax(N, rb, m, t, kType, bqkTaskBytes)
}

// bqkTaskRowsMax is bqkTaskRows with tasks of one activation row of at
// most tb bytes in place of bqkTaskBytes (the K types keep
// bqkTaskBytesK).
func bqkTaskRowsMax(N, rb, m, t int, kType bool, tb int) int {
	per := max(((N+4*t-1)/(4*t)+7)&^7, 32)
	if m == 1 && rb > 0 {
		if kType {
			tb = bqkTaskBytesK
		}
		per = min(per, max((tb/rb)&^7, 32))
		per = max(per, (bqkTaskMinBytes/rb+7)&^7)
		if N*rb <= t*smallTaskBytes && !smallSplitOff.Load() {
			per = max(per, ((N+t-1)/t+7)&^7)
		}
	}
	return per
}

// smallTaskBytes: a product of one activation row of at most
// smallTaskBytes a thread runs in one task a thread (Qwen2.5-0.5B's Q
// and O, 451 KB each: two tasks of 448 rows at 2 threads instead of
// four of 256, from bqkTaskMinBytes), so each thread starts its row
// streams once: TestTailDecodeAB TAIL_AB=small, quiet (steps of 6.8-7.3
// ms), three runs: O's loop 18-25% faster, Q,K,V's 1-7%, the step
// 0.8-1.4%. (Tasks of at least 256 KB, which made Q and O two tasks
// of 520 and 376 rows, measured the Q,K,V loop 10-15% and O's 15-17%
// faster, TestTailDecodeAB, load 4-5, three runs; Llama-3.2-1B's K and
// V, 589 KB, in three tasks instead of five measured 0-1% slower, so
// products above t × smallTaskBytes keep their split.)
const smallTaskBytes = 256 << 10

// smallSplitOff turns smallTaskBytes' rule off (measurements alternate).
var smallSplitOff atomic.Bool

// bqkFloatJob is one typed float-path call's arguments for parallelFor.
type bqkFloatJob struct {
	w      *bqWeights
	x, xs  []float32
	y      []float32
	m, per int
	fk     func(nb int, w *uint8, x *float32, xs *float32) float32
}

// runGGMLFloat is run on the float path of a typed weight.
func (w *bqWeights) runGGMLFloat(p *pool, x, y []float32, m int) {
	j := bqkFloatJob{w: w, x: x, y: y, m: m, per: w.n}
	if bqAsm {
		j.fk = archBQKFloat(w.typ)
	}
	if j.fk != nil && w.typ == ggml.Q4_K {
		j.xs = make([]float32, m*w.k/32)
		for i := range j.xs {
			var s float32
			for _, v := range x[32*i : 32*i+32] {
				s += v
			}
			j.xs[i] = s
		}
	}
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		j.per = (w.n + 2*t - 1) / (2 * t)
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j bqkFloatJob, t int) {
		w, N, K := j.w, j.w.n, j.w.k
		if j.m > 1 && w.rowsMulti(j.x, j.y, j.xs, j.m, t*j.per, min(N, (t+1)*j.per)) {
			return // a batch's rows together (blockquant_multi.go)
		}
		nb := K / w.typ.BlockSize()
		for n := t * j.per; n < min(N, (t+1)*j.per); n++ {
			for r := 0; r < j.m; r++ {
				if j.fk == nil {
					j.y[r*N+n] = w.ggmlRowDot(n, j.x[r*K:r*K+K])
					continue
				}
				row := w.raw[n*w.rb : n*w.rb+nb*w.typ.BlockBytes()]
				xr := j.x[r*K : r*K+K]
				var xs *float32
				if j.xs != nil {
					xs = &j.xs[r*K/32]
				}
				j.y[r*N+n] = j.fk(nb, &row[0], &xr[0], xs)
			}
		}
	})
}
