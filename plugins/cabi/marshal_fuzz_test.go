package cabi

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// fuzzBytes hands out the fuzzer's bytes as small choices (0 once spent).
type fuzzBytes struct {
	b []byte
}

func (f *fuzzBytes) n(k int) int {
	if len(f.b) == 0 || k <= 0 {
		return 0
	}
	v := int(f.b[0])
	f.b = f.b[1:]
	return v % k
}

func (f *fuzzBytes) i64() int64 {
	var v int64
	for i := 0; i < 8; i++ {
		v = v<<8 | int64(f.n(256))
	}
	return v
}

var fuzzDTypes = []graph.DType{graph.Float32, graph.Int64, graph.Int32, graph.Float16, graph.Uint8, graph.Int8, graph.Bool, graph.Float64, graph.String, graph.Undefined}

// fuzzTensor is a tensor from the fuzzer; malformed (data not matching its
// dtype or shape) when the fuzzer says so.
func fuzzTensor(f *fuzzBytes) *graph.Tensor {
	dt := []graph.DType{graph.Float32, graph.Int64, graph.Int8, graph.Float16, graph.String}[f.n(5)]
	shape := make([]int, f.n(3))
	for i := range shape {
		shape[i] = f.n(4)
	}
	t, err := graph.New(dt, shape)
	if err != nil {
		return nil
	}
	switch f.n(8) {
	case 0: // shape claims more than the data holds
		t.Shape = append(t.Shape, 3)
	case 1: // dtype does not match the data
		t.DType = graph.Float64
	}
	return t
}

// fuzzSubgraph builds a subgraph from the fuzzer's bytes: inputs of any
// dtype and static, symbolic or unknown shape; constants; nodes of known
// and unknown ops reading earlier values, missing optional inputs, later
// values (cycles) or unknown names; attributes of every type, some
// malformed.
func fuzzSubgraph(data []byte) *hal.Subgraph {
	f := &fuzzBytes{b: data}
	g := &graph.Graph{Name: "fuzz", Initializers: map[string]*graph.Tensor{}}
	var names []string
	for i, n := 0, f.n(4); i < n; i++ {
		vt := graph.ValueType{Kind: "tensor", DType: fuzzDTypes[f.n(len(fuzzDTypes))]}
		if f.n(4) != 0 {
			vt.Shape = graph.Shape{}
			for k, r := 0, f.n(4); k < r; k++ {
				switch f.n(3) {
				case 0:
					vt.Shape = append(vt.Shape, graph.Dim{Value: int64(f.n(5))})
				case 1:
					vt.Shape = append(vt.Shape, graph.Dim{Param: []string{"N", "M"}[f.n(2)]})
				default:
					vt.Shape = append(vt.Shape, graph.Dim{Value: -1})
				}
			}
		}
		name := fmt.Sprintf("in%d", i)
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: vt})
		names = append(names, name)
	}
	for i, n := 0, f.n(3); i < n; i++ {
		name := fmt.Sprintf("c%d", i)
		if t := fuzzTensor(f); t != nil {
			g.Initializers[name] = t
			names = append(names, name)
		}
	}
	ops := []string{"Relu", "Add", "MatMul", "Reshape", "Concat", "Cast", "Constant", "Gather", "NoSuchOp", "Transpose"}
	nNodes := f.n(7)
	for i := 0; i < nNodes; i++ {
		n := &graph.Node{Name: fmt.Sprintf("n%d", i), OpType: ops[f.n(len(ops))], Attrs: map[string]*graph.Attribute{}}
		if f.n(6) == 0 {
			n.Domain = "com.vendor"
		}
		for k, c := 0, f.n(4); k < c; k++ {
			switch f.n(8) {
			case 0:
				n.Inputs = append(n.Inputs, "")
			case 1: // a later node's output: a cycle, or a forward reference
				n.Inputs = append(n.Inputs, fmt.Sprintf("n%d_o0", f.n(nNodes+1)))
			case 2:
				n.Inputs = append(n.Inputs, "nowhere")
			default:
				if len(names) > 0 {
					n.Inputs = append(n.Inputs, names[f.n(len(names))])
				}
			}
		}
		for k, c := 0, 1+f.n(2); k < c; k++ {
			n.Outputs = append(n.Outputs, fmt.Sprintf("n%d_o%d", i, k))
		}
		for k, c := 0, f.n(4); k < c; k++ {
			a := &graph.Attribute{Name: fmt.Sprintf("a%d", k), Type: graph.AttrType(f.n(12))}
			switch a.Type {
			case graph.AttrFloat:
				a.F = float32(f.i64())
			case graph.AttrInt:
				a.I = f.i64()
			case graph.AttrString:
				a.S = string(make([]byte, f.n(5)))
			case graph.AttrTensor:
				a.T = fuzzTensor(f)
			case graph.AttrFloats:
				a.Floats = make([]float32, f.n(4))
			case graph.AttrInts:
				for j, m := 0, f.n(4); j < m; j++ {
					a.Ints = append(a.Ints, f.i64())
				}
			case graph.AttrStrings:
				for j, m := 0, f.n(3); j < m; j++ {
					a.Strings = append(a.Strings, fmt.Sprint(j))
				}
			case graph.AttrTensors:
				for j, m := 0, f.n(3); j < m; j++ {
					a.Tensors = append(a.Tensors, fuzzTensor(f))
				}
			case graph.AttrGraph:
				a.G = &graph.Graph{Name: "body"}
			}
			if f.n(10) == 0 {
				a = nil
			}
			n.Attrs[fmt.Sprintf("a%d", k)] = a
		}
		g.Nodes = append(g.Nodes, n)
		names = append(names, n.Outputs...)
	}
	for i, n := 0, 1+f.n(2); i < n && len(names) > 0; i++ {
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: names[f.n(len(names))], Type: graph.ValueType{Kind: "tensor", DType: fuzzDTypes[f.n(len(fuzzDTypes))]}})
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: int64(1 + f.n(24))}}}
	if f.n(3) == 0 {
		sg.Opsets = append(sg.Opsets, graph.Opset{Domain: "com.vendor", Version: 1})
	}
	return sg
}

// cRead reads a NUL-terminated string the host marshalled, at most max
// bytes (the test fails on a missing NUL rather than read on).
func cRead(t *testing.T, p unsafe.Pointer, max int) string {
	t.Helper()
	if p == nil {
		t.Fatal("NULL string")
	}
	for n := 0; n <= max; n++ {
		if *(*byte)(unsafe.Add(p, n)) == 0 {
			return string(unsafe.Slice((*byte)(p), n))
		}
	}
	t.Fatalf("string without NUL within %d bytes", max)
	return ""
}

func checkCTensor(t *testing.T, what string, ct *cTensor, src *graph.Tensor) {
	t.Helper()
	if int(ct.dtype) != int(src.DType) || int(ct.rank) != len(src.Shape) {
		t.Fatalf("%s: dtype %d rank %d, source %v %v", what, ct.dtype, ct.rank, src.DType, src.Shape)
	}
	if (ct.rank > 0) != (ct.shape != nil) {
		t.Fatalf("%s: rank %d with shape pointer %v", what, ct.rank, ct.shape)
	}
	elems := uint64(1)
	for k, d := range unsafe.Slice((*int64)(ct.shape), ct.rank) {
		if d != int64(src.Shape[k]) || d < 0 {
			t.Fatalf("%s: dim %d = %d, source %v", what, k, d, src.Shape)
		}
		elems *= uint64(d)
	}
	if src.DType == graph.String {
		if ct.data != nil || ct.numBytes != 0 {
			t.Fatalf("%s: a string tensor crossed with data", what)
		}
		return
	}
	// the C side may read numBytes bytes at data, and shape×size of them
	if want := elems * uint64(src.DType.Size()); ct.numBytes != want {
		t.Fatalf("%s: num_bytes %d, shape %v of %v needs %d", what, ct.numBytes, src.Shape, src.DType, want)
	}
	if have := dataBytes(src); ct.numBytes > have {
		t.Fatalf("%s: num_bytes %d, the data holds %d", what, ct.numBytes, have)
	}
	if (ct.numBytes > 0) != (ct.data != nil) {
		t.Fatalf("%s: %d bytes at %v", what, ct.numBytes, ct.data)
	}
}

// dataBytes is how many bytes a tensor's Data really holds.
func dataBytes(t *graph.Tensor) uint64 {
	v := reflect.ValueOf(t.Data)
	if v.Kind() != reflect.Slice {
		return 0
	}
	return uint64(v.Len()) * uint64(v.Type().Elem().Size())
}

// FuzzMarshal: whatever subgraph the host is given, marshal either refuses
// it with InvalidArgument (or ResourceExhausted), or lays out C structs in
// which every count matches its array, every index a C delegate may follow
// is in range, every string is NUL-terminated and every tensor's bytes
// are there: nothing a delegate reads by the header's rules is out of
// bounds.
func FuzzMarshal(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{1, 0, 1, 1, 1, 0, 2, 0, 3, 1, 3, 0, 1},
		{3, 1, 3, 2, 1, 0, 1, 1, 2, 2, 1, 0, 4, 6, 4, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
		{2, 9, 0, 0, 2, 0, 2, 3, 6, 5, 0, 1, 3, 4, 4, 0, 5, 4, 1, 3, 3, 7, 7, 7, 2, 1, 0},
		[]byte("a graph with a cycle and some attributes of every kind, twice over"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sg := fuzzSubgraph(data)
		m, err := marshal(sg)
		if err != nil {
			if !errors.Is(err, hal.ErrInvalidArgument) && !errors.Is(err, hal.ErrResourceExhausted) && !errors.Is(err, hal.ErrInternal) {
				t.Fatalf("marshal error with code %v: %v", hal.CodeOf(err), err)
			}
			return
		}
		g := sg.Graph
		r := m.root
		if r.structSize != uint32(unsafe.Sizeof(cSubgraph{})) || int(r.numNodes) != len(g.Nodes) || int(r.numInputs) != len(g.Inputs) ||
			int(r.numOutputs) != len(g.Outputs) || int(r.numConstants) != len(g.Initializers) || int(r.numOpsets) != len(sg.Opsets) {
			t.Fatalf("counts: %+v", *r)
		}
		if cRead(t, r.name, 1<<10) != g.Name {
			t.Fatal("subgraph name")
		}
		values := unsafe.Slice((*cValue)(r.values), r.numValues)
		inRange := func(what string, idx int32, optional bool) {
			if (idx == -1 && optional) || (idx >= 0 && uint32(idx) < r.numValues) {
				return
			}
			t.Fatalf("%s: value index %d of %d", what, idx, r.numValues)
		}
		seen := map[string]bool{}
		for i := range values {
			v := &values[i]
			name := cRead(t, v.name, 1<<10)
			if seen[name] {
				t.Fatalf("value %q twice", name)
			}
			seen[name] = true
			if v.rank < -1 || v.rank > 1<<10 || (v.rank > 0) != (v.dims != nil) {
				t.Fatalf("value %q: rank %d dims %v", name, v.rank, v.dims)
			}
			for _, d := range unsafe.Slice((*int64)(v.dims), max(v.rank, 0)) {
				if d < -1 {
					t.Fatalf("value %q: dim %d", name, d)
				}
			}
			if v.constant != -1 && (v.constant < 0 || uint32(v.constant) >= r.numConstants) {
				t.Fatalf("value %q: constant %d of %d", name, v.constant, r.numConstants)
			}
		}
		for k, idx := range unsafe.Slice((*int32)(r.inputs), r.numInputs) {
			inRange("input", idx, false)
			if cRead(t, values[idx].name, 1<<10) != g.Inputs[k].Name {
				t.Fatalf("input %d is value %d", k, idx)
			}
		}
		for _, idx := range unsafe.Slice((*int32)(r.outputs), r.numOutputs) {
			inRange("output", idx, false)
		}
		consts := unsafe.Slice((*cTensor)(r.constants), r.numConstants)
		for i := range values {
			if c := values[i].constant; c >= 0 {
				name := cRead(t, values[i].name, 1<<10)
				checkCTensor(t, "constant "+name, &consts[c], g.Initializers[name])
			}
		}
		topo := unsafe.Slice((*uint32)(r.topoOrder), r.numNodes)
		pos := map[uint32]bool{}
		for _, p := range topo {
			if p >= r.numNodes || pos[p] {
				t.Fatalf("topological order %v is not a permutation of %d nodes", topo, r.numNodes)
			}
			pos[p] = true
		}
		for i, cn := range unsafe.Slice((*cNode)(r.nodes), r.numNodes) {
			n := g.Nodes[i]
			if cRead(t, cn.opType, 1<<10) != n.OpType || cRead(t, cn.domain, 1<<10) != n.Domain || cRead(t, cn.name, 1<<10) != n.Name {
				t.Fatalf("node %d strings", i)
			}
			if int(cn.numInputs) != len(n.Inputs) || int(cn.numOutputs) != len(n.Outputs) {
				t.Fatalf("node %d counts", i)
			}
			for _, idx := range unsafe.Slice((*int32)(cn.inputs), cn.numInputs) {
				inRange(fmt.Sprintf("node %d input", i), idx, true)
			}
			for _, idx := range unsafe.Slice((*int32)(cn.outputs), cn.numOutputs) {
				inRange(fmt.Sprintf("node %d output", i), idx, true)
			}
			attrs := unsafe.Slice((*cAttribute)(cn.attributes), cn.numAttributes)
			for k := range attrs {
				a := &attrs[k]
				name := cRead(t, a.name, 1<<10)
				src := n.Attrs[name]
				if src == nil || int32(src.Type) != a.typ {
					t.Fatalf("node %d attribute %q: type %d, source %+v", i, name, a.typ, src)
				}
				switch src.Type {
				case graph.AttrString:
					if a.sLen != uint64(len(src.S)) || string(unsafe.Slice((*byte)(a.s), a.sLen)) != src.S {
						t.Fatalf("string attribute %q", name)
					}
				case graph.AttrTensor:
					if src.T != nil {
						checkCTensor(t, "tensor attribute "+name, (*cTensor)(a.t), src.T)
					} else if a.t != nil {
						t.Fatalf("attribute %q: a tensor out of nothing", name)
					}
				case graph.AttrFloats, graph.AttrInts, graph.AttrStrings, graph.AttrTensors:
					ptr := map[graph.AttrType]unsafe.Pointer{graph.AttrFloats: a.floats, graph.AttrInts: a.ints, graph.AttrStrings: a.strings, graph.AttrTensors: a.tensors}[src.Type]
					if (a.count > 0) != (ptr != nil) {
						t.Fatalf("attribute %q: %d items at %v", name, a.count, ptr)
					}
					switch src.Type {
					case graph.AttrFloats:
						if a.count != uint64(len(src.Floats)) {
							t.Fatalf("floats attribute %q count", name)
						}
					case graph.AttrInts:
						if a.count != uint64(len(src.Ints)) {
							t.Fatalf("ints attribute %q count", name)
						}
						for j, v := range unsafe.Slice((*int64)(a.ints), a.count) {
							if v != src.Ints[j] {
								t.Fatalf("ints attribute %q", name)
							}
						}
					case graph.AttrStrings:
						if a.count != uint64(len(src.Strings)) {
							t.Fatalf("strings attribute %q count", name)
						}
						for j, p := range unsafe.Slice((*unsafe.Pointer)(a.strings), a.count) {
							if cRead(t, p, 1<<10) != src.Strings[j] {
								t.Fatalf("strings attribute %q", name)
							}
						}
					case graph.AttrTensors:
						ts := unsafe.Slice((*cTensor)(a.tensors), a.count)
						j := 0
						for _, st := range src.Tensors {
							if st == nil {
								continue
							}
							if j >= len(ts) {
								t.Fatalf("tensors attribute %q: %d of %d", name, a.count, len(src.Tensors))
							}
							checkCTensor(t, fmt.Sprintf("tensors attribute %s[%d]", name, j), &ts[j], st)
							j++
						}
						if j != len(ts) {
							t.Fatalf("tensors attribute %q: %d crossed, %d given", name, len(ts), j)
						}
					}
				}
			}
		}
		for i, o := range unsafe.Slice((*cOpset)(r.opsets), r.numOpsets) {
			d := cRead(t, o.domain, 1<<10)
			if want := sg.Opsets[i].Domain; d != want && !(want == "ai.onnx" && d == "") {
				t.Fatalf("opset %d domain %q", i, d)
			}
		}
	})
}

// Found by FuzzMarshal: an attribute tensor whose data does not match its
// shape crossed with num_bytes of its data but a shape that promises more
// (float16 [3] holding one element: the C side would read 4 bytes past
// it). Such tensors, and nil attributes (graph.TopoSort panicked on them),
// are refused with InvalidArgument.
func TestMarshalRefusesMalformedAttributes(t *testing.T) {
	short := &graph.Tensor{DType: graph.Float16, Shape: []int{3}, Data: []graph.F16{0}}
	for name, attrs := range map[string]map[string]*graph.Attribute{
		"short tensor":  {"value": {Name: "value", Type: graph.AttrTensor, T: short}},
		"short tensors": {"values": {Name: "values", Type: graph.AttrTensors, Tensors: []*graph.Tensor{short}}},
		"nil attribute": {"alpha": nil},
	} {
		g := &graph.Graph{
			Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
			Outputs: []graph.ValueInfo{{Name: "y"}},
			Nodes:   []*graph.Node{{Name: "n", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: attrs}},
		}
		_, err := marshal(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
		if !errors.Is(err, hal.ErrInvalidArgument) || !strings.Contains(err.Error(), `node "n": attribute`) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
