package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Transpose of float32 (any rank): the axes that stay next to each other
// are merged first, so that most permutations become a batch of 2-D
// transposes (NHWC↔NCHW: [0 2 1] over [N, H·W, C]), done in cache-sized
// tiles; any other permutation walks the output with the input's strides,
// the innermost output axis as the inner loop. Other dtypes, and bad
// permutations (for the error), run the reference kernel.

// transposeKernel is the Transpose kernel (large 2-D transposes split
// over p).
func transposeKernel(p *pool) kernels.Func {
	ref, _ := kernels.Lookup("", "Transpose")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x == nil || x.DType != graph.Float32 || len(x.Shape) > 8 {
			return ref.Kernel(ctx, node, in)
		}
		r := len(x.Shape)
		var permBuf [8]int
		perm := permBuf[:r]
		a := node.Attrs["perm"]
		if a != nil && len(a.Ints) > 0 {
			if len(a.Ints) != r {
				return ref.Kernel(ctx, node, in)
			}
			var seen [8]bool
			for i, v := range a.Ints {
				if v < 0 || int(v) >= r || seen[v] {
					return ref.Kernel(ctx, node, in)
				}
				seen[v] = true
				perm[i] = int(v)
			}
		} else {
			for i := range perm {
				perm[i] = r - 1 - i
			}
		}
		var outBuf [8]int
		out := outBuf[:r]
		for i, p := range perm {
			out[i] = x.Shape[p]
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		transposeF32(p, f32(y), f32(x), x.Shape, perm)
		return ctx.Outputs(y), nil
	}
}

// transposeF32 writes y = x (of shape dims) with its axes permuted by perm
// (y's axis i is x's axis perm[i]); 2-D transposes (of each batch) of at
// least transposeParMin elements split over p by columns of x.
func transposeF32(p *pool, y, x []float32, dims, perm []int) {
	if len(y) == 0 {
		return
	}
	cdb, cpb, ng := mergeAxes(dims, perm)
	cd, cp := cdb[:ng], cpb[:ng]
	switch {
	case len(cd) <= 1:
		copy(y, x)
	case len(cd) == 2:
		transpose2DPar(p, y, x, 1, cd[0], cd[1])
	case len(cd) == 3 && cp[0] == 0 && cp[1] == 2 && cp[2] == 1:
		transpose2DPar(p, y, x, cd[0], cd[1], cd[2])
	default:
		transposeStrided(y, x, cd, cp)
	}
}

// transposeParMin is the fewest elements a 2-D transpose splits over the
// pool for (below, one task's share costs less than waking the others).
const transposeParMin = 1 << 15

// tr2Task is transpose2DPar's loop over (batch, column range) tasks.
type tr2Task struct {
	y, x                      []float32
	rows, cols, parts, chunks int
}

// transpose2DPar is transpose2D of each of batch rows×cols matrices,
// each split into ranges of columns of x across p's threads when large.
func transpose2DPar(p *pool, y, x []float32, batch, rows, cols int) {
	n := rows * cols
	if cols == 3 && deinterleave3Par(p, y, x, batch, rows) {
		return
	}
	parts := 1
	if rows*cols >= transposeParMin && cols != 3 {
		parts = min(2*p.threads(), cols/transposeStrip)
	}
	if parts <= 1 || p.threads() == 1 {
		for b := 0; b < batch; b++ {
			transpose2D(y[b*n:(b+1)*n], x[b*n:(b+1)*n], rows, cols)
		}
		return
	}
	parallelFor(p, batch*parts, tr2Task{y, x, rows, cols, parts, batch * parts}, func(a tr2Task, t int) {
		b, k := t/a.parts, t%a.parts
		n := a.rows * a.cols
		ca, cb := a.cols*k/a.parts&^7, a.cols*(k+1)/a.parts&^7
		if k == a.parts-1 {
			cb = a.cols
		}
		transpose2DCols(a.y[b*n:(b+1)*n], a.x[b*n:(b+1)*n], a.rows, a.cols, ca, cb)
	})
}

// mergeAxes simplifies a transpose: axes of size 1 dropped, and axes
// adjacent in both x and y merged. It returns the merged dims of x and
// the permutation over them (at most 8 axes), the first ng of each array.
func mergeAxes(dims, perm []int) (cd, cp [8]int, ng int) {
	r := len(dims)
	var renum [8]int // x axis → its index among the kept (size > 1) axes
	var kd [8]int    // kept dims
	k := 0
	for ax := 0; ax < r; ax++ {
		if dims[ax] > 1 {
			renum[ax], kd[k] = k, dims[ax]
			k++
		}
	}
	var kp [8]int // the permutation over kept axes
	n := 0
	for _, p := range perm {
		if dims[p] > 1 {
			kp[n] = renum[p]
			n++
		}
	}
	// groups: runs of kp with consecutive x axes, in y order
	var start, end [8]int
	for i := 0; i < n; i++ {
		if ng > 0 && kp[i] == end[ng-1] {
			end[ng-1]++
			continue
		}
		start[ng], end[ng] = kp[i], kp[i]+1
		ng++
	}
	// x order of the groups: by start
	var rank [8]int // y group → its position among the groups in x order
	for g := 0; g < ng; g++ {
		for h := 0; h < ng; h++ {
			if start[h] < start[g] {
				rank[g]++
			}
		}
	}
	for g := 0; g < ng; g++ {
		d := 1
		for ax := start[g]; ax < end[g]; ax++ {
			d *= kd[ax]
		}
		cd[rank[g]] = d
		cp[g] = rank[g]
	}
	return cd, cp, ng
}

// transpose2D writes y (cols×rows) = xᵀ for x (rows×cols), in tiles:
// 8×8 blocks in registers where the CPU can (transpose8), the edges
// element by element.
func transpose2D(y, x []float32, rows, cols int) {
	transpose2DCols(y, x, rows, cols, 0, cols)
}

// transposeStrip is the column strip transpose2DCols writes at a time:
// 8-row blocks and the last rows of a strip all go to the same
// strip·rows floats of y, which stay in cache until the strip is done.
const transposeStrip = 64

// transpose2DCols is transpose2D of columns [ca, cb) of x (rows ca..cb-1
// of y), a strip of columns at a time: every row of x for the strip (8-row blocks, then
// the last rows), so that y is written once, strip by strip, and not
// once per 8 rows of x.
func transpose2DCols(y, x []float32, rows, cols, ca, cb int) {
	x, y = x[:rows*cols], y[:rows*cols]
	if cols == 3 && ca == 0 && cb == cols {
		// an NHWC image of three channels into planes (layout.go)
		deinterleave3(x, y[:rows], y[rows:2*rows], y[2*rows:])
		return
	}
	r8, c8 := rows&^7, ca+(cb-ca)&^7
	if !has8x8Transpose || r8 == 0 || c8 == ca {
		transposeTiles(y, x, rows, cols, 0, rows, ca, cb)
		return
	}
	for j0 := ca; j0 < c8; j0 += transposeStrip {
		j1 := min(j0+transposeStrip, c8)
		for i0 := 0; i0 < r8; i0 += 8 {
			transpose8((j1-j0)/8, x[i0*cols+j0:], cols, y[j0*rows+i0:], rows)
		}
		transposeTiles(y, x, rows, cols, r8, rows, j0, j1)
	}
	transposeTiles(y, x, rows, cols, 0, rows, c8, cb)
}

// transposeTiles is transpose2D of rows [ra, rb) and columns [ca, cb) of
// x, in 16×16 tiles element by element.
func transposeTiles(y, x []float32, rows, cols, ra, rb, ca, cb int) {
	const tile = 16
	for i0 := ra; i0 < rb; i0 += tile {
		i1 := min(i0+tile, rb)
		for j0 := ca; j0 < cb; j0 += tile {
			j1 := min(j0+tile, cb)
			for j := j0; j < j1; j++ {
				dst := y[j*rows+i0 : j*rows+i1]
				for i := range dst {
					dst[i] = x[(i0+i)*cols+j]
				}
			}
		}
	}
}

// transposeStrided is the general case: y's axis i is x's axis perm[i]
// (dims of x), walked with the innermost axis of y as the inner loop.
func transposeStrided(y, x []float32, dims, perm []int) {
	r := len(dims)
	var xs, od, os [8]int
	s := 1
	for ax := r - 1; ax >= 0; ax-- {
		xs[ax] = s
		s *= dims[ax]
	}
	for i, p := range perm {
		od[i], os[i] = dims[p], xs[p]
	}
	inner, istr := od[r-1], os[r-1]
	var idx [8]int
	off := 0
	for o := 0; o < len(y); o += inner {
		row := y[o : o+inner]
		for j := range row {
			row[j] = x[off+j*istr]
		}
		for d := r - 2; d >= 0; d-- {
			idx[d]++
			off += os[d]
			if idx[d] < od[d] {
				break
			}
			off -= idx[d] * os[d]
			idx[d] = 0
		}
	}
}

// DepthToSpace of float32 [N, C, H, W] (DCR and CRD): output row
// h·bs+i of channel c interleaves the bs input rows h of the channels
// its mode names (one strided store pass an input row), rows across the
// pool. Other dtypes and shapes, and bad attributes (for the error), run
// the reference kernel.

// d2sTask is DepthToSpace's loop over (n, c, h) rows (parallelFor).
type d2sTask struct {
	x, y                 []float32
	c, oc, h, w, bs, cks int
	rows                 int
	crd                  bool
}

func buildDepthToSpace(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	ref, _ := kernels.Lookup("", "DepthToSpace")
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		bs := int(node.AttrInt("blocksize", 0))
		mode := "DCR"
		if ctx.Opset >= 11 {
			mode = node.AttrString("mode", "DCR")
		}
		if x == nil || x.DType != graph.Float32 || len(x.Shape) != 4 || bs < 1 || x.Shape[1]%(bs*bs) != 0 || mode != "DCR" && mode != "CRD" {
			return ref.Kernel(ctx, node, in)
		}
		N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
		oc := C / (bs * bs)
		y, err := ctx.NewUninit(graph.Float32, []int{N, oc, H * bs, W * bs})
		if err != nil {
			return nil, err
		}
		rows := N * oc * H
		chunks := min(rows, 4*bc.pool.threads())
		if rows*bs*bs*W < 1<<14 {
			chunks = min(rows, 1)
		}
		parallelFor(bc.pool, chunks, d2sTask{f32(x), f32(y), C, oc, H, W, bs, chunks, rows, mode == "CRD"}, func(a d2sTask, t int) {
			ow := a.w * a.bs
			for r := a.rows * t / a.cks; r < a.rows*(t+1)/a.cks; r++ {
				b, c, h := r/(a.oc*a.h), r/a.h%a.oc, r%a.h
				for i := 0; i < a.bs; i++ {
					dst := a.y[((b*a.oc+c)*a.h*a.bs+h*a.bs+i)*ow:][:ow]
					if a.bs == 2 {
						// the row's even and odd columns from two channels
						// (layout.go)
						ch0, ch1 := (2*i)*a.oc+c, (2*i+1)*a.oc+c
						if a.crd {
							ch0, ch1 = c*4+2*i, c*4+2*i+1
						}
						interleave2(a.x[((b*a.c+ch0)*a.h+h)*a.w:][:a.w], a.x[((b*a.c+ch1)*a.h+h)*a.w:][:a.w], dst)
						continue
					}
					for j := 0; j < a.bs; j++ {
						ch := (i*a.bs+j)*a.oc + c
						if a.crd {
							ch = c*a.bs*a.bs + i*a.bs + j
						}
						src := a.x[((b*a.c+ch)*a.h+h)*a.w:][:a.w]
						if a.bs == 2 {
							d := dst[j:]
							for k, v := range src {
								d[2*k] = v
							}
							continue
						}
						for k, v := range src {
							dst[k*a.bs+j] = v
						}
					}
				}
			}
		})
		return ctx.Outputs(y), nil
	}, nil
}
