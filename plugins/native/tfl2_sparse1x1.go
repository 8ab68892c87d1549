package native

import (
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Pruned 1×1 convolutions (MediaPipe's BlazePose, pose_detection: every
// 1×1 of its backbone has 75% zero weights, unstructured) are computed from
// the weights' nonzeros only, as XNNPACK's sparse NCHW inference does: for
// a block of up to 64 positions (four vectors) and one output channel, the
// nonzeros' input rows are multiplied in, the weight broadcast, the rows
// read in place from the NCHW input (no packing), so a quarter of the
// dense GEMM's multiply-adds remain, at about its rate (each nonzero is
// one broadcast and four loads feeding four FMAs; the even and odd
// nonzeros sum in two chains to hide the FMA latency).
//
//	y[o][p] = clamp(bias[o] + Σ_{i: w[o][i] ≠ 0} w[o][i] · x[i][p])
//
// Skipping a zero weight differs from the dense product only where an
// input is infinite or NaN (0·Inf is NaN there and nothing here), as in
// XNNPACK's sparse kernels.

// sparse1x1MaxDensity: a 1×1 convolution whose weights have at most this
// share of nonzeros is computed sparse (where the kernels exist).
const sparse1x1MaxDensity = 0.4

// useSparse1x1 turns the sparse path on (tests compare with it off).
var useSparse1x1 = true

// spmm1x1Fn is a sparse 1×1 kernel over one block of positions: rows
// output channels, n positions (16·(V-1) < n <= 16·V for the kernel of V
// vectors), row o's cnt[o] nonzeros as (byte offset from x, weight bits)
// pairs of int32 consecutive at nz, the output rows ldy floats apart.
type spmm1x1Fn func(x, y *float32, ldy, n, rows int, cnt, nz *int32, bias *float32, lo, hi float32)

// sparse1x1 is a 1×1 convolution's weights as nonzeros, row by row.
type sparse1x1 struct {
	cout, cin int
	cnt       []int32 // nonzeros of each output channel
	start     []int   // row o's first nonzero (cout+1 entries)
	idx       []int32 // each nonzero's input channel
	w         []float32
	bias      []float32
	lo, hi    float32
	ss        scratchSet                    // the blocked copy's buffers
	offs      atomic.Pointer[sparse1x1Offs] // the nonzeros for the last row stride
}

// sparse1x1Offs is the nonzeros as the kernels read them for one input
// plane size: (byte offset of the input row, weight bits) pairs.
type sparse1x1Offs struct {
	hw int
	nz []int32
}

// newSparse1x1 returns the sparse form of a 1×1 convolution's weights w
// (cout rows of cin) with bias and clamp, or nil where they are dense
// (more than sparse1x1MaxDensity nonzeros) or no kernel exists.
func newSparse1x1(w, bias []float32, cout, cin int, clamp bool, lo, hi float32) *sparse1x1 {
	if !useSparse1x1 || spmm1x1Kernels == nil || cout == 0 || cin == 0 || len(w) != cout*cin || len(bias) < cout {
		return nil
	}
	nnz := 0
	for _, v := range w {
		if v != 0 {
			nnz++
		}
	}
	if float64(nnz) > sparse1x1MaxDensity*float64(len(w)) {
		return nil
	}
	s := &sparse1x1{cout: cout, cin: cin, cnt: make([]int32, cout), start: make([]int, cout+1),
		idx: make([]int32, 0, nnz), w: make([]float32, 0, nnz), bias: append([]float32{}, bias[:cout]...),
		lo: negInf, hi: posInf}
	if clamp {
		s.lo, s.hi = lo, hi
	}
	for o := 0; o < cout; o++ {
		for i, v := range w[o*cin : (o+1)*cin] {
			if v != 0 {
				s.idx = append(s.idx, int32(i))
				s.w = append(s.w, v)
			}
		}
		s.start[o+1] = len(s.idx)
		s.cnt[o] = int32(s.start[o+1] - s.start[o])
	}
	return s
}

// offsFor returns the kernels' nonzeros for input rows hw floats apart
// (nil where a byte offset would not fit an int32), derived once per
// stride (the last one is kept).
func (s *sparse1x1) offsFor(hw int) *sparse1x1Offs {
	if o := s.offs.Load(); o != nil && o.hw == hw {
		return o
	}
	if int64(s.cin)*int64(hw)*4 > math.MaxInt32 {
		return nil
	}
	// two entries more: a share of rows without nonzeros at the end still
	// has an address to pass
	o := &sparse1x1Offs{hw: hw, nz: make([]int32, 2*len(s.idx)+2)}
	for j, i := range s.idx {
		o.nz[2*j] = i * int32(hw) * 4
		o.nz[2*j+1] = int32(math.Float32bits(s.w[j]))
	}
	s.offs.Store(o)
	return o
}

// spmm1x1Task is one share of a sparse 1×1 convolution's blocks of
// positions and output channels (parallelFor): task t is share t%ct of
// the channels over share t/ct of the blocks, position-major, so that
// the pool's threads (which claim from the two ends) each keep to their
// part of the image, as the loops before and after them do.
type spmm1x1Task struct {
	s      *sparse1x1
	nz     []int32
	x, y   []float32
	hw     int
	blocks bool // x is the image a block of positions at a time (copyBlocks)
	bt, ct int  // shares of the blocks, of the channels
	kernel [4]spmm1x1Fn
}

// run computes the task's output channels (those whose nonzeros start in
// its share of them) over its blocks of positions, block by block.
func (a *spmm1x1Task) run(t int) {
	s := a.s
	bi, ci := t/a.ct, t%a.ct
	total := s.start[s.cout]
	o0 := sort.SearchInts(s.start[:s.cout], total*ci/a.ct)
	o1 := sort.SearchInts(s.start[:s.cout], total*(ci+1)/a.ct)
	if ci == a.ct-1 {
		o1 = s.cout
	}
	if o0 >= o1 {
		return
	}
	nvec := (a.hw + 15) / 16
	nblk := (nvec + 3) / 4
	for b := nblk * bi / a.bt; b < nblk*(bi+1)/a.bt; b++ {
		v0, v1 := nvec*b/nblk, nvec*(b+1)/nblk
		p0 := 16 * v0
		n := min(16*v1, a.hw) - p0
		x := a.x[p0:]
		if a.blocks {
			x = a.x[b*s.cin*64:]
		}
		a.kernel[v1-v0-1](&x[0], &a.y[o0*a.hw+p0], a.hw, n, o1-o0, &s.cnt[o0], &a.nz[2*s.start[o0]], &s.bias[o0], s.lo, s.hi)
	}
}

// copyTask copies a share of an image's blocks of positions into the
// blocked layout (parallelFor), as spmm1x1Task splits them: task t
// copies channel share t%ct of block share t/ct.
type copyTask struct {
	dst, x        []float32
	cin, hw, nblk int
	bt, ct        int
}

func (a copyTask) run(t int) {
	bi, ci := t/a.ct, t%a.ct
	copyBlocks(a.dst, a.x, a.cin, a.hw, a.nblk, a.nblk*bi/a.bt, a.nblk*(bi+1)/a.bt, a.cin*ci/a.ct, a.cin*(ci+1)/a.ct)
}

// copyBlocks copies channels [c0, c1) of blocks [b0, b1) of x (cin
// planes of hw) into dst a block of positions at a time: block b's
// channel i at
// dst[(b·cin + i)·64:], the blocks of up to four vectors as
// spmm1x1Task.run splits them. Each vector then starts at a 64-byte
// boundary and no load of the kernels crosses a cache line: at 7×7 and
// 14×14 the planes' rows are 196 and 784 bytes apart, and such loads cost
// 23% and 36% of the kernel's time (BenchmarkSparse1x1, least µs:
// 192←1152 over 49 positions 125, over 64 96; 112←672 over 196 138, over
// 192 88).
func copyBlocks(dst, x []float32, cin, hw, nblk, b0, b1, c0, c1 int) {
	nvec := (hw + 15) / 16
	for b := b0; b < b1; b++ {
		p0 := 16 * (nvec * b / nblk)
		p1 := min(16*(nvec*(b+1)/nblk), hw)
		d := dst[b*cin*64:]
		for i := c0; i < c1; i++ {
			copy(d[i*64:i*64+p1-p0], x[i*hw+p0:i*hw+p1])
		}
	}
}

// sparse1x1UnitNS is the kernels' time for a nonzero times a vector of
// positions (about half a cycle); sparse1x1CopyNS the blocked copy's
// for a float. The pool's tasks are sized from them (splitTasks).
const (
	sparse1x1UnitNS = 0.2
	sparse1x1CopyNS = 0.1
)

// run computes the convolution of X (batch images of cin planes of hw
// floats) into Y on the pool, with the blocked copy's buffers from s.ss;
// false where it cannot (the caller computes it dense).
func (s *sparse1x1) run(pl *pool, X, Y []float32, batch, hw int) bool {
	if hw == 0 || batch == 0 {
		return true
	}
	nvec := (hw + 15) / 16
	nblk := (nvec + 3) / 4
	// planes whose rows do not start at 64-byte boundaries are read
	// through the blocked copy
	blocks := hw%16 != 0 || uintptr(unsafe.Pointer(&X[0]))%64 != 0
	ld := hw
	if blocks {
		ld = 64
	}
	o := s.offsFor(ld)
	if o == nil {
		return false
	}
	var xb []float32
	if blocks {
		sc := s.ss.of(nblk*s.cin*64 + 16)
		buf := sc.get()
		defer sc.put(buf)
		xb = *buf
		if a := int(uintptr(unsafe.Pointer(&xb[0])) % 64 / 4); a != 0 {
			xb = xb[16-a:]
		}
	}
	work := s.start[s.cout] * nvec
	tasks := 1
	bt, ct := 1, 1   // the products' shares of blocks and channels
	cbt, cct := 1, 1 // the copy's
	if th := pl.threads(); th > 1 {
		// whole blocks first (each task's positions all its own), then
		// the channels of a block
		grid := func(units, tasks int) (int, int) {
			b := min(nblk, tasks)
			return b, min(units, (tasks+b-1)/b)
		}
		bt, ct = grid(s.cout, splitTasks(th, nblk*s.cout, float64(work)/float64(nblk*s.cout)*sparse1x1UnitNS))
		tasks = bt * ct
		cbt, cct = grid(s.cin, splitTasks(th, nblk*s.cin, float64(hw)/float64(nblk)*sparse1x1CopyNS))
	}
	for b := 0; b < batch; b++ {
		x := X[b*s.cin*hw : (b+1)*s.cin*hw]
		if blocks {
			parallelFor(pl, cbt*cct, copyTask{xb, x, s.cin, hw, nblk, cbt, cct}, copyTask.run)
			x = xb
		}
		a := spmm1x1Task{s: s, nz: o.nz, x: x, y: Y[b*s.cout*hw : (b+1)*s.cout*hw],
			hw: hw, blocks: blocks, bt: bt, ct: ct, kernel: spmm1x1Kernels4()}
		if tasks == 1 {
			a.run(0)
			continue
		}
		parallelFor(pl, tasks, a, func(a spmm1x1Task, t int) { a.run(t) })
	}
	return true
}

// spmm1x1Kernels4 is the kernels of 1 to 4 vectors.
func spmm1x1Kernels4() (k [4]spmm1x1Fn) {
	copy(k[:], spmm1x1Kernels)
	return k
}

// spmm1x1Go is the portable definition of the kernels (the two chains as
// the assembly sums them).
func spmm1x1Go(x, y []float32, ldy, n, rows int, cnt, nz []int32, bias []float32, lo, hi float32) {
	j := 0
	for o := 0; o < rows; o++ {
		c := int(cnt[o])
		for p := 0; p < n; p++ {
			a, b := bias[o], float32(0)
			for k := 0; k < c; k++ {
				w := math.Float32frombits(uint32(nz[2*(j+k)+1]))
				v := x[int(nz[2*(j+k)])/4+p]
				if k%2 == 0 {
					a = float32(math.FMA(float64(w), float64(v), float64(a)))
				} else {
					b = float32(math.FMA(float64(w), float64(v), float64(b)))
				}
			}
			r := a + b
			if !(r >= lo) && r == r {
				r = lo
			}
			if !(r <= hi) && r == r {
				r = hi
			}
			y[o*ldy+p] = r
		}
		j += c
	}
}

// sparse1x1With reports whether plans built for dense kernel k take the
// sparse path: it is on and k is an AVX-512 kernel (a dense kernel forced
// through SWITCHYARD_NATIVE_KERNEL, avx2 or generic, keeps every 1×1 on
// it).
func sparse1x1With(k *microKernel) bool {
	return useSparse1x1 && spmm1x1Kernels != nil && strings.HasPrefix(k.name, "avx512")
}

// sparse1x1Price is the sparse kernels' time per multiply-add of a
// nonzero relative to the dense 1×1's per multiply-add (the dense GEMM
// reuses each loaded float across a tile, the sparse kernels load one
// per multiply-add: BenchmarkSparse1x1's 0.3-0.5 ns a vector
// multiply-add against the dense 1×1's 0.2-0.25 in-model at load ~20).
const sparse1x1Price = 1.6

// sparse1x1Share is the share of a dense 1×1's work that node n's
// computes where native runs it sparse (its weights' density times
// sparse1x1Price), else 1: the cost model prices the FLOPs it keeps.
func sparse1x1Share(sg *hal.Subgraph, n *graph.Node) float64 {
	if k := bestKernel(); !sparse1x1With(&k) || !pointwise(sg, n) {
		return 1
	}
	w := sg.Graph.Initializers[n.Inputs[1]]
	if w == nil || w.DType != graph.Float32 || w.Len() == 0 {
		return 1
	}
	nnz := 0
	v := f32(w)
	for _, x := range v {
		if x != 0 {
			nnz++
		}
	}
	d := float64(nnz) / float64(len(v))
	if d > sparse1x1MaxDensity {
		return 1
	}
	return d * sparse1x1Price
}
