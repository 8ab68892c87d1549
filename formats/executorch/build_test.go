package executorch_test

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/runtime"
)

// prog builds small ExecuTorch programs for operator tests: one method,
// one chain, constants in the (deprecated) inline constant buffer.
type prog struct {
	vals    []val
	consts  [][]byte
	ops     [][2]string
	instrs  [][]int32 // op index, then args
	in, out []int32
	// aliases repeats the offset of the last value this many more times
	// in the values vector (a hostile file's aliasing, issue #32)
	aliases int
}

type val struct {
	kind  uint8
	st    int8
	sizes []int32
	order []byte
	data  int // constant buffer index, 0 = none
	i     int64
	d     float64
	b     bool
	s     string
	items []int64
}

func (p *prog) add(v val) int32 { p.vals = append(p.vals, v); return int32(len(p.vals) - 1) }

// tensor adds a tensor value; data (little-endian bytes) makes it a constant.
func (p *prog) tensor(st int8, sizes []int32, data []byte) int32 {
	v := val{kind: 5, st: st, sizes: sizes}
	if data != nil {
		if len(p.consts) == 0 {
			p.consts = append(p.consts, nil) // entry 0 is reserved
		}
		p.consts = append(p.consts, data)
		v.data = len(p.consts) - 1
	}
	return p.add(v)
}

func (p *prog) f32(sizes []int32, vals ...float32) int32 {
	b := make([]byte, 4*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return p.tensor(6, sizes, b)
}

func (p *prog) i64t(sizes []int32, vals ...int64) int32 {
	b := make([]byte, 8*len(vals))
	for i, x := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return p.tensor(4, sizes, b)
}

func (p *prog) int(x int64) int32      { return p.add(val{kind: 2, i: x}) }
func (p *prog) double(x float64) int32 { return p.add(val{kind: 4, d: x}) }
func (p *prog) boolean(x bool) int32   { return p.add(val{kind: 3, b: x}) }
func (p *prog) null() int32            { return p.add(val{kind: 1}) }
func (p *prog) str(s string) int32     { return p.add(val{kind: 6, s: s}) }
func (p *prog) ints(xs ...int64) int32 {
	var items []int64
	for _, x := range xs {
		items = append(items, int64(p.int(x)))
	}
	return p.add(val{kind: 7, items: items})
}
func (p *prog) tensors(ts ...int32) int32 {
	var items []int64
	for _, t := range ts {
		items = append(items, int64(t))
	}
	return p.add(val{kind: 10, items: items})
}

// call adds a kernel call; the out value is passed twice (out, return), as
// ExecuTorch's emitter does.
func (p *prog) call(name, overload string, args ...int32) {
	idx := -1
	for i, o := range p.ops {
		if o == [2]string{name, overload} {
			idx = i
		}
	}
	if idx < 0 {
		p.ops = append(p.ops, [2]string{name, overload})
		idx = len(p.ops) - 1
	}
	p.instrs = append(p.instrs, append([]int32{int32(idx)}, append(args, args[len(args)-1])...))
}

func i32vec(b *flatbuffers.Builder, xs []int32) flatbuffers.UOffsetT {
	b.StartVector(4, len(xs), 4)
	for i := len(xs) - 1; i >= 0; i-- {
		b.PrependInt32(xs[i])
	}
	return b.EndVector(len(xs))
}

func offvec(b *flatbuffers.Builder, xs []flatbuffers.UOffsetT) flatbuffers.UOffsetT {
	b.StartVector(4, len(xs), 4)
	for i := len(xs) - 1; i >= 0; i-- {
		b.PrependUOffsetT(xs[i])
	}
	return b.EndVector(len(xs))
}

func (p *prog) build() []byte {
	b := flatbuffers.NewBuilder(1024)
	var values []flatbuffers.UOffsetT
	for _, v := range p.vals {
		var inner flatbuffers.UOffsetT
		switch v.kind {
		case 1:
			b.StartObject(0)
			inner = b.EndObject()
		case 2:
			b.StartObject(1)
			b.PrependInt64Slot(0, v.i, 0)
			inner = b.EndObject()
		case 3:
			b.StartObject(1)
			b.PrependBoolSlot(0, v.b, false)
			inner = b.EndObject()
		case 4:
			b.StartObject(1)
			b.PrependFloat64Slot(0, v.d, 0)
			inner = b.EndObject()
		case 6:
			s := b.CreateString(v.s)
			b.StartObject(1)
			b.PrependUOffsetTSlot(0, s, 0)
			inner = b.EndObject()
		case 7:
			b.StartVector(8, len(v.items), 8)
			for i := len(v.items) - 1; i >= 0; i-- {
				b.PrependInt64(v.items[i])
			}
			vec := b.EndVector(len(v.items))
			b.StartObject(1)
			b.PrependUOffsetTSlot(0, vec, 0)
			inner = b.EndObject()
		case 10, 11:
			xs := make([]int32, len(v.items))
			for i, x := range v.items {
				xs[i] = int32(x)
			}
			vec := i32vec(b, xs)
			b.StartObject(1)
			b.PrependUOffsetTSlot(0, vec, 0)
			inner = b.EndObject()
		case 5:
			sizes := i32vec(b, v.sizes)
			order := v.order
			if order == nil {
				order = make([]byte, len(v.sizes))
				for i := range order {
					order[i] = byte(i)
				}
			}
			do := b.CreateByteVector(order)
			b.StartObject(10)
			b.PrependInt8Slot(0, v.st, 0)
			b.PrependUOffsetTSlot(2, sizes, 0)
			b.PrependUOffsetTSlot(3, do, 0)
			b.PrependUint32Slot(5, uint32(v.data), 0)
			inner = b.EndObject()
		}
		b.StartObject(2)
		b.PrependByteSlot(0, v.kind, 0)
		b.PrependUOffsetTSlot(1, inner, 0)
		values = append(values, b.EndObject())
	}
	var instrs []flatbuffers.UOffsetT
	for _, in := range p.instrs {
		args := i32vec(b, in[1:])
		b.StartObject(2)
		b.PrependInt32Slot(0, in[0], -1)
		b.PrependUOffsetTSlot(1, args, 0)
		kc := b.EndObject()
		b.StartObject(2)
		b.PrependByteSlot(0, 1, 0)
		b.PrependUOffsetTSlot(1, kc, 0)
		instrs = append(instrs, b.EndObject())
	}
	var ops []flatbuffers.UOffsetT
	for _, o := range p.ops {
		n, ov := b.CreateString(o[0]), b.CreateString(o[1])
		b.StartObject(2)
		b.PrependUOffsetTSlot(0, n, 0)
		b.PrependUOffsetTSlot(1, ov, 0)
		ops = append(ops, b.EndObject())
	}
	var bufs []flatbuffers.UOffsetT
	for _, c := range p.consts {
		s := b.CreateByteVector(c)
		b.StartObject(1)
		b.PrependUOffsetTSlot(0, s, 0)
		bufs = append(bufs, b.EndObject())
	}
	iv := offvec(b, instrs)
	b.StartObject(4)
	b.PrependUOffsetTSlot(2, iv, 0)
	chain := b.EndObject()
	name := b.CreateString("forward")
	for range p.aliases {
		values = append(values, values[len(values)-1])
	}
	vv, inv, outv, cv, ov := offvec(b, values), i32vec(b, p.in), i32vec(b, p.out), offvec(b, []flatbuffers.UOffsetT{chain}), offvec(b, ops)
	b.StartObject(9)
	b.PrependUOffsetTSlot(0, name, 0)
	b.PrependUOffsetTSlot(2, vv, 0)
	b.PrependUOffsetTSlot(3, inv, 0)
	b.PrependUOffsetTSlot(4, outv, 0)
	b.PrependUOffsetTSlot(5, cv, 0)
	b.PrependUOffsetTSlot(6, ov, 0)
	plan := b.EndObject()
	plans := offvec(b, []flatbuffers.UOffsetT{plan})
	cb := offvec(b, bufs)
	b.StartObject(8)
	b.PrependUOffsetTSlot(1, plans, 0)
	b.PrependUOffsetTSlot(2, cb, 0)
	root := b.EndObject()
	b.FinishWithFileIdentifier(root, []byte("ET12"))
	return b.FinishedBytes()
}

// exec builds, lowers and runs the program on inputs.
func (p *prog) exec(t *testing.T, inputs ...*graph.Tensor) []*graph.Tensor {
	t.Helper()
	pr, err := executorch.Parse(p.build())
	if err != nil {
		t.Fatal(err)
	}
	ir, err := pr.Lower(executorch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	feeds := map[string]*graph.Tensor{}
	for i, in := range m.Inputs() {
		feeds[in.Name] = inputs[i]
	}
	out, err := m.Run(context.Background(), feeds)
	if err != nil {
		t.Fatal(err)
	}
	var res []*graph.Tensor
	for _, o := range m.Outputs() {
		res = append(res, out[o.Name])
	}
	return res
}

func executorchParse(b []byte) (*executorch.Program, error) { return executorch.Parse(b) }
func executorchOptions() executorch.Options                 { return executorch.Options{} }

func f64le(x float64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, math.Float64bits(x))
	return b
}
