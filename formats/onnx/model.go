// Package onnx imports ONNX models (ModelProto) and tensors (TensorProto)
// into Switchyard's graph IR. The protobuf decoding is written directly on
// google.golang.org/protobuf/encoding/protowire against the field numbers of
// the ONNX format; it keeps only what the IR needs.
//
// Contracts:
//   - Malformed input returns an error; decoding never panics.
//   - Tensor sizes are checked against their data (and against
//     graph.MaxTensorBytes, or the smaller Options.MaxTensorBytes) before
//     anything is allocated for them.
//   - Declared dims are ≥ 0 or symbolic; a negative dim is an error.
//   - Decode aliases the bytes it is given for aligned raw initializer data
//     (zero copy); the caller must keep them alive and unmodified. LoadFile
//     reads the file into memory it owns (never a mapping a writer could
//     shrink under the model: see file.go).
//   - Model and external data files must be regular files; external data
//     must lie inside the model's directory (symbolic links included).
package onnx

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
)

// Options controls decoding.
type Options struct {
	// BaseDir is where external tensor data files are looked up; empty
	// forbids external data.
	BaseDir string
	// CopyData copies initializer bytes instead of aliasing the input.
	CopyData bool
	// MaxTensorBytes, when > 0, lowers the per-tensor size limit
	// (graph.MaxTensorBytes) for this model's initializers.
	MaxTensorBytes int64
}

// maxDepth bounds subgraph nesting so hostile input cannot exhaust the stack.
const maxDepth = 64

// LoadFile reads and decodes a model file; external data is resolved next to it.
func LoadFile(path string) (*graph.Model, error) {
	return LoadFileWith(path, Options{})
}

// LoadFileWith is LoadFile with options; an empty BaseDir means the file's
// directory.
func LoadFileWith(path string, opt Options) (*graph.Model, error) {
	data, err := readModelFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	if opt.BaseDir == "" {
		opt.BaseDir = filepath.Dir(path)
	}
	return Decode(data, opt)
}

// Decode decodes a serialized ModelProto.
func Decode(data []byte, opt Options) (m *graph.Model, err error) {
	if len(data) == 0 {
		return nil, errors.New("onnx: empty model")
	}
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("onnx: internal error decoding model: %v", r)
		}
	}()
	d := &decoder{opt: tensorOptions{baseDir: opt.BaseDir, copyRaw: opt.CopyData, limit: opt.MaxTensorBytes, ext: &externalFiles{}}}
	m = &graph.Model{Metadata: map[string]string{}}
	var graphBytes []byte
	haveGraph := false
	err = forEach(data, func(f field) error {
		var err error
		switch f.num {
		case 1:
			if err = wantVarint(f, "ir_version"); err == nil {
				m.IRVersion = int64(f.u)
			}
		case 2:
			if err = wantBytes(f, "producer_name"); err == nil {
				m.ProducerName = string(f.b)
			}
		case 3:
			if err = wantBytes(f, "producer_version"); err == nil {
				m.ProducerVersion = string(f.b)
			}
		case 4:
			if err = wantBytes(f, "domain"); err == nil {
				m.Domain = string(f.b)
			}
		case 5:
			if err = wantVarint(f, "model_version"); err == nil {
				m.ModelVersion = int64(f.u)
			}
		case 6:
			if err = wantBytes(f, "doc_string"); err == nil {
				m.DocString = string(f.b)
			}
		case 7:
			if err = wantBytes(f, "graph"); err == nil {
				graphBytes, haveGraph = f.b, true
			}
		case 8:
			if err = wantBytes(f, "opset_import"); err != nil {
				return err
			}
			var fs []field
			fs, err = pick(f.b, 1, 2) // domain, version
			m.Opsets = append(m.Opsets, graph.Opset{Domain: string(fs[0].b), Version: int64(fs[1].u)})
		case 14:
			if err = wantBytes(f, "metadata_props"); err != nil {
				return err
			}
			var fs []field
			fs, err = pick(f.b, 1, 2) // key, value
			m.Metadata[string(fs[0].b)] = string(fs[1].b)
		case 25:
			if err = wantBytes(f, "functions"); err != nil {
				return err
			}
			fs, _ := pick(f.b, 1, 10) // name, domain
			m.Functions = append(m.Functions, string(fs[1].b)+":"+string(fs[0].b))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("onnx: model: %w", err)
	}
	if !haveGraph {
		return nil, errors.New("onnx: model has no graph (is this an ONNX model file?)")
	}
	if m.IRVersion == 0 && len(m.Opsets) == 0 {
		return nil, errors.New("onnx: not an ONNX model (no ir_version and no opset_import)")
	}
	if len(m.Opsets) == 0 {
		// IR version 1-2 models predate opset_import: they are opset 1.
		m.Opsets = []graph.Opset{{Domain: "", Version: 1}}
	}
	m.Graph, err = d.graph(graphBytes, 0)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	return m, nil
}

type decoder struct {
	opt tensorOptions
}

func (d *decoder) graph(b []byte, depth int) (*graph.Graph, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("subgraphs nested deeper than %d", maxDepth)
	}
	g := &graph.Graph{Initializers: map[string]*graph.Tensor{}}
	err := forEach(b, func(f field) error {
		switch f.num {
		case 1:
			if err := wantBytes(f, "node"); err != nil {
				return err
			}
			n, err := d.node(f.b, depth)
			if err != nil {
				return err
			}
			g.Nodes = append(g.Nodes, n)
		case 2:
			g.Name = string(f.b)
		case 5:
			if err := wantBytes(f, "initializer"); err != nil {
				return err
			}
			tp, err := parseTensorProto(f.b)
			if err != nil {
				return fmt.Errorf("initializer: %w", err)
			}
			t, err := tp.toTensor(d.opt)
			if err != nil {
				return fmt.Errorf("initializer %q: %w", tp.name, err)
			}
			if _, dup := g.Initializers[tp.name]; dup {
				return fmt.Errorf("initializer %q defined twice", tp.name)
			}
			g.Initializers[tp.name] = t
		case 15:
			if err := wantBytes(f, "sparse_initializer"); err != nil {
				return err
			}
			name, t, err := d.sparse(f.b)
			if err != nil {
				return fmt.Errorf("sparse initializer %q: %w", name, err)
			}
			g.Initializers[name] = t
		case 11, 12, 13:
			if err := wantBytes(f, "value_info"); err != nil {
				return err
			}
			vi, err := valueInfo(f.b)
			if err != nil {
				return err
			}
			switch f.num {
			case 11:
				g.Inputs = append(g.Inputs, vi)
			case 12:
				g.Outputs = append(g.Outputs, vi)
			default:
				g.ValueInfo = append(g.ValueInfo, vi)
			}
		}
		return nil
	})
	if err != nil {
		if g.Name != "" {
			return nil, fmt.Errorf("graph %q: %w", g.Name, err)
		}
		return nil, err
	}
	return g, nil
}

func (d *decoder) sparse(b []byte) (string, *graph.Tensor, error) {
	var values, indices *tensorProto
	var dims []int64
	err := forEach(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			values, err = parseTensorProto(f.b)
		case 2:
			indices, err = parseTensorProto(f.b)
		case 3:
			dims, err = appendInts(dims, f)
		}
		return err
	})
	if err != nil {
		return "", nil, err
	}
	if values == nil || indices == nil {
		return "", nil, errors.New("sparse tensor needs values and indices")
	}
	vt, err := values.toTensor(d.opt)
	if err != nil {
		return values.name, nil, err
	}
	it, err := indices.toTensor(d.opt)
	if err != nil {
		return values.name, nil, err
	}
	shape := make([]int, len(dims))
	for i, v := range dims {
		if v < 0 {
			return values.name, nil, fmt.Errorf("negative dim %d", v)
		}
		shape[i] = int(v)
	}
	// the dense shape comes from the file: check it against the limit
	// before allocating (2^31 floats in a few bytes of file)
	if _, err := graph.CheckAllocLimit(vt.DType, shape, d.opt.limit); err != nil {
		return values.name, nil, err
	}
	dense, err := graph.New(vt.DType, shape)
	if err != nil {
		return values.name, nil, err
	}
	nnz := vt.Len()
	total := dense.Len()
	idx := it.Int64s()
	strides := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = acc
		acc *= int64(shape[i])
	}
	for k := 0; k < nnz; k++ {
		var flat int64
		switch {
		case len(idx) == nnz:
			flat = idx[k]
		case len(idx) == nnz*len(shape):
			for j := range shape {
				flat += idx[k*len(shape)+j] * strides[j]
			}
		default:
			return values.name, nil, fmt.Errorf("indices hold %d values for %d non-zeros", len(idx), nnz)
		}
		if flat < 0 || flat >= int64(total) {
			return values.name, nil, fmt.Errorf("index %d out of range", flat)
		}
		setFrom(dense, int(flat), vt, k)
	}
	return values.name, dense, nil
}

func setFrom(dst *graph.Tensor, i int, src *graph.Tensor, j int) {
	switch d := dst.Data.(type) {
	case []string:
		d[i] = src.Data.([]string)[j]
	case []graph.F16:
		d[i] = src.Data.([]graph.F16)[j]
	case []graph.BF16:
		d[i] = src.Data.([]graph.BF16)[j]
	case []int64:
		d[i] = src.Data.([]int64)[j]
	case []uint64:
		d[i] = src.Data.([]uint64)[j]
	default:
		dst.SetFloat64(i, src.Float64At(j))
	}
}

func valueInfo(b []byte) (graph.ValueInfo, error) {
	var vi graph.ValueInfo
	err := forEach(b, func(f field) error {
		switch f.num {
		case 1:
			vi.Name = string(f.b)
		case 2:
			if err := wantBytes(f, "type"); err != nil {
				return err
			}
			t, err := typeProto(f.b, 0)
			if err != nil {
				return fmt.Errorf("value %q: %w", vi.Name, err)
			}
			vi.Type = t
		}
		return nil
	})
	return vi, err
}

func typeProto(b []byte, depth int) (graph.ValueType, error) {
	if depth > maxDepth {
		return graph.ValueType{}, errors.New("type nested too deeply")
	}
	var t graph.ValueType
	err := forEach(b, func(f field) error {
		switch f.num {
		case 1, 8: // tensor_type, sparse_tensor_type
			t.Kind = "tensor"
			if f.num == 8 {
				t.Kind = "sparse_tensor"
			}
			return forEach(f.b, func(e field) error {
				switch e.num {
				case 1:
					t.DType = graph.DType(int32(e.u))
				case 2:
					s, err := shapeProto(e.b)
					if err != nil {
						return err
					}
					t.Shape = s
				}
				return nil
			})
		case 4:
			t.Kind = "sequence"
		case 5:
			t.Kind = "map"
		case 9:
			t.Kind = "optional"
		}
		return nil
	})
	return t, err
}

func shapeProto(b []byte) (graph.Shape, error) {
	s := graph.Shape{}
	err := forEach(b, func(f field) error {
		if f.num != 1 {
			return nil
		}
		d := graph.Dim{Value: -1}
		if err := forEach(f.b, func(e field) error {
			switch e.num {
			case 1:
				if err := wantVarint(e, "dim_value"); err != nil {
					return err
				}
				d.Value = int64(e.u)
				if d.Value < 0 {
					// not "unknown": ONNX marks unknown dims by leaving
					// dim_value unset (or naming a dim_param)
					return fmt.Errorf("dim %d is %d: a declared dim must be ≥ 0 or symbolic", len(s), d.Value)
				}
			case 2:
				d.Param = string(e.b)
			}
			return nil
		}); err != nil {
			return err
		}
		s = append(s, d)
		return nil
	})
	return s, err
}

func (d *decoder) node(b []byte, depth int) (*graph.Node, error) {
	n := &graph.Node{}
	err := forEach(b, func(f field) error {
		switch f.num {
		case 1:
			n.Inputs = append(n.Inputs, string(f.b))
		case 2:
			n.Outputs = append(n.Outputs, string(f.b))
		case 3:
			n.Name = string(f.b)
		case 4:
			n.OpType = string(f.b)
		case 7:
			n.Domain = string(f.b)
			if n.Domain == "ai.onnx" {
				n.Domain = ""
			}
		case 5:
			if err := wantBytes(f, "attribute"); err != nil {
				return err
			}
			a, err := d.attribute(f.b, depth)
			if err != nil {
				return err
			}
			if n.Attrs == nil {
				n.Attrs = map[string]*graph.Attribute{}
			}
			n.Attrs[a.Name] = a
		}
		return nil
	})
	if err != nil {
		if n.OpType != "" {
			return nil, fmt.Errorf("%s: %w", n.Label(), err)
		}
		return nil, err
	}
	return n, nil
}

func (d *decoder) attribute(b []byte, depth int) (*graph.Attribute, error) {
	a := &graph.Attribute{}
	var setType graph.AttrType
	err := forEach(b, func(f field) error {
		var err error
		switch f.num {
		case 1:
			a.Name = string(f.b)
		case 20:
			a.Type = graph.AttrType(int32(f.u))
		case 2:
			a.F, setType = mathFloat32(uint32(f.u)), graph.AttrFloat
		case 3:
			a.I, setType = int64(f.u), graph.AttrInt
		case 4:
			a.S, setType = string(f.b), graph.AttrString
		case 5:
			var tp *tensorProto
			if tp, err = parseTensorProto(f.b); err == nil {
				a.T, err = tp.toTensor(tensorOptions{baseDir: d.opt.baseDir, copyRaw: true, limit: d.opt.limit, ext: d.opt.ext})
			}
			setType = graph.AttrTensor
		case 6:
			a.G, err = d.graph(f.b, depth+1)
			setType = graph.AttrGraph
		case 7:
			a.Floats, err = appendFloats(a.Floats, f)
			setType = graph.AttrFloats
		case 8:
			a.Ints, err = appendInts(a.Ints, f)
			setType = graph.AttrInts
		case 9:
			a.Strings = append(a.Strings, string(f.b))
			setType = graph.AttrStrings
		case 10:
			var tp *tensorProto
			var t *graph.Tensor
			if tp, err = parseTensorProto(f.b); err == nil {
				t, err = tp.toTensor(tensorOptions{baseDir: d.opt.baseDir, copyRaw: true, limit: d.opt.limit, ext: d.opt.ext})
				a.Tensors = append(a.Tensors, t)
			}
			setType = graph.AttrTensors
		case 11:
			var g *graph.Graph
			g, err = d.graph(f.b, depth+1)
			a.Graphs = append(a.Graphs, g)
			setType = graph.AttrGraphs
		case 22:
			// sparse tensor attribute (Constant's sparse_value): densified
			var t *graph.Tensor
			_, t, err = d.sparse(f.b)
			a.T, setType = t, graph.AttrTensor
		case 21:
			return fmt.Errorf("attribute %q references a function attribute (ref_attr_name), which is only valid inside functions", a.Name)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("attribute %q: %w", a.Name, err)
	}
	if a.Type == graph.AttrSparse {
		a.Type = graph.AttrTensor
	}
	if a.Type == graph.AttrUndefined {
		a.Type = setType
	}
	return a, nil
}

func mathFloat32(u uint32) float32 {
	return float32frombits(u)
}

func init() {
	formats.Register(formats.Format{
		Name:       "onnx",
		Extensions: []string{".onnx"},
		Fallback:   true,
		LoadFile: func(path string, o formats.Options) (*graph.Model, error) {
			return LoadFileWith(path, Options{MaxTensorBytes: o.MaxTensorBytes})
		},
		Decode: func(data []byte, o formats.Options) (*graph.Model, error) {
			return Decode(data, Options{MaxTensorBytes: o.MaxTensorBytes})
		},
	})
}
