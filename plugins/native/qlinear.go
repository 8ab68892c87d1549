package native

// ONNX's integer ops (core/kernels/quant/qlinear.go holds their reference
// kernels): QLinearConv (2-D, NCHW, group 1 or depthwise with one output
// channel per input channel), QLinearMatMul (a constant 2-D B), the
// com.microsoft QLinearAdd and QLinearMul (equal shapes), QLinearSigmoid
// and QLinearGlobalAveragePool, and Clip on int8/uint8. Their outputs are
// bit-identical to the reference kernels'.
//
// The convolutions and the product run on the int8 GEMM and depthwise
// machinery of quant.go (NHWC, int8) with ONNX's requantisation in
// place of TFLite's: y = saturate(rint(acc·M) + yz), M = float32(
// float32(xs·ws)/ys) and the product in float64, ties to even — the F
// kernels of internal/asmgenq and internal/asmgenq2 and requantF here.
// To get there:
//
//   - uint8 values are read as int8 with the top bit flipped and the zero
//     point less 128 (x − xz is unchanged), and an uint8 output is the
//     int8 result flipped back (its range 0…255 becomes −128…127);
//   - the weights less their zero point (per tensor or per output
//     channel) must fit int8 — always so for symmetric int8 weights —
//     else the node is declined;
//   - NCHW activations are transposed to NHWC on the way in and back on
//     the way out (the GEMM's rows are output positions, its columns
//     output channels).
//
// The element-wise contrib ops are tables built at compile from the
// constant parameters with the reference's float32 arithmetic: 256×256
// entries for QLinearAdd and QLinearMul (every pair of input values),
// 256 for QLinearSigmoid.

import (
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// contribDomain is ONNX Runtime's operator domain.
const contribDomain = "com.microsoft"

// qlinearContrib are the com.microsoft integer ops taken.
var qlinearContrib = map[string]bool{"QLinearAdd": true, "QLinearMul": true, "QLinearSigmoid": true, "QLinearGlobalAveragePool": true}

// qlinearRefOps are default-domain quantization ops claimed to run their
// reference kernels inside the partition (the graph's entry and exit).
var qlinearRefOps = map[string]bool{"QuantizeLinear": true, "DequantizeLinear": true}

// requantF is ONNX's requantisation of one accumulator in the int8
// domain: rint(clamp(acc·m, lo, hi)) + yz with lo, hi the output range
// less yz; the same value as the reference's saturate(rint(acc·m) + yz)
// (the bounds are integers, rounding is monotonic).
func requantF(acc int32, m, lo, hi float64, yz int32) int8 {
	p := float64(acc) * m
	p = min(max(p, lo), hi)
	return int8(int32(math.RoundToEven(p)) + yz)
}

// onnxMult is the reference's multiplier a·b/c for float32 scales: the
// product rounded to float32, the quotient too.
func onnxMult(a, b, c float32) float64 {
	ab := float64(float32(float64(a) * float64(b)))
	return float64(float32(ab / float64(c)))
}

// qparam is one tensor's constant ONNX quantization parameters.
type qparam struct {
	s   []float32
	z   []int32
	zdt graph.DType // the zero point's type (Undefined: absent)
}

func (p qparam) sc(c int) float32 {
	if len(p.s) == 1 {
		return p.s[0]
	}
	return p.s[c]
}

func (p qparam) zp(c int) int32 {
	if len(p.z) == 1 {
		return p.z[0]
	}
	return p.z[c]
}

// onnxOutParam is the output dtype and quantisation of a QLinearConv or
// QLinearMatMul: the dtype of y's zero point (input 7; x's dtype when
// absent), int8 or uint8, with y's scale (input 6).
func onnxOutParam(sg *hal.Subgraph, n *graph.Node, xdt graph.DType) (graph.DType, qparam, string) {
	ydt := xdt
	if len(n.Inputs) > 7 && n.Inputs[7] != "" {
		z := constInput(sg, n, 7)
		if z == nil {
			return 0, qparam{}, fmt.Sprintf("native: %s with a non-constant zero point of y", n.OpType)
		}
		ydt = z.DType
	}
	if ydt != graph.Int8 && ydt != graph.Uint8 {
		return 0, qparam{}, fmt.Sprintf("native: %s output %v: int8 or uint8 expected", n.OpType, ydt)
	}
	yq, r := onnxParam(sg, n, 6, 7, ydt, 0, "y")
	return ydt, yq, r
}

// onnxParam reads the constant scale at si and zero point at zi (absent:
// 0): float32 scales, positive and finite, one or channels (> 0) of
// them; a zero point of type vdt (Undefined: int8 or uint8) and as many.
func onnxParam(sg *hal.Subgraph, n *graph.Node, si, zi int, vdt graph.DType, channels int, what string) (qparam, string) {
	var p qparam
	s := constInput(sg, n, si)
	if s == nil {
		return p, fmt.Sprintf("native: %s with a missing or non-constant scale of %s", n.OpType, what)
	}
	sd, ok := s.Data.([]float32)
	if !ok || s.Check() != nil || len(sd) == 0 {
		return p, fmt.Sprintf("native: %s: scale of %s must be float32 (got %v; float16 scales not taken)", n.OpType, what, s.DType)
	}
	if len(sd) != 1 && (channels <= 0 || len(sd) != channels || len(s.Shape) != 1) {
		return p, fmt.Sprintf("native: %s: %s has scale shape %v: only per tensor%s", n.OpType, what, s.Shape, map[bool]string{true: " or per channel", false: ""}[channels > 0])
	}
	for _, v := range sd {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return p, fmt.Sprintf("native: %s: %s has scale %g (left to the reference kernel's checks)", n.OpType, what, v)
		}
	}
	p.s = sd
	p.z = make([]int32, len(sd))
	if zi >= len(n.Inputs) || n.Inputs[zi] == "" {
		return p, ""
	}
	z := constInput(sg, n, zi)
	if z == nil {
		return p, fmt.Sprintf("native: %s with a non-constant zero point of %s", n.OpType, what)
	}
	if z.Check() != nil || (z.DType != graph.Int8 && z.DType != graph.Uint8) || (vdt != graph.Undefined && z.DType != vdt) || z.Len() != len(sd) {
		return p, fmt.Sprintf("native: %s: zero point of %s is %v%v (left to the reference kernel's checks)", n.OpType, what, z.DType, z.Shape)
	}
	p.zdt = z.DType
	for k := range p.z {
		p.z[k] = int32(z.Int64At(k))
	}
	return p, ""
}

// q8Type declines unless input i is known int8 or uint8 (rank want; 0:
// any) and returns its type.
func q8Type(sg *hal.Subgraph, n *graph.Node, i, want int) (graph.ValueType, string) {
	if i >= len(n.Inputs) || n.Inputs[i] == "" {
		return graph.ValueType{}, fmt.Sprintf("native: %s input %d missing", n.OpType, i)
	}
	t, ok := sg.TypeOf(n.Inputs[i])
	if !ok || (t.DType != graph.Int8 && t.DType != graph.Uint8) {
		return t, fmt.Sprintf("native: %s input %d (%s) is %v: int8 or uint8 expected", n.OpType, i, n.Inputs[i], t.DType)
	}
	if want > 0 && len(t.Shape) != want {
		return t, fmt.Sprintf("native: %s input %d (%s) has rank %d: %d expected", n.OpType, i, n.Inputs[i], len(t.Shape), want)
	}
	return t, ""
}

// flipOf is the bit that maps values of dt onto int8 (0x80 for uint8).
func flipOf(dt graph.DType) int32 {
	if dt == graph.Uint8 {
		return 128
	}
	return 0
}

// bytesOf is a quantized tensor's data as int8 (uint8 reinterpreted),
// nil for any other type.
func bytesOf(t *graph.Tensor) []int8 {
	switch d := t.Data.(type) {
	case []int8:
		return d
	case []uint8:
		if len(d) == 0 {
			return []int8{}
		}
		return unsafe.Slice((*int8)(unsafe.Pointer(&d[0])), len(d))
	}
	return nil
}

// --- QLinearConv ---

// qconvPlan is a QLinearConv the kernels take, read from the node.
type qconvPlan struct {
	xdt, ydt     graph.DType
	c, m         int // input and output channels
	kh, kw       int
	depthwise    bool
	gm           qconvGeom
	w8           []int8 // group 1: OHWI; depthwise: [kh·kw][c]; less the zero point
	bias         []int32
	mult         []float64
	xz, yz       int32 // in the int8 domain
	flo, fhi     float64
	flipX, flipY int8
}

// planQLinearConv reads a QLinearConv node, or says why not.
func planQLinearConv(sg *hal.Subgraph, n *graph.Node) (*qconvPlan, string) {
	xt, r := q8Type(sg, n, 0, 4)
	if r != "" {
		return nil, r + " (only 2-D convolutions of int8 or uint8)"
	}
	w := constInput(sg, n, 3)
	if w == nil || (w.DType != graph.Int8 && w.DType != graph.Uint8) || w.Check() != nil || len(w.Shape) != 4 || w.Len() == 0 {
		return nil, "native: QLinearConv needs constant 4-D int8 or uint8 weights"
	}
	if !xt.Shape[1].Static() {
		return nil, "native: QLinearConv with unknown input channels not taken"
	}
	p := &qconvPlan{xdt: xt.DType, c: int(xt.Shape[1].Value), m: w.Shape[0], kh: w.Shape[2], kw: w.Shape[3]}
	group := int(n.AttrInt("group", 1))
	switch {
	case group == 1 && w.Shape[1] == p.c:
	case group == p.c && p.m == p.c && w.Shape[1] == 1:
		p.depthwise = true
	default:
		return nil, fmt.Sprintf("native: QLinearConv group %d of x %v by w %v: only group 1 or depthwise (one output channel per input channel)", group, xt.Shape, w.Shape)
	}
	if ap := n.AttrString("auto_pad", "NOTSET"); ap != "NOTSET" && ap != "" && ap != "VALID" {
		return nil, fmt.Sprintf("native: QLinearConv auto_pad %q not taken", ap)
	}
	if ks := n.AttrInts("kernel_shape", nil); ks != nil && (len(ks) != 2 || int(ks[0]) != p.kh || int(ks[1]) != p.kw) {
		return nil, fmt.Sprintf("native: QLinearConv kernel_shape %v does not match w %v", ks, w.Shape)
	}
	pads := []int64{0, 0, 0, 0}
	if n.AttrString("auto_pad", "NOTSET") != "VALID" {
		pads = n.AttrInts("pads", pads)
	}
	st, dl := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("dilations", []int64{1, 1})
	if len(st) != 2 || len(dl) != 2 || len(pads) != 4 {
		return nil, fmt.Sprintf("native: QLinearConv strides %v, dilations %v, pads %v: 2, 2 and 4 values expected", st, dl, pads)
	}
	for _, v := range append(append(append([]int64{}, st...), dl...), pads...) {
		if v < 0 || v > 1<<16 {
			return nil, fmt.Sprintf("native: QLinearConv strides %v, dilations %v, pads %v out of range", st, dl, pads)
		}
	}
	if st[0] == 0 || st[1] == 0 || dl[0] == 0 || dl[1] == 0 {
		return nil, fmt.Sprintf("native: QLinearConv strides %v, dilations %v out of range", st, dl)
	}
	// ONNX pads are [top, left, bottom, right]
	p.gm = qconvGeom{kh: p.kh, kw: p.kw, sh: int(st[0]), sw: int(st[1]), dh: int(dl[0]), dw: int(dl[1]),
		pt: int(pads[0]), pl: int(pads[1]), pb: int(pads[2]), pr: int(pads[3])}
	xq, r := onnxParam(sg, n, 1, 2, xt.DType, 0, "x")
	if r != "" {
		return nil, r
	}
	wq, r := onnxParam(sg, n, 4, 5, w.DType, p.m, "w")
	if r != "" {
		return nil, r
	}
	var yq qparam
	p.ydt, yq, r = onnxOutParam(sg, n, xt.DType)
	if r != "" {
		return nil, r
	}
	if len(n.Inputs) > 8 && n.Inputs[8] != "" {
		b := constInput(sg, n, 8)
		if b == nil || b.DType != graph.Int32 || b.Len() != p.m || b.Check() != nil {
			return nil, fmt.Sprintf("native: QLinearConv bias must be constant int32[%d]", p.m)
		}
		p.bias = graph.Data[int32](b)
	} else {
		p.bias = make([]int32, p.m)
	}
	// the weights less their zero point, reordered for the NHWC kernels
	wv := bytesOf(w)
	wf := flipOf(w.DType)
	taps := p.kh * p.kw
	cg := w.Shape[1]
	p.w8 = make([]int8, w.Len())
	for m := 0; m < p.m; m++ {
		z := wq.zp(m)
		for c := 0; c < cg; c++ {
			for t := 0; t < taps; t++ {
				v := int32(wv[(m*cg+c)*taps+t]^int8(wf)) + wf - z // w as its own type, less the zero point
				if v < -128 || v > 127 {
					return nil, fmt.Sprintf("native: QLinearConv weights less their zero point reach %d (channel %d): outside int8, not taken", v, m)
				}
				if p.depthwise {
					p.w8[t*p.c+m] = int8(v)
				} else {
					p.w8[(m*taps+t)*cg+c] = int8(v)
				}
			}
		}
	}
	p.mult = make([]float64, p.m)
	for m := range p.mult {
		p.mult[m] = onnxMult(xq.s[0], wq.sc(m), yq.s[0])
		if math.IsInf(p.mult[m], 0) || math.IsNaN(p.mult[m]) {
			return nil, fmt.Sprintf("native: QLinearConv multiplier of channel %d is %g (left to the reference kernel)", m, p.mult[m])
		}
	}
	fx, fy := flipOf(p.xdt), flipOf(p.ydt)
	p.flipX, p.flipY = int8(uint8(fx)), int8(uint8(fy))
	p.xz = xq.z[0] - fx
	p.yz = yq.z[0] - fy
	p.flo, p.fhi = float64(-128-p.yz), float64(127-p.yz)
	return p, ""
}

func checkQLinearConv(sg *hal.Subgraph, n *graph.Node) string {
	_, r := planQLinearConv(sg, n)
	return r
}

// xfer is a scratch buffer pool of int8 slices.
type xfer struct{ p sync.Pool }

func (x *xfer) get(n int) []int8 {
	if v := x.p.Get(); v != nil {
		if b := *v.(*[]int8); cap(b) >= n {
			return b[:n]
		}
	}
	return make([]int8, n)
}

func (x *xfer) put(b []int8) { x.p.Put(&b) }

// nchwToNHWC writes src [n][c][p] as dst [n][p][c], each byte xor flip.
func nchwToNHWC(dst, src []int8, n, c, p int, flip int8) {
	for b := 0; b < n; b++ {
		transposeBytes(dst[b*c*p:(b+1)*c*p], src[b*c*p:(b+1)*c*p], c, p, flip)
	}
}

// nhwcToNCHW writes src [n][p][c] as dst [n][c][p], each byte xor flip.
func nhwcToNCHW(dst, src []int8, n, p, c int, flip int8) {
	for b := 0; b < n; b++ {
		transposeBytes(dst[b*c*p:(b+1)*c*p], src[b*c*p:(b+1)*c*p], p, c, flip)
	}
}

// transposeBytes writes the rows×cols bytes of src transposed into dst
// (dst[j][i] = src[i][j] ^ flip): 8×8 blocks as eight uint64 swapped in
// three rounds (bytes, pairs, quads), the edges byte by byte.
func transposeBytes(dst, src []int8, rows, cols int, flip int8) {
	if len(src) < rows*cols || len(dst) < rows*cols {
		panic("native: transposeBytes out of range")
	}
	fw := uint64(uint8(flip)) * 0x0101010101010101
	r8, c8 := rows&^7, cols&^7
	if hasTransposeASM && qkernelFamily() != "generic" && r8 > 0 && cols >= 16 {
		var fv [16]byte
		for i := range fv {
			fv[i] = byte(flip)
		}
		c16 := cols &^ 15
		for i := 0; i < r8; i += 8 {
			transpose8xN(&dst[i], rows, &src[i*cols], cols, c16/16, &fv[0])
		}
		for i := 0; i < r8; i++ {
			for j := c16; j < cols; j++ {
				dst[j*rows+i] = src[i*cols+j] ^ flip
			}
		}
		for i := r8; i < rows; i++ {
			for j := 0; j < cols; j++ {
				dst[j*rows+i] = src[i*cols+j] ^ flip
			}
		}
		return
	}
	sp := unsafe.Pointer(unsafe.SliceData(src))
	dp := unsafe.Pointer(unsafe.SliceData(dst))
	ld := func(i, j int) uint64 { return *(*uint64)(unsafe.Add(sp, i*cols+j)) ^ fw }
	st := func(j, i int, v uint64) { *(*uint64)(unsafe.Add(dp, j*rows+i)) = v }
	for i := 0; i < r8; i += 8 {
		for j := 0; j < c8; j += 8 {
			x0, x1, x2, x3 := ld(i, j), ld(i+1, j), ld(i+2, j), ld(i+3, j)
			x4, x5, x6, x7 := ld(i+4, j), ld(i+5, j), ld(i+6, j), ld(i+7, j)
			const m1, m2, m4 = 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF
			t := ((x0 >> 8) ^ x1) & m1
			x1 ^= t
			x0 ^= t << 8
			t = ((x2 >> 8) ^ x3) & m1
			x3 ^= t
			x2 ^= t << 8
			t = ((x4 >> 8) ^ x5) & m1
			x5 ^= t
			x4 ^= t << 8
			t = ((x6 >> 8) ^ x7) & m1
			x7 ^= t
			x6 ^= t << 8
			t = ((x0 >> 16) ^ x2) & m2
			x2 ^= t
			x0 ^= t << 16
			t = ((x1 >> 16) ^ x3) & m2
			x3 ^= t
			x1 ^= t << 16
			t = ((x4 >> 16) ^ x6) & m2
			x6 ^= t
			x4 ^= t << 16
			t = ((x5 >> 16) ^ x7) & m2
			x7 ^= t
			x5 ^= t << 16
			t = ((x0 >> 32) ^ x4) & m4
			x4 ^= t
			x0 ^= t << 32
			t = ((x1 >> 32) ^ x5) & m4
			x5 ^= t
			x1 ^= t << 32
			t = ((x2 >> 32) ^ x6) & m4
			x6 ^= t
			x2 ^= t << 32
			t = ((x3 >> 32) ^ x7) & m4
			x7 ^= t
			x3 ^= t << 32
			// xk now holds column j+k of the block
			st(j, i, x0)
			st(j+1, i, x1)
			st(j+2, i, x2)
			st(j+3, i, x3)
			st(j+4, i, x4)
			st(j+5, i, x5)
			st(j+6, i, x6)
			st(j+7, i, x7)
		}
	}
	for i := 0; i < rows; i++ {
		j0 := c8
		if i >= r8 {
			j0 = 0
		}
		for j := j0; j < cols; j++ {
			dst[j*rows+i] = src[i*cols+j] ^ flip
		}
	}
}

// buildQLinearConv builds a QLinearConv the check took.
// A fused Clip (f.qclip) narrows the output range: clamping the
// saturated value to [lo, hi] is clamping the unsaturated one to the
// intersection (min last: lo > hi gives hi, as Clip does).
func buildQLinearConv(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	p, r := planQLinearConv(bc.sg, n)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	ref, _ := kernels.Lookup("", "QLinearConv")
	var clipRef kernels.Func
	if f != nil && f.qclip != nil {
		lo, hi, r := clipQBounds(bc.sg, f.qclip, p.ydt)
		if r != "" {
			return nil, fmt.Errorf("%s", r)
		}
		fy := flipOf(p.ydt)
		p.flo = max(p.flo, float64(lo-fy-p.yz))
		p.fhi = min(p.fhi, float64(hi-fy-p.yz))
		k, _ := kernels.Lookup("", "Clip")
		clip, node := k.Kernel, f.qclip
		conv := ref.Kernel
		clipRef = func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			y, err := conv(ctx, n, in)
			if err != nil {
				return nil, err
			}
			cin := []*graph.Tensor{y[0], bc.sg.ConstOf(node.Inputs[1]), nil}
			if len(node.Inputs) > 2 && node.Inputs[2] != "" {
				cin[2] = bc.sg.ConstOf(node.Inputs[2])
			}
			return clip(ctx, node, cin)
		}
	}
	refConv := ref.Kernel
	if clipRef != nil {
		refConv = clipRef
	}
	pool := bc.pool
	gm := p.gm
	var nhwc func(x []int8, N, H, W int, y []int8, oh, ow int)
	if p.depthwise {
		d := &qdw{kh: p.kh, kw: p.kw, c: p.c, xz: p.xz, yz: p.yz, lo: -128, hi: 127, bias: p.bias, gm: gm,
			fm: p.mult, flo: p.flo, fhi: p.fhi}
		d.w = make([]int32, len(p.w8))
		for i, v := range p.w8 {
			d.w[i] = int32(v)
		}
		d.fn, d.pairs = archDWQF()
		if d.fn != nil {
			d.prepareASMF()
		}
		nhwc = func(x []int8, N, H, W int, y []int8, oh, ow int) {
			run := &qdwRun{d: d, x: x, y: y, h: H, w: W, oh: oh, ow: ow}
			if d.fn != nil {
				d.runASM(pool, run, N)
				return
			}
			parallelFor(pool, N*oh, run, func(r *qdwRun, t int) { r.d.row(r, t) })
		}
	} else {
		k := p.kh * p.kw * p.c
		m := 64
		if xt, ok := bc.sg.TypeOf(n.Inputs[0]); ok {
			if dims, _ := xt.Shape.Ints(); len(dims) == 4 {
				oh := (dims[2]+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
				ow := (dims[3]+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
				m = max(dims[0]*oh*ow, 1)
			}
		}
		g := newQGemmF(p.w8, p.m, k, m, p.bias, p.xz, p.mult, p.yz, p.flo, p.fhi)
		var imgPool sync.Pool
		c := p.c
		nhwc = func(x []int8, N, H, W int, y []int8, oh, ow int) {
			fill, img := convFill(&imgPool, x, N, H, W, c, gm, p.xz, oh, ow)
			g.run(pool, N*oh*ow, fill, y, p.m)
			if img != nil {
				imgPool.Put(img)
			}
		}
	}
	var bufs xfer
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x := bytesOf(xt)
		if x == nil || xt.DType != p.xdt || xt.Check() != nil || len(xt.Shape) != 4 || xt.Shape[1] != p.c {
			return refConv(ctx, node, in)
		}
		N, H, W := xt.Shape[0], xt.Shape[2], xt.Shape[3]
		if H+gm.pt+gm.pb < (gm.kh-1)*gm.dh+1 || W+gm.pl+gm.pr < (gm.kw-1)*gm.dw+1 {
			return refConv(ctx, node, in)
		}
		oh := (H+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
		ow := (W+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
		out, err := ctx.NewUninit(p.ydt, []int{N, p.m, oh, ow})
		if err != nil {
			return nil, err
		}
		if ctx.Stopped() {
			return nil, ctx.Stop(node)
		}
		y := bytesOf(out)
		xs := bufs.get(len(x))
		ys := bufs.get(len(y))
		nchwToNHWC(xs, x, N, p.c, H*W, p.flipX)
		nhwc(xs, N, H, W, ys, oh, ow)
		nhwcToNCHW(y, ys, N, oh*ow, p.m, p.flipY)
		bufs.put(xs)
		bufs.put(ys)
		return ctx.Outputs(out), nil
	}, nil
}

// newQGemmF is newQGemm with ONNX's float requantisation: mult per
// output channel, the int8-domain output zero point yz and the bounds
// less it.
func newQGemmF(w []int8, n, k, m int, bias []int32, xz int32, mult []float64, yz int32, flo, fhi float64) *qgemm {
	ks := archQKernelsF()
	if len(ks) == 0 {
		ks = []qkernel{{name: "genericf", mr: 4, nv: 1}}
	}
	g := packQGemm(w, n, k, pickQKernel(ks, m, n), bias, xz)
	g.fm, g.flo, g.fhi, g.yz = mult, flo, fhi, yz
	gw := 16 * g.kern.nv
	st := rqStrideF(g.kern.nv)
	g.rqst = st
	g.rq = make([]int32, g.groups*st)
	for gi := 0; gi < g.groups; gi++ {
		fillRQF(g.rq[gi*st:(gi+1)*st], gw, gi*gw, n, g.corr, mult, flo, fhi, yz)
	}
	return g
}

// rqStrideF is one group's float requantisation block (asmgenq's
// requantF): corr (gw int32), m (gw float64), lo′, hi′ (float64), yz, pad.
func rqStrideF(nv int) int { return 3*16*nv + 8 }

// fillRQF writes the float block of channels c0…c0+gw−1 (those below n).
func fillRQF(blk []int32, gw, c0, n int, corr []int32, mult []float64, flo, fhi float64, yz int32) {
	put := func(i int, v float64) {
		b := math.Float64bits(v)
		blk[i], blk[i+1] = int32(uint32(b)), int32(uint32(b>>32))
	}
	for j := 0; j < gw; j++ {
		c := c0 + j
		if c >= n {
			continue
		}
		blk[j] = corr[c]
		put(gw+2*j, mult[c])
	}
	put(3*gw, flo)
	put(3*gw+2, fhi)
	blk[3*gw+4] = yz
}

// prepareASMF is prepareASM for the float kernels: corr[c] = bias[c] −
// xz·Σ_t w[t][c], the float blocks per 16 channels.
func (d *qdw) prepareASMF() {
	corr := d.layoutWeights(rqStrideF(1))
	for cb := 0; cb < d.cp/16; cb++ {
		fillRQF(d.rq[cb*d.rqst:(cb+1)*d.rqst], 16, cb*16, d.c, corr, d.fm, d.flo, d.fhi, d.yz)
	}
}

// checkQLinearDefault is the verdict for the default-domain ONNX integer
// ops and Clip of int8/uint8; false for every other node.
func checkQLinearDefault(sg *hal.Subgraph, n *graph.Node) (string, bool) {
	switch n.OpType {
	case "QLinearConv":
		return checkQLinearConv(sg, n), true
	case "QLinearMatMul":
		_, r := planQLinearMatMul(sg, n)
		return r, true
	case "Clip":
		if t, ok := sg.TypeOf(input0(n)); ok && (t.DType == graph.Int8 || t.DType == graph.Uint8) {
			_, _, r := clipQBounds(sg, n, t.DType)
			return r, true
		}
	}
	if qlinearRefOps[n.OpType] {
		return "", true
	}
	return "", false
}

// buildQLinear builds the nodes checkQLinearDefault and
// checkQLinearContrib take; false for every other node.
func buildQLinear(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, bool, error) {
	if n.Domain == contribDomain && qlinearContrib[n.OpType] {
		f, err := buildQLinearContrib(bc, n)
		return f, true, err
	}
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return nil, false, nil
	}
	switch n.OpType {
	case "QLinearConv":
		k, err := buildQLinearConv(bc, n, f)
		return k, true, err
	case "QLinearMatMul":
		f, err := buildQLinearMatMul(bc, n)
		return f, true, err
	case "Clip":
		if t, ok := bc.sg.TypeOf(input0(n)); ok && (t.DType == graph.Int8 || t.DType == graph.Uint8) {
			f, err := buildClipQ(bc, n, t.DType)
			return f, true, err
		}
	}
	if qlinearRefOps[n.OpType] {
		return nil, true, nil
	}
	return nil, false, nil
}

// input0 is a node's first input ("" when it has none).
func input0(n *graph.Node) string {
	if len(n.Inputs) == 0 {
		return ""
	}
	return n.Inputs[0]
}
