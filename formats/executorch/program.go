package executorch

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/flatbuf"
)

// Program is a parsed ExecuTorch program: its methods (execution plans),
// constant data tables and segments. Field meanings follow ExecuTorch's
// program schema (schema/program.fbs, identifier "ET12").
type Program struct {
	Header  Header
	Version uint32
	Plans   []*Plan
	// ConstantBuffer is the deprecated inline constant table (each entry a
	// tensor's bytes; entry 0 is reserved). Empty in programs written
	// after September 2024, which use ConstantSegment.
	ConstantBuffer [][]byte
	// DelegateData are the inline delegate blobs.
	DelegateData [][]byte
	// Segments locate data after the flatbuffer, relative to
	// Header.SegmentBaseOffset.
	Segments []Segment
	// ConstantSegment holds each constant tensor's offset in one segment.
	ConstantSegment *SubsegmentOffsets
	// MutableSegments hold initial values of mutable tensors.
	MutableSegments []SubsegmentOffsets
	// NamedData are blobs of the program's segments keyed by name
	// (delegates' weights).
	NamedData []NamedData

	file []byte // the whole file: segments index into it
}

// Segment is a piece of data after the flatbuffer.
type Segment struct {
	Offset, Size uint64
}

// SubsegmentOffsets are byte offsets into one segment.
type SubsegmentOffsets struct {
	SegmentIndex uint32
	Offsets      []uint64
}

// NamedData names a segment.
type NamedData struct {
	Key          string
	SegmentIndex uint32
}

// Plan is one method of a program.
type Plan struct {
	Name                string
	Values              []Value
	Inputs, Outputs     []int32
	Chains              []Chain
	Operators           []Operator
	Delegates           []Delegate
	NonConstBufferSizes []int64
}

// Kind is an EValue's type, numbered as the schema's KernelTypes union.
type Kind uint8

// EValue kinds.
const (
	KindNone               Kind = 0
	KindNull               Kind = 1
	KindInt                Kind = 2
	KindBool               Kind = 3
	KindDouble             Kind = 4
	KindTensor             Kind = 5
	KindString             Kind = 6
	KindIntList            Kind = 7
	KindDoubleList         Kind = 8
	KindBoolList           Kind = 9
	KindTensorList         Kind = 10
	KindOptionalTensorList Kind = 11
)

var kindNames = [...]string{"none", "null", "int", "bool", "double", "tensor", "string", "int_list", "double_list", "bool_list", "tensor_list", "optional_tensor_list"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Value is one entry of a method's value table; the field matching Kind
// is set. Lists of tensors hold value indices (-1: none).
type Value struct {
	Kind    Kind
	Int     int64
	Bool    bool
	Double  float64
	Str     string
	Ints    []int64
	Doubles []float64
	Bools   []bool
	Items   []int32
	Tensor  *Tensor
}

// Tensor is a tensor value's metadata.
type Tensor struct {
	ScalarType    ScalarType
	StorageOffset int32
	Sizes         []int32
	DimOrder      []uint8
	RequiresGrad  bool
	// DataBufferIdx > 0 points at the tensor's data (constant, or the
	// initial state of a mutable tensor).
	DataBufferIdx uint32
	// Alloc is set for tensors the memory planner placed.
	Alloc    *Allocation
	Layout   int8
	Dynamism Dynamism
	Extra    *ExtraTensorInfo
}

// Allocation is a planned tensor's memory placement.
type Allocation struct {
	MemoryID uint32
	Offset   uint64
}

// ExtraTensorInfo is the rarely set part of a tensor.
type ExtraTensorInfo struct {
	MutableDataSegmentsIdx uint64
	FullyQualifiedName     string
	// External reports data held outside the program (a .ptd file), found
	// by FullyQualifiedName.
	External bool
}

// Dynamism says whether a tensor's sizes are exact or bounds.
type Dynamism uint8

// Tensor shape dynamism.
const (
	Static         Dynamism = 0
	DynamicBound   Dynamism = 1
	DynamicUnbound Dynamism = 2
)

func (d Dynamism) String() string {
	switch d {
	case Static:
		return "static"
	case DynamicBound:
		return "dynamic_bound"
	case DynamicUnbound:
		return "dynamic_unbound"
	}
	return fmt.Sprintf("dynamism(%d)", uint8(d))
}

// Chain is a list of instructions.
type Chain struct {
	Inputs, Outputs []int32
	Instructions    []Instruction
}

// InstrKind is an instruction's type, numbered as the schema's union.
type InstrKind uint8

// Instruction kinds.
const (
	InstrKernel    InstrKind = 1
	InstrDelegate  InstrKind = 2
	InstrMove      InstrKind = 3
	InstrJumpFalse InstrKind = 4
	InstrFree      InstrKind = 5
)

func (k InstrKind) String() string {
	switch k {
	case InstrKernel:
		return "kernel"
	case InstrDelegate:
		return "delegate"
	case InstrMove:
		return "move"
	case InstrJumpFalse:
		return "jump_false"
	case InstrFree:
		return "free"
	}
	return fmt.Sprintf("instruction(%d)", uint8(k))
}

// Instruction is one step of a chain. Kernel: Index is the operator, Args
// the values (inputs then outputs). Delegate: Index is the delegate.
// Move: A → B. JumpFalse: A is the condition, B the destination. Free: A.
type Instruction struct {
	Kind  InstrKind
	Index int32
	Args  []int32
	A, B  int32
}

// Operator is a kernel's name ("aten::add") and overload ("out").
type Operator struct {
	Name, Overload string
}

// FullName is "name.overload" (or the name without an overload).
func (o Operator) FullName() string {
	if o.Overload == "" {
		return o.Name
	}
	return o.Name + "." + o.Overload
}

// Delegate is a backend-lowered subgraph.
type Delegate struct {
	ID string
	// InSegment reports the blob lives in Program.Segments[Index] rather
	// than Program.DelegateData[Index].
	InSegment    bool
	Index        uint32
	CompileSpecs []CompileSpec
}

// CompileSpec is one backend option.
type CompileSpec struct {
	Key   string
	Value []byte
}

// Parse reads a program from the bytes of a whole .pte file. The result
// refers to data, which must not be modified.
func Parse(data []byte) (*Program, error) {
	h, err := ParseHeader(data, uint64(len(data)))
	if err != nil {
		return nil, err
	}
	fb := data
	if h.Extended {
		fb = data[:h.ProgramSize]
	}
	p, err := parseProgram(fb)
	if err != nil {
		return nil, fmt.Errorf("executorch: %w", err)
	}
	p.Header = h
	p.file = data
	if err := p.checkSegments(); err != nil {
		return nil, fmt.Errorf("executorch: %w", err)
	}
	return p, nil
}

func parseProgram(fb []byte) (*Program, error) {
	root, err := flatbuf.Root("executorch program", fb, flatbuf.Options{ShortTables: true})
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	p := &Program{}
	if p.Version, err = root.U32(0, 0); err != nil {
		return nil, err
	}
	if p.Plans, err = flatbuf.Decode(root, 1, "execution plan", parsePlan); err != nil {
		return nil, err
	}
	if p.ConstantBuffer, err = flatbuf.Decode(root, 2, "constant buffer", bytesField0); err != nil {
		return nil, err
	}
	if p.DelegateData, err = flatbuf.Decode(root, 3, "delegate data", bytesField0); err != nil {
		return nil, err
	}
	if p.Segments, err = flatbuf.Decode(root, 4, "segment", parseSegment); err != nil {
		return nil, err
	}
	if cs, ok, err := root.Sub(5, "constant segment"); err != nil {
		return nil, fmt.Errorf("constant segment: %w", err)
	} else if ok {
		so, err := parseSubsegment(cs)
		if err != nil {
			return nil, fmt.Errorf("constant segment: %w", err)
		}
		p.ConstantSegment = &so
	}
	if p.MutableSegments, err = flatbuf.Decode(root, 6, "mutable data segment", parseSubsegment); err != nil {
		return nil, err
	}
	if p.NamedData, err = flatbuf.Decode(root, 7, "named data", parseNamedData); err != nil {
		return nil, err
	}
	return p, nil
}

// bytesField0 reads a table whose field 0 is a byte vector (Buffer,
// BackendDelegateInlineData).
func bytesField0(t flatbuf.Table) ([]byte, error) { return t.Bytes(0) }

func parseSegment(t flatbuf.Table) (Segment, error) {
	var sg Segment
	var err error
	if sg.Offset, err = t.U64(0, 0); err == nil {
		sg.Size, err = t.U64(1, 0)
	}
	return sg, err
}

func parseNamedData(t flatbuf.Table) (NamedData, error) {
	var d NamedData
	var err error
	if d.Key, err = t.Str(0); err == nil {
		d.SegmentIndex, err = t.U32(1, 0)
	}
	return d, err
}

func parseOperator(t flatbuf.Table) (Operator, error) {
	var op Operator
	var err error
	if op.Name, err = t.Str(0); err == nil {
		op.Overload, err = t.Str(1)
	}
	return op, err
}

func parseCompileSpec(t flatbuf.Table) (CompileSpec, error) {
	var c CompileSpec
	var err error
	if c.Key, err = t.Str(0); err == nil {
		c.Value, err = t.Bytes(1)
	}
	return c, err
}

func parseSubsegment(t flatbuf.Table) (SubsegmentOffsets, error) {
	var s SubsegmentOffsets
	var err error
	if s.SegmentIndex, err = t.U32(0, 0); err != nil {
		return s, err
	}
	s.Offsets, err = t.U64s(1)
	return s, err
}

// checkSegments refuses segments outside the file and references to
// segments that do not exist.
func (p *Program) checkSegments() error {
	if !p.Header.Extended {
		// Without an extended header nothing locates segment data: only
		// empty segments (writers emit one for an empty constant flatbuf.Table)
		// can be read.
		p.Header.SegmentBaseOffset = uint64(len(p.file))
		for i, s := range p.Segments {
			if s.Size > 0 {
				return fmt.Errorf("segment %d holds %d bytes but the program has no extended header to locate it", i, s.Size)
			}
		}
	}
	avail := uint64(len(p.file)) - p.Header.SegmentBaseOffset
	for i, s := range p.Segments {
		if s.Offset > avail || s.Size > avail-s.Offset {
			return fmt.Errorf("segment %d (offset %d, %d bytes) beyond the file's %d bytes of segment data", i, s.Offset, s.Size, avail)
		}
	}
	seg := func(what string, i uint32) error {
		if int(i) >= len(p.Segments) {
			return fmt.Errorf("%s refers to segment %d of %d", what, i, len(p.Segments))
		}
		return nil
	}
	if c := p.ConstantSegment; c != nil && len(c.Offsets) > 0 {
		if err := seg("constant segment", c.SegmentIndex); err != nil {
			return err
		}
		if len(p.ConstantBuffer) > 0 {
			return fmt.Errorf("program has both a constant buffer and a constant segment")
		}
	}
	for _, m := range p.MutableSegments {
		if err := seg("mutable data", m.SegmentIndex); err != nil {
			return err
		}
	}
	for _, n := range p.NamedData {
		if err := seg("named data "+n.Key, n.SegmentIndex); err != nil {
			return err
		}
	}
	for _, pl := range p.Plans {
		for i, d := range pl.Delegates {
			if d.InSegment {
				if err := seg(fmt.Sprintf("method %s delegate %d (%s)", pl.Name, i, d.ID), d.Index); err != nil {
					return err
				}
			} else if int(d.Index) >= len(p.DelegateData) {
				return fmt.Errorf("method %s delegate %d (%s) refers to inline data %d of %d", pl.Name, i, d.ID, d.Index, len(p.DelegateData))
			}
		}
	}
	return nil
}

// SegmentData returns segment i's bytes.
func (p *Program) SegmentData(i uint32) ([]byte, error) {
	if int(i) >= len(p.Segments) {
		return nil, fmt.Errorf("executorch: segment %d of %d", i, len(p.Segments))
	}
	s := p.Segments[i]
	lo := p.Header.SegmentBaseOffset + s.Offset
	return p.file[lo : lo+s.Size : lo+s.Size], nil
}

// DelegateBlob returns the processed blob of a delegate.
func (p *Program) DelegateBlob(d Delegate) ([]byte, error) {
	if d.InSegment {
		return p.SegmentData(d.Index)
	}
	if int(d.Index) >= len(p.DelegateData) {
		return nil, fmt.Errorf("executorch: delegate data %d of %d", d.Index, len(p.DelegateData))
	}
	return p.DelegateData[d.Index], nil
}

// Plan returns the method named name ("" is "forward", or the only
// method).
func (p *Program) Plan(name string) (*Plan, error) {
	if name == "" {
		if len(p.Plans) == 1 {
			return p.Plans[0], nil
		}
		name = "forward"
	}
	for _, pl := range p.Plans {
		if pl.Name == name {
			return pl, nil
		}
	}
	names := make([]string, len(p.Plans))
	for i, pl := range p.Plans {
		names[i] = pl.Name
	}
	return nil, fmt.Errorf("executorch: no method %q (methods: %v)", name, names)
}

func parsePlan(t flatbuf.Table) (*Plan, error) {
	pl := &Plan{}
	var err error
	if pl.Name, err = t.Str(0); err != nil {
		return nil, err
	}
	if pl.Values, err = flatbuf.Decode(t, 2, "value", parseValue); err != nil {
		return nil, err
	}
	if pl.Inputs, err = t.I32s(3); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	if pl.Outputs, err = t.I32s(4); err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	if pl.Chains, err = flatbuf.Decode(t, 5, "chain", parseChain); err != nil {
		return nil, err
	}
	if pl.Operators, err = flatbuf.Decode(t, 6, "operator", parseOperator); err != nil {
		return nil, err
	}
	if pl.Delegates, err = flatbuf.Decode(t, 7, "delegate", parseDelegate); err != nil {
		return nil, err
	}
	if pl.NonConstBufferSizes, err = t.I64s(8); err != nil {
		return nil, fmt.Errorf("buffer sizes: %w", err)
	}
	return pl, pl.check()
}

// check verifies every value index the plan uses.
func (pl *Plan) check() error {
	n := int32(len(pl.Values))
	idx := func(what string, v int32) error {
		if v < 0 || v >= n {
			return fmt.Errorf("%s refers to value %d of %d", what, v, n)
		}
		return nil
	}
	for _, v := range pl.Inputs {
		if err := idx("input", v); err != nil {
			return err
		}
	}
	for _, v := range pl.Outputs {
		if err := idx("output", v); err != nil {
			return err
		}
	}
	for i, v := range pl.Values {
		for _, it := range v.Items {
			if it == -1 && v.Kind == KindOptionalTensorList {
				continue
			}
			if err := idx(fmt.Sprintf("%s value %d", v.Kind, i), it); err != nil {
				return err
			}
			if pl.Values[it].Kind != KindTensor && !(v.Kind == KindOptionalTensorList && pl.Values[it].Kind == KindNull) {
				return fmt.Errorf("%s value %d holds value %d, a %s", v.Kind, i, it, pl.Values[it].Kind)
			}
		}
	}
	for c, ch := range pl.Chains {
		for i, in := range ch.Instructions {
			what := fmt.Sprintf("chain %d instruction %d (%s)", c, i, in.Kind)
			switch in.Kind {
			case InstrKernel:
				if in.Index < 0 || int(in.Index) >= len(pl.Operators) {
					return fmt.Errorf("%s calls operator %d of %d", what, in.Index, len(pl.Operators))
				}
			case InstrDelegate:
				if in.Index < 0 || int(in.Index) >= len(pl.Delegates) {
					return fmt.Errorf("%s calls delegate %d of %d", what, in.Index, len(pl.Delegates))
				}
			case InstrMove:
				if err := idx(what, in.A); err != nil {
					return err
				}
				if err := idx(what, in.B); err != nil {
					return err
				}
			case InstrJumpFalse:
				if err := idx(what, in.A); err != nil {
					return err
				}
				if in.B < 0 || int(in.B) > len(ch.Instructions) {
					return fmt.Errorf("%s jumps to %d of %d", what, in.B, len(ch.Instructions))
				}
			case InstrFree:
				if err := idx(what, in.A); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%s: unknown instruction type", what)
			}
			for _, a := range in.Args {
				if err := idx(what, a); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func parseValue(t flatbuf.Table) (Value, error) {
	var v Value
	k, err := t.U8(0, 0)
	if err != nil {
		return v, err
	}
	v.Kind = Kind(k)
	if v.Kind == KindNone || v.Kind == KindNull {
		return v, nil
	}
	if v.Kind > KindOptionalTensorList {
		return v, fmt.Errorf("unknown value type %d", k)
	}
	s, ok, err := t.Sub(1, "value")
	if err != nil {
		return v, err
	}
	if !ok {
		return v, fmt.Errorf("%s value without its table", v.Kind)
	}
	switch v.Kind {
	case KindInt:
		v.Int, err = s.I64(0, 0)
	case KindBool:
		v.Bool, err = s.Bool(0, false)
	case KindDouble:
		v.Double, err = s.F64(0, 0)
	case KindString:
		v.Str, err = s.Str(0)
	case KindIntList:
		v.Ints, err = s.I64s(0)
	case KindDoubleList:
		v.Doubles, err = s.F64s(0)
	case KindBoolList:
		v.Bools, err = s.Bools(0)
	case KindTensorList, KindOptionalTensorList:
		v.Items, err = s.I32s(0)
	case KindTensor:
		v.Tensor, err = parseTensor(s)
	}
	return v, err
}

func parseTensor(t flatbuf.Table) (*Tensor, error) {
	tn := &Tensor{}
	st, err := t.U8(0, 0)
	if err != nil {
		return nil, err
	}
	tn.ScalarType = ScalarType(int8(st))
	if tn.StorageOffset, err = t.I32(1, 0); err != nil {
		return nil, err
	}
	if tn.Sizes, err = t.I32s(2); err != nil {
		return nil, err
	}
	if tn.DimOrder, err = t.Bytes(3); err != nil {
		return nil, err
	}
	if tn.RequiresGrad, err = t.Bool(4, false); err != nil {
		return nil, err
	}
	if tn.DataBufferIdx, err = t.U32(5, 0); err != nil {
		return nil, err
	}
	if a, ok, err := t.Sub(6, "allocation info"); err != nil {
		return nil, err
	} else if ok {
		id, err1 := a.U32(0, 0)
		lo, err2 := a.U32(1, 0)
		hi, err3 := a.U32(2, 0)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("allocation info malformed")
		}
		tn.Alloc = &Allocation{MemoryID: id, Offset: uint64(hi)<<32 | uint64(lo)}
	}
	l, err := t.U8(7, 0)
	if err != nil {
		return nil, err
	}
	tn.Layout = int8(l)
	d, err := t.U8(8, 0)
	if err != nil {
		return nil, err
	}
	tn.Dynamism = Dynamism(d)
	if e, ok, err := t.Sub(9, "extra tensor info"); err != nil {
		return nil, err
	} else if ok {
		x := &ExtraTensorInfo{}
		var loc uint8
		if x.MutableDataSegmentsIdx, err = e.U64(0, 0); err == nil {
			if x.FullyQualifiedName, err = e.Str(1); err == nil {
				loc, err = e.U8(2, 0)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("extra tensor info: %w", err)
		}
		x.External = loc == 1
		tn.Extra = x
	}
	for _, s := range tn.Sizes {
		if s < 0 {
			return nil, fmt.Errorf("tensor size %d negative", s)
		}
	}
	if len(tn.DimOrder) != 0 && len(tn.DimOrder) != len(tn.Sizes) {
		return nil, fmt.Errorf("dim order of %d entries for %d dims", len(tn.DimOrder), len(tn.Sizes))
	}
	// a bitmask of 256 bits: dim order entries are bytes (a uint64 mask
	// let a repeated index >= 64 through)
	var seen [4]uint64
	for i, d := range tn.DimOrder {
		if int(d) >= len(tn.Sizes) || seen[d/64]&(1<<(d%64)) != 0 {
			return nil, fmt.Errorf("dim order of %d dims is not a permutation: entry %d is %d", len(tn.DimOrder), i, d)
		}
		seen[d/64] |= 1 << (d % 64)
	}
	return tn, nil
}

func parseChain(t flatbuf.Table) (Chain, error) {
	var c Chain
	var err error
	if c.Inputs, err = t.I32s(0); err != nil {
		return c, err
	}
	if c.Outputs, err = t.I32s(1); err != nil {
		return c, err
	}
	c.Instructions, err = flatbuf.Decode(t, 2, "instruction", parseInstruction)
	return c, err
}

func parseInstruction(t flatbuf.Table) (Instruction, error) {
	var in Instruction
	k, err := t.U8(0, 0)
	if err != nil {
		return in, err
	}
	in.Kind = InstrKind(k)
	if in.Kind < InstrKernel || in.Kind > InstrFree {
		return in, fmt.Errorf("unknown instruction type %d", k)
	}
	s, ok, err := t.Sub(1, "instruction")
	if err != nil {
		return in, err
	}
	if !ok {
		return in, fmt.Errorf("%s instruction without its table", in.Kind)
	}
	switch in.Kind {
	case InstrKernel, InstrDelegate:
		if in.Index, err = s.I32(0, 0); err == nil {
			in.Args, err = s.I32s(1)
		}
	case InstrMove, InstrJumpFalse:
		if in.A, err = s.I32(0, 0); err == nil {
			in.B, err = s.I32(1, 0)
		}
	case InstrFree:
		in.A, err = s.I32(0, 0)
	}
	return in, err
}

func parseDelegate(t flatbuf.Table) (Delegate, error) {
	var d Delegate
	var err error
	if d.ID, err = t.Str(0); err != nil {
		return d, err
	}
	r, ok, err := t.Sub(1, "backend delegate data reference")
	if err != nil {
		return d, err
	}
	if !ok {
		return d, fmt.Errorf("delegate %q has no processed data reference", d.ID)
	}
	loc, err := r.U8(0, 0)
	if err != nil {
		return d, err
	}
	if loc > 1 {
		return d, fmt.Errorf("delegate %q: unknown data location %d", d.ID, loc)
	}
	d.InSegment = loc == 1
	if d.Index, err = r.U32(1, 0); err != nil {
		return d, err
	}
	d.CompileSpecs, err = flatbuf.Decode(t, 2, "compile spec", parseCompileSpec)
	return d, err
}

// ScalarType is an ExecuTorch (c10) scalar type.
type ScalarType int8

// Scalar types (c10 numbering).
const (
	TypeByte     ScalarType = 0
	TypeChar     ScalarType = 1
	TypeShort    ScalarType = 2
	TypeInt      ScalarType = 3
	TypeLong     ScalarType = 4
	TypeHalf     ScalarType = 5
	TypeFloat    ScalarType = 6
	TypeDouble   ScalarType = 7
	TypeBool     ScalarType = 11
	TypeQInt8    ScalarType = 12
	TypeQUInt8   ScalarType = 13
	TypeQInt32   ScalarType = 14
	TypeBFloat16 ScalarType = 15
	TypeUInt16   ScalarType = 27
	TypeUInt32   ScalarType = 28
	TypeUInt64   ScalarType = 29
)

// quantNames names the scalar types the IR cannot hold (the others are
// named as the element type that holds them).
var quantNames = map[ScalarType]string{
	TypeQInt8: "qint8", TypeQUInt8: "quint8", TypeQInt32: "qint32", 16: "quint4x2", 17: "quint2x4",
}

func (s ScalarType) String() string {
	if dt := s.heldDType(); dt != graph.Undefined {
		return dt.String()
	}
	if n, ok := quantNames[s]; ok {
		return n
	}
	return fmt.Sprintf("scalar_type(%d)", int8(s))
}

// numel is the tensor's element count, refusing overflow.
func (t *Tensor) numel() (int64, error) {
	n := int64(1)
	for _, s := range t.Sizes {
		if s != 0 && n > math.MaxInt64/int64(s) {
			return 0, fmt.Errorf("tensor sizes %v overflow", t.Sizes)
		}
		n *= int64(s)
	}
	return n, nil
}
