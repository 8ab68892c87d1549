package native

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// --- QLinearMatMul ---

// qmatmulPlan is a QLinearMatMul the kernels take: a [..., M, K] per
// tensor times a constant b [K, N] per tensor or per column, y per
// tensor.
type qmatmulPlan struct {
	adt, ydt     graph.DType
	k, n         int
	w8           []int8 // [n][k], b less its zero point
	mult         []float64
	xz, yz       int32 // int8 domain
	flo, fhi     float64
	flipA, flipY int8
}

func planQLinearMatMul(sg *hal.Subgraph, n *graph.Node) (*qmatmulPlan, string) {
	at, r := q8Type(sg, n, 0, 0)
	if r != "" {
		return nil, r
	}
	if len(at.Shape) < 2 {
		return nil, fmt.Sprintf("native: QLinearMatMul of a %v: rank >= 2 expected", at.Shape)
	}
	b := constInput(sg, n, 3)
	if b == nil || (b.DType != graph.Int8 && b.DType != graph.Uint8) || b.Check() != nil || len(b.Shape) != 2 || b.Len() == 0 {
		return nil, "native: QLinearMatMul needs a constant 2-D int8 or uint8 b"
	}
	K, N := b.Shape[0], b.Shape[1]
	if d := at.Shape[len(at.Shape)-1]; !d.Static() || int(d.Value) != K {
		return nil, fmt.Sprintf("native: QLinearMatMul of a %v by b %v: inner dimensions unknown or different", at.Shape, b.Shape)
	}
	aq, r := onnxParam(sg, n, 1, 2, at.DType, 0, "a")
	if r != "" {
		return nil, r
	}
	bq, r := onnxParam(sg, n, 4, 5, b.DType, N, "b")
	if r != "" {
		return nil, r
	}
	p := &qmatmulPlan{adt: at.DType, k: K, n: N}
	var yq qparam
	p.ydt, yq, r = onnxOutParam(sg, n, at.DType)
	if r != "" {
		return nil, r
	}
	bv, bf := bytesOf(b), flipOf(b.DType)
	p.w8 = make([]int8, K*N)
	for k := 0; k < K; k++ {
		for c := 0; c < N; c++ {
			v := int32(bv[k*N+c]^int8(uint8(bf))) + bf - bq.zp(c)
			if v < -128 || v > 127 {
				return nil, fmt.Sprintf("native: QLinearMatMul b less its zero point reaches %d (column %d): outside int8, not taken", v, c)
			}
			p.w8[c*K+k] = int8(v)
		}
	}
	p.mult = make([]float64, N)
	for c := range p.mult {
		p.mult[c] = onnxMult(aq.s[0], bq.sc(c), yq.s[0])
		if math.IsInf(p.mult[c], 0) || math.IsNaN(p.mult[c]) {
			return nil, fmt.Sprintf("native: QLinearMatMul multiplier of column %d is %g (left to the reference kernel)", c, p.mult[c])
		}
	}
	fa, fy := flipOf(p.adt), flipOf(p.ydt)
	p.flipA, p.flipY = int8(uint8(fa)), int8(uint8(fy))
	p.xz, p.yz = aq.z[0]-fa, yq.z[0]-fy
	p.flo, p.fhi = float64(-128-p.yz), float64(127-p.yz)
	return p, ""
}

func buildQLinearMatMul(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	p, r := planQLinearMatMul(bc.sg, n)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	ref, _ := kernels.Lookup("", "QLinearMatMul")
	m := 64
	if at, ok := bc.sg.TypeOf(n.Inputs[0]); ok {
		if dims, ok := at.Shape.Ints(); ok {
			m = max(kernels.Prod(dims)/p.k, 1)
		}
	}
	bias := make([]int32, p.n)
	g := newQGemmF(p.w8, p.n, p.k, m, bias, p.xz, p.mult, p.yz, p.flo, p.fhi)
	pool := bc.pool
	var bufs xfer
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		at := in[0]
		a := bytesOf(at)
		if a == nil || at.DType != p.adt || at.Check() != nil || len(at.Shape) < 2 || at.Shape[len(at.Shape)-1] != p.k {
			return ref.Kernel(ctx, node, in)
		}
		rows := len(a) / p.k
		shape := append(append([]int{}, at.Shape[:len(at.Shape)-1]...), p.n)
		out, err := ctx.NewUninit(p.ydt, shape)
		if err != nil {
			return nil, err
		}
		src := a
		if p.flipA != 0 {
			src = bufs.get(len(a))
			defer bufs.put(src)
			flipInto(src, a, p.flipA)
		}
		y := bytesOf(out)
		g.run(pool, rows, packRows(src, p.k), y, p.n)
		if p.flipY != 0 {
			flipInto(y, y, p.flipY)
		}
		return ctx.Outputs(out), nil
	}, nil
}

// flipInto is dst[i] = src[i] ^ f, eight bytes at a time.
func flipInto(dst, src []int8, f int8) {
	w := uint64(uint8(f)) * 0x0101010101010101
	i := 0
	for ; i+8 <= len(src); i += 8 {
		v := uint64(uint8(src[i])) | uint64(uint8(src[i+1]))<<8 | uint64(uint8(src[i+2]))<<16 | uint64(uint8(src[i+3]))<<24 |
			uint64(uint8(src[i+4]))<<32 | uint64(uint8(src[i+5]))<<40 | uint64(uint8(src[i+6]))<<48 | uint64(uint8(src[i+7]))<<56
		v ^= w
		for j := 0; j < 8; j++ {
			dst[i+j] = int8(uint8(v >> (8 * j)))
		}
	}
	for ; i < len(src); i++ {
		dst[i] = src[i] ^ f
	}
}

// --- Clip of int8 / uint8 ---

// clipQBounds reads Clip's constant bounds for values of dt (absent: the
// type's range), or says why not.
func clipQBounds(sg *hal.Subgraph, n *graph.Node, dt graph.DType) (lo, hi int32, reason string) {
	lo, hi = -128, 127
	if dt == graph.Uint8 {
		lo, hi = 0, 255
	}
	if sg.OpsetVersion("") < 11 {
		return 0, 0, "native: Clip of int8 before opset 11 (float bounds) not taken"
	}
	for i := 1; i < len(n.Inputs) && i <= 2; i++ {
		if n.Inputs[i] == "" {
			continue
		}
		c := constInput(sg, n, i)
		if c == nil || c.DType != dt || c.Len() != 1 || c.Check() != nil {
			return 0, 0, fmt.Sprintf("native: Clip of %v needs a constant %v scalar bound (input %d)", dt, dt, i)
		}
		v := int32(c.Int64At(0))
		if i == 1 {
			lo = v
		} else {
			hi = v
		}
	}
	return lo, hi, ""
}

// buildClipQ is Clip of int8 or uint8: min(max(x, lo), hi) (ONNX: when
// lo > hi every value is hi, which this gives too).
func buildClipQ(bc *buildCtx, n *graph.Node, dt graph.DType) (kernels.Func, error) {
	lo, hi, r := clipQBounds(bc.sg, n, dt)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	ref, _ := kernels.Lookup("", "Clip")
	// a table over the byte values (as stored)
	var t [256]int8
	for b := 0; b < 256; b++ {
		v := int32(int8(uint8(b)))
		if dt == graph.Uint8 {
			v = int32(b)
		}
		v = min(max(v, lo), hi)
		t[b] = int8(uint8(v))
	}
	pool := bc.pool
	type clipArg struct {
		x, y []int8
		t    *[256]int8
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x := bytesOf(xt)
		if x == nil || xt.DType != dt || xt.Check() != nil {
			return ref.Kernel(ctx, node, in)
		}
		out, err := ctx.NewUninit(dt, xt.Shape)
		if err != nil {
			return nil, err
		}
		chunksFor(pool, len(x), &clipArg{x: x, y: bytesOf(out), t: &t}, func(a *clipArg, i0, i1 int) {
			y, x := a.y[i0:i1], a.x[i0:i1]
			for i, v := range x {
				y[i] = a.t[uint8(v)]
			}
		})
		return ctx.Outputs(out), nil
	}, nil
}

// --- com.microsoft QLinearAdd, QLinearMul, QLinearSigmoid, QLinearGlobalAveragePool ---

// round32 is the reference's rint of a float32 value plus zp, saturated
// to [lo, hi] (NaN: lo).
func round32(v float32, zp, lo, hi int32) int32 {
	r := math.RoundToEven(float64(v)) + float64(zp)
	if r != r {
		return lo
	}
	return int32(min(max(r, float64(lo)), float64(hi)))
}

func qRangeOf(dt graph.DType) (int32, int32) {
	if dt == graph.Uint8 {
		return 0, 255
	}
	return -128, 127
}

// byteValue is the value a stored byte holds in dt.
func byteValue(dt graph.DType, b int) int32 {
	if dt == graph.Uint8 {
		return int32(b)
	}
	return int32(int8(uint8(b)))
}

// contribPlan are a contrib op's parameters (per tensor).
type contribPlan struct {
	dt     graph.DType
	params []qparam
}

func planContrib(sg *hal.Subgraph, n *graph.Node) (*contribPlan, string) {
	t, r := q8Type(sg, n, 0, 0)
	if r != "" {
		return nil, r
	}
	p := &contribPlan{dt: t.DType}
	var pairs [][3]int // scale, zero point, value
	switch n.OpType {
	case "QLinearAdd", "QLinearMul":
		bt, r := q8Type(sg, n, 3, 0)
		if r != "" {
			return nil, r
		}
		if bt.DType != t.DType {
			return nil, fmt.Sprintf("native: %s of %v and %v (left to the reference kernel's checks)", n.OpType, t.DType, bt.DType)
		}
		pairs = [][3]int{{1, 2}, {4, 5}, {6, 7}}
	case "QLinearSigmoid", "QLinearGlobalAveragePool":
		pairs = [][3]int{{1, 2}, {3, 4}}
		if n.OpType == "QLinearGlobalAveragePool" && len(t.Shape) < 3 {
			return nil, fmt.Sprintf("native: QLinearGlobalAveragePool of %v: rank >= 3 expected", t.Shape)
		}
	default:
		return nil, fmt.Sprintf("native: op %s.%s not implemented", n.Domain, n.OpType)
	}
	for i, pr := range pairs {
		q, r := onnxParam(sg, n, pr[0], pr[1], t.DType, 0, fmt.Sprintf("parameter set %d", i))
		if r != "" {
			return nil, r
		}
		p.params = append(p.params, q)
	}
	return p, ""
}

func checkQLinearContrib(sg *hal.Subgraph, n *graph.Node) string {
	_, r := planContrib(sg, n)
	return r
}

func buildQLinearContrib(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	p, r := planContrib(bc.sg, n)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	ref, _ := kernels.Lookup(contribDomain, n.OpType)
	lo, hi := qRangeOf(p.dt)
	pool := bc.pool
	switch n.OpType {
	case "QLinearAdd", "QLinearMul":
		ap, bp, cp := p.params[0], p.params[1], p.params[2]
		sa, sb, sc := ap.s[0], bp.s[0], cp.s[0]
		za, zb, zc := ap.z[0], bp.z[0], cp.z[0]
		t := make([]int8, 65536)
		add := n.OpType == "QLinearAdd"
		ra, rb := sa/sc, sb/sc
		m := float32(float32(sa*sb) / sc)
		for ia := 0; ia < 256; ia++ {
			va0 := byteValue(p.dt, ia)
			for ib := 0; ib < 256; ib++ {
				vb0 := byteValue(p.dt, ib)
				var v int32
				if add {
					va := float32(ra * float32(va0-za))
					vb := float32(rb * float32(vb0-zb))
					v = round32(va+vb, zc, lo, hi)
				} else {
					pr := float32(float32(va0-za) * float32(vb0-zb))
					v = round32(float32(pr*m), zc, lo, hi)
				}
				t[ia<<8|ib] = int8(uint8(v))
			}
		}
		type binArg struct{ a, b, y, t []int8 }
		return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			at, bt := in[0], kernels.Input(in, 3)
			if at == nil || bt == nil || at.DType != p.dt || bt.DType != p.dt || at.Check() != nil || bt.Check() != nil || !sameShape(at.Shape, bt.Shape) {
				return ref.Kernel(ctx, node, in)
			}
			out, err := ctx.NewUninit(p.dt, at.Shape)
			if err != nil {
				return nil, err
			}
			chunksFor(pool, at.Len(), &binArg{a: bytesOf(at), b: bytesOf(bt), y: bytesOf(out), t: t}, func(q *binArg, i0, i1 int) {
				a, b, y := q.a[i0:i1], q.b[i0:i1], q.y[i0:i1]
				for i := range y {
					y[i] = q.t[int(uint8(a[i]))<<8|int(uint8(b[i]))]
				}
			})
			return ctx.Outputs(out), nil
		}, nil
	case "QLinearSigmoid":
		xp, yp := p.params[0], p.params[1]
		xs, xz, ys, yz := xp.s[0], xp.z[0], yp.s[0], yp.z[0]
		var t [256]int8
		for b := 0; b < 256; b++ {
			v := float32(float32(byteValue(p.dt, b)-xz) * xs)
			v = float32(1 / (1 + math.Exp(-float64(v))))
			t[b] = int8(uint8(round32(v/ys, yz, lo, hi)))
		}
		type sigArg struct {
			x, y []int8
			t    *[256]int8
		}
		return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			xt := in[0]
			x := bytesOf(xt)
			if x == nil || xt.DType != p.dt || xt.Check() != nil {
				return ref.Kernel(ctx, node, in)
			}
			out, err := ctx.NewUninit(p.dt, xt.Shape)
			if err != nil {
				return nil, err
			}
			chunksFor(pool, len(x), &sigArg{x: x, y: bytesOf(out), t: &t}, func(a *sigArg, i0, i1 int) {
				y, x := a.y[i0:i1], a.x[i0:i1]
				for i, v := range x {
					y[i] = a.t[uint8(v)]
				}
			})
			return ctx.Outputs(out), nil
		}, nil
	}
	// QLinearGlobalAveragePool
	xp, yp := p.params[0], p.params[1]
	last := n.AttrInt("channels_last", 0) != 0
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x := bytesOf(xt)
		if x == nil || xt.DType != p.dt || xt.Check() != nil || len(xt.Shape) < 3 {
			return ref.Kernel(ctx, node, in)
		}
		N, C := xt.Shape[0], xt.Shape[1]
		if last {
			C = xt.Shape[len(xt.Shape)-1]
		}
		count := kernels.Prod(xt.Shape) / max(N*C, 1)
		if count == 0 {
			return ref.Kernel(ctx, node, in)
		}
		shape := make([]int, len(xt.Shape))
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = N
		if last {
			shape[len(shape)-1] = C
		} else {
			shape[1] = C
		}
		out, err := ctx.NewUninit(p.dt, shape)
		if err != nil {
			return nil, err
		}
		y := bytesOf(out)
		scale := float32(xp.s[0] / float32(yp.s[0]*float32(count)))
		u8 := p.dt == graph.Uint8
		sums := make([]int32, C)
		for b := 0; b < N; b++ {
			clear(sums)
			img := x[b*C*count : (b+1)*C*count]
			if last {
				for k := 0; k < count; k++ {
					row := img[k*C : (k+1)*C]
					for c, v := range row {
						if u8 {
							sums[c] += int32(uint8(v))
						} else {
							sums[c] += int32(v)
						}
					}
				}
			} else {
				for c := 0; c < C; c++ {
					s := int32(0)
					for _, v := range img[c*count : (c+1)*count] {
						if u8 {
							s += int32(uint8(v))
						} else {
							s += int32(v)
						}
					}
					sums[c] = s
				}
			}
			for c, s := range sums {
				s -= xp.z[0] * int32(count)
				y[b*C+c] = int8(uint8(round32(float32(float32(s)*scale), yp.z[0], lo, hi)))
			}
		}
		return ctx.Outputs(out), nil
	}, nil
}
