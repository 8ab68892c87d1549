package tflite

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/internal/flatbuf"
)

// Field numbers of the TFLite schema (tensorflow/compiler/mlir/lite/schema/schema.fbs),
// written down from the schema's declaration order.
const (
	modelVersion, modelOpcodes, modelSubgraphs, modelDescription, modelBuffers = 0, 1, 2, 3, 4

	opcodeDeprecated, opcodeCustom, opcodeVersion, opcodeBuiltin = 0, 1, 2, 3

	sgTensors, sgInputs, sgOutputs, sgOperators, sgName = 0, 1, 2, 3, 4

	tensorShape, tensorType, tensorBuffer, tensorName, tensorQuant, tensorVariable, tensorSparsity, tensorSignature = 0, 1, 2, 3, 4, 5, 6, 7

	quantMin, quantMax, quantScale, quantZero, quantDetailsType, quantDetails, quantDim = 0, 1, 2, 3, 4, 5, 6

	opOpcode, opInputs, opOutputs, opOptionsType, opOptions, opCustomOptions = 0, 1, 2, 3, 4, 5
	opIntermediates, opLargeCustomOffset, opLargeCustomSize                  = 8, 9, 10

	bufData, bufOffset, bufSize = 0, 1, 2

	spTraversal, spBlockMap, spDims                                    = 0, 1, 2
	dmFormat, dmDenseSize, dmSegType, dmSegments, dmIdxType, dmIndices = 0, 1, 2, 3, 4, 5
	// SparseIndexVector union members; each is a table whose field 0 is
	// the values vector
	sivInt32, sivUint16, sivUint8 = 1, 2, 3
)

// maxSparseDims bounds the traversal order (n dense dims plus k block
// dims): real tensors have a handful.
const maxSparseDims = 16

func parseSparsity(st flatbuf.Table) (*Sparsity, error) {
	sp := &Sparsity{}
	var err1, err2 error
	sp.TraversalOrder, err1 = st.I32s(spTraversal)
	sp.BlockMap, err2 = st.I32s(spBlockMap)
	if err := firstErr(err1, err2); err != nil {
		return nil, err
	}
	if len(sp.TraversalOrder) > maxSparseDims {
		return nil, fmt.Errorf("traversal order of %d dims (at most %d)", len(sp.TraversalOrder), maxSparseDims)
	}
	dts, err := st.Tables(spDims, "dimension metadata")
	if err != nil {
		return nil, err
	}
	if len(dts) != len(sp.TraversalOrder) {
		return nil, fmt.Errorf("%d dimension metadata for a traversal order of %d", len(dts), len(sp.TraversalOrder))
	}
	for i, dt := range dts {
		var d DimMeta
		f, err1 := dt.U8(dmFormat, 0)
		ds, err2 := dt.I32(dmDenseSize, 0)
		if err := firstErr(err1, err2); err != nil {
			return nil, fmt.Errorf("dimension %d: %w", i, err)
		}
		d.DenseSize = ds
		switch f {
		case 0:
		case 1:
			d.Sparse = true
			if d.Segments, err = indexVector(dt, dmSegType, dmSegments); err != nil {
				return nil, fmt.Errorf("dimension %d segments: %w", i, err)
			}
			if d.Indices, err = indexVector(dt, dmIdxType, dmIndices); err != nil {
				return nil, fmt.Errorf("dimension %d indices: %w", i, err)
			}
		default:
			return nil, fmt.Errorf("dimension %d has format %d (DENSE or SPARSE_CSR only)", i, f)
		}
		sp.Dims = append(sp.Dims, d)
	}
	return sp, nil
}

// indexVector reads a SparseIndexVector union (type in field ti, table in
// field vi) widened to int32.
func indexVector(t flatbuf.Table, ti, vi int) ([]int32, error) {
	typ, err := t.U8(ti, 0)
	if err != nil {
		return nil, err
	}
	if typ == 0 {
		return nil, fmt.Errorf("missing")
	}
	v, ok, err := t.Sub(vi, "index vector")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("union of type %d has no table", typ)
	}
	width := map[uint8]int{sivInt32: 4, sivUint16: 2, sivUint8: 1}[typ]
	if width == 0 {
		return nil, fmt.Errorf("index vector type %d (Int32Vector, Uint16Vector or Uint8Vector only)", typ)
	}
	return v.Ints32(0, width)
}

// Model is a decoded .tflite file: what the flatbuffer says, before any
// conversion to the Switchyard IR.
type Model struct {
	Version     uint32
	Description string
	Opcodes     []Opcode
	Subgraphs   []Subgraph
	// Buffers hold the raw bytes of each buffer (nil when empty); they
	// alias the file's bytes.
	Buffers [][]byte
}

// Opcode is one entry of the model's operator code table.
type Opcode struct {
	Builtin int32  // BuiltinOperator
	Custom  string // custom_code, for CUSTOM
	Version int32
}

// Name is the opcode's name as TFLite spells it (CONV_2D, or the custom
// code of a custom op).
func (o Opcode) Name() string {
	if o.Builtin == opCUSTOM {
		return "CUSTOM(" + o.Custom + ")"
	}
	return builtinName(o.Builtin)
}

// Subgraph is one graph of the model; the first is the main one.
type Subgraph struct {
	Name      string
	Tensors   []Tensor
	Inputs    []int32
	Outputs   []int32
	Operators []Operator
}

// Tensor is one tensor declaration.
type Tensor struct {
	Name      string
	Shape     []int32
	Signature []int32 // shape_signature: -1 marks a dynamic dim
	Type      int8    // TensorType
	Buffer    uint32
	Variable  bool
	Sparse    bool      // the tensor has sparsity parameters
	Sparsity  *Sparsity // its sparsity parameters when Sparse
	Quant     *Quant
}

// Sparsity are a sparse constant's SparsityParameters (a TACO-like
// format): the traversal order of the n dense dims followed by k block
// dims, the dense dim each block dim subdivides, and one DimMeta per
// traversal position.
type Sparsity struct {
	TraversalOrder []int32
	BlockMap       []int32
	Dims           []DimMeta
}

// DimMeta describes one dimension in traversal order: DENSE with its
// size, or SPARSE_CSR with its segments (one per position of the
// previous level, plus one) and the coordinates of the stored entries.
type DimMeta struct {
	Sparse    bool
	DenseSize int32
	Segments  []int32
	Indices   []int32
}

// Quant are a tensor's affine quantization parameters: real = Scale *
// (q - ZeroPoint), per tensor (one scale) or per channel along Dim.
type Quant struct {
	Scale     []float32
	ZeroPoint []int64
	Dim       int32
	Custom    bool // custom quantization details: unsupported
}

// Operator is one operator application.
type Operator struct {
	Opcode        uint32
	Inputs        []int32 // -1 marks an omitted optional input
	Outputs       []int32
	Intermediates []int32
	OptionsType   uint8
	Options       flatbuf.Table // zero when absent (check OptionsType)
	HasOptions    bool
	CustomOptions []byte
}

// Parse decodes a .tflite flatbuffer. data is the whole file: buffers
// stored after the flatbuffer (offset/size) are resolved against it.
// Every offset and length is checked against data before it is used.
func Parse(data []byte) (*Model, error) {
	if len(data) < 8 || string(data[4:8]) != "TFL3" {
		return nil, fmt.Errorf("tflite: not a TFLite model (no \"TFL3\" identifier at bytes 4..8)")
	}
	r, err := flatbuf.Root("tflite", data, flatbuf.Options{})
	if err != nil {
		return nil, err
	}
	m := &Model{}
	if m.Version, err = r.U32(modelVersion, 0); err != nil {
		return nil, err
	}
	if m.Description, err = r.Str(modelDescription); err != nil {
		return nil, err
	}
	ocs, err := r.Tables(modelOpcodes, "operator code")
	if err != nil {
		return nil, err
	}
	for _, oc := range ocs {
		dep, err1 := oc.U8(opcodeDeprecated, 0)
		b, err2 := oc.I32(opcodeBuiltin, 0)
		v, err3 := oc.I32(opcodeVersion, 1)
		c, err4 := oc.Str(opcodeCustom)
		if err := firstErr(err1, err2, err3, err4); err != nil {
			return nil, err
		}
		// builtin_code supersedes deprecated_builtin_code; old files only
		// have the latter (and it caps at 127).
		if int32(int8(dep)) > b {
			b = int32(int8(dep))
		}
		m.Opcodes = append(m.Opcodes, Opcode{Builtin: b, Custom: c, Version: v})
	}
	bufs, err := r.Tables(modelBuffers, "buffer")
	if err != nil {
		return nil, err
	}
	m.Buffers = make([][]byte, len(bufs))
	for i, bt := range bufs {
		d, err := bt.Bytes(bufData)
		if err != nil {
			return nil, fmt.Errorf("buffer %d: %w", i, err)
		}
		off, err1 := bt.U64(bufOffset, 0)
		size, err2 := bt.U64(bufSize, 0)
		if err := firstErr(err1, err2); err != nil {
			return nil, err
		}
		if off > 1 {
			// stored after the flatbuffer, at an offset from the file start
			if off > uint64(len(data)) || size > uint64(len(data))-off {
				return nil, fmt.Errorf("tflite: buffer %d at offset %d of %d bytes lies outside the %d-byte file", i, off, size, len(data))
			}
			d = data[off : off+size]
		}
		m.Buffers[i] = d
	}
	sgs, err := r.Tables(modelSubgraphs, "subgraph")
	if err != nil {
		return nil, err
	}
	if len(sgs) == 0 {
		return nil, fmt.Errorf("tflite: model has no subgraph")
	}
	for si, st := range sgs {
		sg, err := parseSubgraph(st, m)
		if err != nil {
			return nil, fmt.Errorf("tflite: subgraph %d: %w", si, err)
		}
		m.Subgraphs = append(m.Subgraphs, *sg)
	}
	return m, nil
}

func parseSubgraph(st flatbuf.Table, m *Model) (*Subgraph, error) {
	sg := &Subgraph{}
	var err error
	if sg.Name, err = st.Str(sgName); err != nil {
		return nil, err
	}
	if sg.Inputs, err = st.I32s(sgInputs); err != nil {
		return nil, err
	}
	if sg.Outputs, err = st.I32s(sgOutputs); err != nil {
		return nil, err
	}
	tts, err := st.Tables(sgTensors, "tensor")
	if err != nil {
		return nil, err
	}
	sg.Tensors = make([]Tensor, len(tts))
	for i, tt := range tts {
		if err := parseTensor(tt, &sg.Tensors[i], len(m.Buffers)); err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	ots, err := st.Tables(sgOperators, "operator")
	if err != nil {
		return nil, err
	}
	sg.Operators = make([]Operator, len(ots))
	for i, ot := range ots {
		op := &sg.Operators[i]
		var err1, err2, err3, err4, err5 error
		op.Opcode, err1 = ot.U32(opOpcode, 0)
		op.Inputs, err2 = ot.I32s(opInputs)
		op.Outputs, err3 = ot.I32s(opOutputs)
		op.Intermediates, err4 = ot.I32s(opIntermediates)
		op.OptionsType, err5 = ot.U8(opOptionsType, 0)
		if err := firstErr(err1, err2, err3, err4, err5); err != nil {
			return nil, fmt.Errorf("operator %d: %w", i, err)
		}
		if op.OptionsType != 0 {
			if op.Options, op.HasOptions, err = ot.Sub(opOptions, "options"); err != nil {
				return nil, fmt.Errorf("operator %d: %w", i, err)
			}
		}
		if op.CustomOptions, err = ot.Bytes(opCustomOptions); err != nil {
			return nil, fmt.Errorf("operator %d: %w", i, err)
		}
		if int(op.Opcode) >= len(m.Opcodes) {
			return nil, fmt.Errorf("operator %d uses opcode %d of %d", i, op.Opcode, len(m.Opcodes))
		}
		for _, idx := range append(append(append([]int32{}, op.Inputs...), op.Outputs...), op.Intermediates...) {
			if idx < -1 || int(idx) >= len(sg.Tensors) {
				return nil, fmt.Errorf("operator %d refers to tensor %d of %d", i, idx, len(sg.Tensors))
			}
		}
	}
	for _, idx := range append(append([]int32{}, sg.Inputs...), sg.Outputs...) {
		if idx < 0 || int(idx) >= len(sg.Tensors) {
			return nil, fmt.Errorf("graph input/output refers to tensor %d of %d", idx, len(sg.Tensors))
		}
	}
	return sg, nil
}

func parseTensor(tt flatbuf.Table, t *Tensor, nbuf int) error {
	var err1, err2, err3, err4, err5, err6 error
	t.Shape, err1 = tt.I32s(tensorShape)
	var ty uint8
	ty, err2 = tt.U8(tensorType, 0)
	t.Type = int8(ty)
	t.Buffer, err3 = tt.U32(tensorBuffer, 0)
	t.Name, err4 = tt.Str(tensorName)
	t.Variable, err5 = tt.Bool(tensorVariable, false)
	t.Signature, err6 = tt.I32s(tensorSignature)
	if err := firstErr(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	if int(t.Buffer) >= nbuf && t.Buffer != 0 {
		return fmt.Errorf("buffer %d of %d", t.Buffer, nbuf)
	}
	if st, ok, err := tt.Sub(tensorSparsity, "sparsity"); err != nil {
		return err
	} else if ok {
		t.Sparse = true
		if t.Sparsity, err = parseSparsity(st); err != nil {
			return fmt.Errorf("sparsity: %w", err)
		}
	}
	q, ok, err := tt.Sub(tensorQuant, "quantization")
	if err != nil || !ok {
		return err
	}
	qp := &Quant{}
	var e1, e2, e3, e4 error
	var dt uint8
	qp.Scale, e1 = q.F32s(quantScale)
	qp.ZeroPoint, e2 = q.I64s(quantZero)
	qp.Dim, e3 = q.I32(quantDim, 0)
	dt, e4 = q.U8(quantDetailsType, 0)
	if err := firstErr(e1, e2, e3, e4); err != nil {
		return err
	}
	qp.Custom = dt != 0
	if len(qp.Scale) > 0 || qp.Custom {
		if !qp.Custom && len(qp.ZeroPoint) != 0 && len(qp.ZeroPoint) != len(qp.Scale) {
			return fmt.Errorf("quantization has %d scales but %d zero points", len(qp.Scale), len(qp.ZeroPoint))
		}
		t.Quant = qp
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
