package onnx

import (
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Encode serialises a model as an ONNX ModelProto (tensors as raw_data).
// Decode(Encode(m)) reproduces m's graph.
func Encode(m *graph.Model) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(m.IRVersion))
	if m.ProducerName != "" {
		b = appendString(b, 2, m.ProducerName)
	}
	if m.ProducerVersion != "" {
		b = appendString(b, 3, m.ProducerVersion)
	}
	if m.Graph != nil {
		b = appendMessage(b, 7, encodeGraph(m.Graph))
	}
	for _, o := range m.Opsets {
		var ob []byte
		if o.Domain != "" {
			ob = appendString(ob, 1, o.Domain)
		}
		ob = protowire.AppendTag(ob, 2, protowire.VarintType)
		ob = protowire.AppendVarint(ob, uint64(o.Version))
		b = appendMessage(b, 8, ob)
	}
	return b
}

// EncodeTensor serialises a tensor as an ONNX TensorProto (a `.pb` file).
func EncodeTensor(name string, t *graph.Tensor) []byte {
	var b []byte
	if len(t.Shape) > 0 {
		var dims []byte
		for _, d := range t.Shape {
			dims = protowire.AppendVarint(dims, uint64(d))
		}
		b = appendMessage(b, 1, dims)
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(t.DType))
	if name != "" {
		b = appendString(b, 8, name)
	}
	if s, ok := t.Data.([]string); ok {
		for _, v := range s {
			b = appendString(b, 6, v)
		}
		return b
	}
	return appendMessage(b, 9, tensorBytes(t))
}

func tensorBytes(t *graph.Tensor) []byte {
	n := t.Len()
	size := t.DType.Size()
	out := make([]byte, 0, n*size)
	for i := 0; i < n; i++ {
		var u uint64
		switch d := t.Data.(type) {
		case []float32:
			u = uint64(math.Float32bits(d[i]))
		case []float64:
			u = math.Float64bits(d[i])
		case []graph.F16:
			u = uint64(d[i])
		case []graph.BF16:
			u = uint64(d[i])
		case []uint64:
			u = d[i]
		default:
			u = uint64(t.Int64At(i))
		}
		for k := 0; k < size; k++ {
			out = append(out, byte(u>>(8*k)))
		}
	}
	return out
}

func encodeGraph(g *graph.Graph) []byte {
	var b []byte
	for _, n := range g.Nodes {
		b = appendMessage(b, 1, encodeNode(n))
	}
	if g.Name != "" {
		b = appendString(b, 2, g.Name)
	}
	names := make([]string, 0, len(g.Initializers))
	for k := range g.Initializers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		b = appendMessage(b, 5, EncodeTensor(k, g.Initializers[k]))
	}
	for _, vi := range g.Inputs {
		b = appendMessage(b, 11, encodeValueInfo(vi))
	}
	for _, vi := range g.Outputs {
		b = appendMessage(b, 12, encodeValueInfo(vi))
	}
	for _, vi := range g.ValueInfo {
		b = appendMessage(b, 13, encodeValueInfo(vi))
	}
	return b
}

func encodeValueInfo(vi graph.ValueInfo) []byte {
	b := appendString(nil, 1, vi.Name)
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(vi.Type.DType))
	if vi.Type.Shape != nil {
		var sb []byte
		for _, d := range vi.Type.Shape {
			var db []byte
			if d.Param != "" {
				db = appendString(db, 2, d.Param)
			} else if d.Value >= 0 {
				db = protowire.AppendTag(db, 1, protowire.VarintType)
				db = protowire.AppendVarint(db, uint64(d.Value))
			}
			sb = appendMessage(sb, 1, db)
		}
		tt = appendMessage(tt, 2, sb)
	}
	typ := appendMessage(nil, 1, tt)
	return appendMessage(b, 2, typ)
}

func encodeNode(n *graph.Node) []byte {
	var b []byte
	for _, in := range n.Inputs {
		b = appendString(b, 1, in)
	}
	for _, o := range n.Outputs {
		b = appendString(b, 2, o)
	}
	if n.Name != "" {
		b = appendString(b, 3, n.Name)
	}
	b = appendString(b, 4, n.OpType)
	if n.Domain != "" {
		b = appendString(b, 7, n.Domain)
	}
	keys := make([]string, 0, len(n.Attrs))
	for k := range n.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b = appendMessage(b, 5, encodeAttr(n.Attrs[k]))
	}
	return b
}

func encodeAttr(a *graph.Attribute) []byte {
	b := appendString(nil, 1, a.Name)
	switch a.Type {
	case graph.AttrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case graph.AttrInt:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(a.I))
	case graph.AttrString:
		b = appendString(b, 4, a.S)
	case graph.AttrTensor:
		b = appendMessage(b, 5, EncodeTensor("", a.T))
	case graph.AttrGraph:
		b = appendMessage(b, 6, encodeGraph(a.G))
	case graph.AttrFloats:
		var p []byte
		for _, f := range a.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(f))
		}
		b = appendMessage(b, 7, p)
	case graph.AttrInts:
		var p []byte
		for _, v := range a.Ints {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = appendMessage(b, 8, p)
	case graph.AttrStrings:
		for _, s := range a.Strings {
			b = appendString(b, 9, s)
		}
	case graph.AttrTensors:
		for _, t := range a.Tensors {
			b = appendMessage(b, 10, EncodeTensor("", t))
		}
	case graph.AttrGraphs:
		for _, g := range a.Graphs {
			b = appendMessage(b, 11, encodeGraph(g))
		}
	}
	b = protowire.AppendTag(b, 20, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(a.Type))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}
