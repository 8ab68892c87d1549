package tflite_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/runtime"
)

// A tiny .tflite writer for tests: the schema's field numbers, one
// subgraph, float32 tensors (int32 and int8 constants, int8 activations
// and quantization parameters where a test asks for them).
type synTensor struct {
	shape []int32
	data  []float32 // nil for activations
	ints  []int32   // an INT32 constant instead
	i8    []int8    // an INT8 constant instead
	typ   int8      // the TensorType of an activation (0: FLOAT32)
	quant *synQuant
	f16   []uint16 // a FLOAT16 constant instead (raw half bits)
	// sparsity makes a constant sparse: data, ints, i8 or f16 then hold
	// only the stored values, in traversal order
	sparsity *tflite.Sparsity
}

// synQuant are a tensor's QuantizationParameters.
type synQuant struct {
	scale []float32
	zp    []int64
	dim   int32
}

type synOp struct {
	code    int32
	in, out []int32
	// opts writes the options table (nil: none); ints are int32 slots,
	// bytes are uint8 slots, by field number
	ints   map[int]int32
	bytes  map[int]uint8
	custom string // custom_code of a CUSTOM (32) op
	// optType is the BuiltinOptions union type of opts (0: 1,
	// Conv2DOptions; TFLite itself reads options of the right type only)
	optType uint8
}

func int32Vec(b *flatbuffers.Builder, v []int32) flatbuffers.UOffsetT {
	b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		b.PrependInt32(v[i])
	}
	return b.EndVector(len(v))
}

func offVec(b *flatbuffers.Builder, v []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(v), 4)
	for i := len(v) - 1; i >= 0; i-- {
		b.PrependUOffsetT(v[i])
	}
	return b.EndVector(len(v))
}

func buildTFLite(tensors []synTensor, ops []synOp, inputs, outputs []int32) []byte {
	b := flatbuffers.NewBuilder(1024)
	bufs := []flatbuffers.UOffsetT{}
	b.StartObject(3)
	bufs = append(bufs, b.EndObject())
	bufIdx := make([]uint32, len(tensors))
	for i, t := range tensors {
		if t.data == nil && t.ints == nil && t.i8 == nil && t.f16 == nil {
			continue
		}
		raw := make([]byte, 4*(len(t.data)+len(t.ints))+len(t.i8)+2*len(t.f16))
		for k, v := range t.f16 {
			binary.LittleEndian.PutUint16(raw[2*k:], v)
		}
		for k, v := range t.i8 {
			raw[k] = byte(v)
		}
		for k, v := range t.data {
			binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(v))
		}
		for k, v := range t.ints {
			binary.LittleEndian.PutUint32(raw[4*k:], uint32(v))
		}
		vec := b.CreateByteVector(raw)
		b.StartObject(3)
		b.PrependUOffsetTSlot(0, vec, 0)
		bufIdx[i] = uint32(len(bufs))
		bufs = append(bufs, b.EndObject())
	}
	var tts []flatbuffers.UOffsetT
	for i, t := range tensors {
		name := b.CreateString(string(rune('a' + i)))
		shape := int32Vec(b, t.shape)
		var qt flatbuffers.UOffsetT
		if q := t.quant; q != nil {
			b.StartVector(4, len(q.scale), 4)
			for k := len(q.scale) - 1; k >= 0; k-- {
				b.PrependFloat32(q.scale[k])
			}
			sv := b.EndVector(len(q.scale))
			b.StartVector(8, len(q.zp), 8)
			for k := len(q.zp) - 1; k >= 0; k-- {
				b.PrependInt64(q.zp[k])
			}
			zv := b.EndVector(len(q.zp))
			b.StartObject(7)
			b.PrependUOffsetTSlot(2, sv, 0)
			b.PrependUOffsetTSlot(3, zv, 0)
			b.PrependInt32Slot(6, q.dim, 0)
			qt = b.EndObject()
		}
		var spt flatbuffers.UOffsetT
		if t.sparsity != nil {
			spt = writeSparsity(b, t.sparsity)
		}
		b.StartObject(8)
		b.PrependUOffsetTSlot(0, shape, 0)
		if spt != 0 {
			b.PrependUOffsetTSlot(6, spt, 0)
		}
		switch {
		case t.f16 != nil:
			b.PrependInt8Slot(1, 1, 0) // FLOAT16
		case t.ints != nil:
			b.PrependInt8Slot(1, 2, 0) // INT32
		case t.i8 != nil:
			b.PrependInt8Slot(1, 9, 0) // INT8
		case t.typ != 0:
			b.PrependInt8Slot(1, t.typ, 0)
		} // else FLOAT32, the default
		if qt != 0 {
			b.PrependUOffsetTSlot(4, qt, 0)
		}
		b.PrependUint32Slot(2, bufIdx[i], 0)
		b.PrependUOffsetTSlot(3, name, 0)
		tts = append(tts, b.EndObject())
	}
	var ots, codes []flatbuffers.UOffsetT
	for k, op := range ops {
		var opts flatbuffers.UOffsetT
		if op.ints != nil || op.bytes != nil {
			b.StartObject(8)
			for f, v := range op.ints {
				b.PrependInt32Slot(f, v, 0)
			}
			for f, v := range op.bytes {
				b.PrependUint8Slot(f, v, 0)
			}
			opts = b.EndObject()
		}
		in, out := int32Vec(b, op.in), int32Vec(b, op.out)
		b.StartObject(11)
		b.PrependUint32Slot(0, uint32(k), 0)
		b.PrependUOffsetTSlot(1, in, 0)
		b.PrependUOffsetTSlot(2, out, 0)
		if opts != 0 {
			b.PrependUint8Slot(3, max(op.optType, 1), 0)
			b.PrependUOffsetTSlot(4, opts, 0)
		}
		ots = append(ots, b.EndObject())
		var cc flatbuffers.UOffsetT
		if op.custom != "" {
			cc = b.CreateString(op.custom)
		}
		b.StartObject(4)
		if cc != 0 {
			b.PrependUOffsetTSlot(1, cc, 0)
		}
		b.PrependInt8Slot(0, int8(min(op.code, 127)), 0)
		b.PrependInt32Slot(2, 1, 1)
		b.PrependInt32Slot(3, op.code, 0)
		codes = append(codes, b.EndObject())
	}
	tv, iv, ov, opv := offVec(b, tts), int32Vec(b, inputs), int32Vec(b, outputs), offVec(b, ots)
	b.StartObject(5)
	b.PrependUOffsetTSlot(0, tv, 0)
	b.PrependUOffsetTSlot(1, iv, 0)
	b.PrependUOffsetTSlot(2, ov, 0)
	b.PrependUOffsetTSlot(3, opv, 0)
	sg := b.EndObject()
	cv, sv, bv := offVec(b, codes), offVec(b, []flatbuffers.UOffsetT{sg}), offVec(b, bufs)
	b.StartObject(5)
	b.PrependUint32Slot(0, 3, 0)
	b.PrependUOffsetTSlot(1, cv, 0)
	b.PrependUOffsetTSlot(2, sv, 0)
	b.PrependUOffsetTSlot(4, bv, 0)
	b.FinishWithFileIdentifier(b.EndObject(), []byte("TFL3"))
	return b.FinishedBytes()
}

// writeSparsity writes SparsityParameters; index vectors take the
// narrowest SparseIndexVector type that holds their values (Uint8Vector,
// Uint16Vector or Int32Vector), so tests meet all three.
func writeSparsity(b *flatbuffers.Builder, sp *tflite.Sparsity) flatbuffers.UOffsetT {
	idx := func(v []int32) (uint8, flatbuffers.UOffsetT) {
		m := int32(0)
		for _, x := range v {
			m = max(m, x)
		}
		var vec flatbuffers.UOffsetT
		var typ uint8
		switch {
		case m < 256:
			typ = 3
			b.StartVector(1, len(v), 4)
			for i := len(v) - 1; i >= 0; i-- {
				b.PrependUint8(uint8(v[i]))
			}
		case m < 65536:
			typ = 2
			b.StartVector(2, len(v), 4)
			for i := len(v) - 1; i >= 0; i-- {
				b.PrependUint16(uint16(v[i]))
			}
		default:
			typ = 1
			b.StartVector(4, len(v), 4)
			for i := len(v) - 1; i >= 0; i-- {
				b.PrependInt32(v[i])
			}
		}
		vec = b.EndVector(len(v))
		b.StartObject(1)
		b.PrependUOffsetTSlot(0, vec, 0)
		return typ, b.EndObject()
	}
	var dims []flatbuffers.UOffsetT
	for _, d := range sp.Dims {
		var st, it uint8
		var sv, iv flatbuffers.UOffsetT
		if d.Sparse {
			st, sv = idx(d.Segments)
			it, iv = idx(d.Indices)
		}
		b.StartObject(6)
		if d.Sparse {
			b.PrependUint8Slot(0, 1, 0)
			b.PrependUint8Slot(2, st, 0)
			b.PrependUOffsetTSlot(3, sv, 0)
			b.PrependUint8Slot(4, it, 0)
			b.PrependUOffsetTSlot(5, iv, 0)
		}
		b.PrependInt32Slot(1, d.DenseSize, 0)
		dims = append(dims, b.EndObject())
	}
	to := int32Vec(b, sp.TraversalOrder)
	var bm flatbuffers.UOffsetT
	if sp.BlockMap != nil {
		bm = int32Vec(b, sp.BlockMap)
	}
	dv := offVec(b, dims)
	b.StartObject(3)
	b.PrependUOffsetTSlot(0, to, 0)
	if bm != 0 {
		b.PrependUOffsetTSlot(1, bm, 0)
	}
	b.PrependUOffsetTSlot(2, dv, 0)
	return b.EndObject()
}

func randF(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func runSynth(t *testing.T, model []byte, x []float32, shape []int) []float32 {
	t.Helper()
	m, err := runtime.LoadBytes(context.Background(), model, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice(shape, x)})
	return out[m.Outputs()[0].Name].Data.([]float32)
}

func near(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-4*(1+math.Abs(float64(b))) }

// TestSynthConvSamePadding: CONV_2D with SAME padding, stride 2 and a
// fused RELU6 on a 6×5 input — an odd total padding along H (0 before, 1
// after, as TFLite) and an even one along W — against a direct NHWC loop.
func TestSynthConvSamePadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const H, W, C, O, K = 6, 5, 2, 3, 3
	w, bias, x := randF(rng, O*K*K*C), randF(rng, O), randF(rng, H*W*C)
	for i := range x {
		x[i] *= 3
	}
	model := buildTFLite([]synTensor{{shape: []int32{1, H, W, C}}, {shape: []int32{O, K, K, C}, data: w}, {shape: []int32{O}, data: bias}, {shape: []int32{1, 3, 3, O}}},
		[]synOp{{code: 3, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 2, 2: 2}, bytes: map[int]uint8{0: 0, 3: 3}}}, []int32{0}, []int32{3})
	y := runSynth(t, model, x, []int{1, H, W, C})
	padT, padL := 0, 1 // H: total (3−1)·2+3−6 = 1; W: (3−1)·2+3−5 = 2
	for oy := 0; oy < 3; oy++ {
		for ox := 0; ox < 3; ox++ {
			for o := 0; o < O; o++ {
				acc := bias[o]
				for ky := 0; ky < K; ky++ {
					for kx := 0; kx < K; kx++ {
						iy, ix := oy*2-padT+ky, ox*2-padL+kx
						if iy < 0 || iy >= H || ix < 0 || ix >= W {
							continue
						}
						for c := 0; c < C; c++ {
							acc += w[((o*K+ky)*K+kx)*C+c] * x[(iy*W+ix)*C+c]
						}
					}
				}
				want := float32(math.Min(6, math.Max(0, float64(acc))))
				if got := y[(oy*3+ox)*O+o]; !near(got, want) {
					t.Errorf("(%d,%d,%d): %g, want %g", oy, ox, o, got, want)
				}
			}
		}
	}
}

// TestSynthDepthwiseAndPool: DEPTHWISE_CONV_2D with depth multiplier 2,
// VALID padding and RELU, then AVERAGE_POOL_2D 3×3 stride 2 SAME whose
// border windows average only the pixels inside (TFLite excludes padding).
func TestSynthDepthwiseAndPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const H, W, C, M, K = 6, 6, 2, 2, 2
	w, bias, x := randF(rng, K*K*C*M), randF(rng, C*M), randF(rng, H*W*C)
	const DH, DW, CO = H - K + 1, W - K + 1, C * M // 5×5×4
	model := buildTFLite([]synTensor{{shape: []int32{1, H, W, C}}, {shape: []int32{1, K, K, CO}, data: w}, {shape: []int32{CO}, data: bias},
		{shape: []int32{1, DH, DW, CO}}, {shape: []int32{1, 3, 3, CO}}},
		[]synOp{
			{code: 4, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 1, 2: 1, 3: M}, bytes: map[int]uint8{0: 1, 4: 1}},
			{code: 1, in: []int32{3}, out: []int32{4}, ints: map[int]int32{1: 2, 2: 2, 3: 3, 4: 3}, bytes: map[int]uint8{0: 0}},
		}, []int32{0}, []int32{4})
	y := runSynth(t, model, x, []int{1, H, W, C})
	d := make([]float32, DH*DW*CO)
	for oy := 0; oy < DH; oy++ {
		for ox := 0; ox < DW; ox++ {
			for oc := 0; oc < CO; oc++ {
				acc := bias[oc]
				for ky := 0; ky < K; ky++ {
					for kx := 0; kx < K; kx++ {
						acc += w[(ky*K+kx)*CO+oc] * x[((oy+ky)*W+ox+kx)*C+oc/M]
					}
				}
				d[(oy*DW+ox)*CO+oc] = max(acc, 0)
			}
		}
	}
	// pool: 5 → 3 with SAME, total (3−1)·2+3−5 = 2: one pixel before
	for oy := 0; oy < 3; oy++ {
		for ox := 0; ox < 3; ox++ {
			for c := 0; c < CO; c++ {
				var s float32
				n := 0
				for iy := oy*2 - 1; iy < oy*2+2; iy++ {
					for ix := ox*2 - 1; ix < ox*2+2; ix++ {
						if iy >= 0 && iy < DH && ix >= 0 && ix < DW {
							s += d[(iy*DW+ix)*CO+c]
							n++
						}
					}
				}
				if got, want := y[(oy*3+ox)*CO+c], s/float32(n); !near(got, want) {
					t.Errorf("pool (%d,%d,%d): %g, want %g", oy, ox, c, got, want)
				}
			}
		}
	}
}

// TestUnsupportedNamedBeforeRun: a custom op and an unconverted builtin are
// both named, with counts, in one error at import, before anything runs.
func TestUnsupportedNamedBeforeRun(t *testing.T) {
	model := buildTFLite([]synTensor{{shape: []int32{1, 4}}, {shape: []int32{1, 4}}, {shape: []int32{1, 4}}, {shape: []int32{1, 4}}},
		[]synOp{{code: 32, custom: "MyVendorOp", in: []int32{0}, out: []int32{1}}, {code: 27, in: []int32{1}, out: []int32{2}}, {code: 32, custom: "MyVendorOp", in: []int32{2}, out: []int32{3}}},
		[]int32{0}, []int32{3})
	_, err := tflite.Load(model, tflite.ConvertOptions{})
	var ue *tflite.UnsupportedError
	if !errors.As(err, &ue) || len(ue.Ops) != 2 || !strings.Contains(err.Error(), "CUSTOM(MyVendorOp) ×2") || !strings.Contains(err.Error(), "SVDF ×1") {
		t.Fatalf("got %v", err)
	}
	if _, err := runtime.LoadBytes(context.Background(), model, nil); !errors.As(err, &ue) {
		t.Fatalf("runtime: %v", err)
	}
	t.Log(err)
}

// TestSynthElementwiseSliceReduce: ABS, MAXIMUM with a constant,
// SQUARED_DIFFERENCE, STRIDED_SLICE (stride 2 on the last axis), SUM
// without keep_dims and NEG, against direct arithmetic; and SPLIT then
// PACK in swapped order.
func TestSynthElementwiseSliceReduce(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x := randF(rng, 24)
	cst := []float32{0.5, -1, 0.25, 2}
	model := buildTFLite([]synTensor{
		{shape: []int32{2, 3, 4}}, {shape: []int32{2, 3, 4}}, {shape: []int32{4}, data: cst}, {shape: []int32{2, 3, 4}}, {shape: []int32{2, 3, 4}},
		{shape: []int32{3}, ints: []int32{0, 1, 0}}, {shape: []int32{3}, ints: []int32{2, 3, 4}}, {shape: []int32{3}, ints: []int32{1, 1, 2}},
		{shape: []int32{2, 2, 2}}, {shape: []int32{1}, ints: []int32{2}}, {shape: []int32{2, 2}}, {shape: []int32{2, 2}},
	}, []synOp{
		{code: 101, in: []int32{0}, out: []int32{1}},
		{code: 55, in: []int32{1, 2}, out: []int32{3}},
		{code: 99, in: []int32{3, 0}, out: []int32{4}},
		{code: 45, in: []int32{4, 5, 6, 7}, out: []int32{8}},
		{code: 74, in: []int32{8, 9}, out: []int32{10}},
		{code: 59, in: []int32{10}, out: []int32{11}},
	}, []int32{0}, []int32{11})
	y := runSynth(t, model, x, []int{2, 3, 4})
	for b := 0; b < 2; b++ {
		for r := 1; r < 3; r++ {
			var s float32
			for k := 0; k < 4; k += 2 {
				v := x[(b*3+r)*4+k]
				m := max(float32(math.Abs(float64(v))), cst[k])
				s += (m - v) * (m - v)
			}
			if got := y[b*2+r-1]; !near(got, -s) {
				t.Errorf("(%d,%d): %g, want %g", b, r, got, -s)
			}
		}
	}
	sp := buildTFLite([]synTensor{{shape: []int32{1}, ints: []int32{1}}, {shape: []int32{2, 4}}, {shape: []int32{2, 2}}, {shape: []int32{2, 2}}, {shape: []int32{2, 2, 2}}},
		[]synOp{{code: 49, in: []int32{0, 1}, out: []int32{2, 3}, ints: map[int]int32{0: 2}}, {code: 83, in: []int32{3, 2}, out: []int32{4}, ints: map[int]int32{0: 2, 1: 0}}},
		[]int32{1}, []int32{4})
	m, err := runtime.LoadBytes(context.Background(), sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	xin := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	got := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{2, 4}, xin)})[m.Outputs()[0].Name].Data.([]float32)
	want := []float32{3, 4, 7, 8, 1, 2, 5, 6}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("split+pack %v, want %v", got, want)
		}
	}
}
