package executorch

import (
	"encoding/binary"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/flatbuf"
)

// scalarDTypes maps each scalar type the IR can hold to its element
// type (Undefined: not held).
var scalarDTypes = [...]graph.DType{
	TypeByte: graph.Uint8, TypeChar: graph.Int8, TypeShort: graph.Int16, TypeInt: graph.Int32,
	TypeLong: graph.Int64, TypeHalf: graph.Float16, TypeFloat: graph.Float32, TypeDouble: graph.Float64,
	TypeBool: graph.Bool, TypeBFloat16: graph.BFloat16, TypeUInt16: graph.Uint16, TypeUInt32: graph.Uint32,
	TypeUInt64: graph.Uint64,
}

// heldDType is the element type holding s, Undefined when none does.
func (s ScalarType) heldDType() graph.DType {
	if s < 0 || int(s) >= len(scalarDTypes) {
		return graph.Undefined
	}
	return scalarDTypes[s]
}

// DType maps an ExecuTorch scalar type to the IR's element type.
func (s ScalarType) DType() (graph.DType, error) {
	if dt := s.heldDType(); dt != graph.Undefined {
		return dt, nil
	}
	return graph.Undefined, fmt.Errorf("executorch: scalar type %s not supported", s)
}

// shape returns the tensor's sizes as ints.
func (t *Tensor) shape() []int {
	s := make([]int, len(t.Sizes))
	for i, d := range t.Sizes {
		s[i] = int(d)
	}
	return s
}

// External is one blob of a .ptd file.
type External struct {
	Data []byte
	// Layout, when the file records it.
	ScalarType ScalarType
	Sizes      []int32
	HasLayout  bool
}

// ParsePTD reads the named blobs of an ExecuTorch data file (.ptd,
// identifier "FT01"). Both layouts seen in the wild are read: the
// current one (segments, then named_data entries that each name a
// segment) and the earlier one (a tensor alignment, then tensors that
// each name a segment and an offset in it).
func ParsePTD(data []byte) (map[string]External, error) {
	if len(data) < 48 || string(data[4:8]) != "FT01" || string(data[8:12]) != "FH01" {
		return nil, fmt.Errorf("executorch: not a .ptd file (no FT01/FH01 identifiers)")
	}
	n := uint64(binary.LittleEndian.Uint32(data[12:16]))
	if n < 40 || 8+n > uint64(len(data)) {
		return nil, fmt.Errorf("executorch: .ptd header length %d out of range", n)
	}
	fbOff := binary.LittleEndian.Uint64(data[16:24])
	fbSize := binary.LittleEndian.Uint64(data[24:32])
	base := binary.LittleEndian.Uint64(data[32:40])
	segSize := binary.LittleEndian.Uint64(data[40:48])
	size := uint64(len(data))
	if fbOff > size || fbSize > size-fbOff || base > size || segSize > size-base {
		return nil, fmt.Errorf("executorch: .ptd header offsets beyond the file's %d bytes", size)
	}
	root, err := flatbuf.Root("executorch data file", data[:fbOff+fbSize], flatbuf.Options{ShortTables: true})
	if err != nil {
		return nil, fmt.Errorf("executorch: .ptd: %w", err)
	}
	legacy := root.Fields() == 4 // version, tensor_alignment, tensors, segments
	segField, entField := 1, 2
	if legacy {
		segField, entField = 3, 2
	}
	segs, err := flatbuf.Decode(root, segField, "segment", parseSegment)
	if err != nil {
		return nil, fmt.Errorf("executorch: .ptd: %w", err)
	}
	for i, s := range segs {
		if s.Offset > segSize || s.Size > segSize-s.Offset {
			return nil, fmt.Errorf("executorch: .ptd segment %d beyond the data", i)
		}
	}
	ents, err := root.Tables(entField, "entry")
	if err != nil {
		return nil, fmt.Errorf("executorch: .ptd entries: %w", err)
	}
	out := map[string]External{}
	for i, e := range ents {
		var key string
		var x External
		var seg uint32
		var off uint64
		var err error
		if legacy {
			var st uint8
			if key, err = e.Str(0); err == nil {
				if st, err = e.U8(1, 0); err == nil {
					if x.Sizes, err = e.I32s(2); err == nil {
						if seg, err = e.U32(4, 0); err == nil {
							off, err = e.U64(5, 0)
						}
					}
				}
			}
			x.ScalarType, x.HasLayout = ScalarType(int8(st)), true
		} else {
			if key, err = e.Str(0); err == nil {
				if seg, err = e.U32(1, 0); err == nil {
					if l, ok, e2 := e.Sub(2, "tensor layout"); e2 != nil {
						err = e2
					} else if ok {
						var st uint8
						if st, err = l.U8(0, 0); err == nil {
							x.Sizes, err = l.I32s(1)
						}
						x.ScalarType, x.HasLayout = ScalarType(int8(st)), true
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("executorch: .ptd entry %d: %w", i, err)
		}
		if int(seg) >= len(segs) {
			return nil, fmt.Errorf("executorch: .ptd entry %q refers to segment %d of %d", key, seg, len(segs))
		}
		s := segs[seg]
		if off > s.Size {
			return nil, fmt.Errorf("executorch: .ptd entry %q offset %d beyond its segment", key, off)
		}
		lo := base + s.Offset + off
		hi := base + s.Offset + s.Size
		x.Data = data[lo:hi:hi]
		out[key] = x
	}
	return out, nil
}

// constData returns the bytes a tensor value's data_buffer_idx (or its
// external name) points at; nil when the tensor has no data.
func (p *Program) constData(t *Tensor, ext map[string]External) ([]byte, error) {
	if t.Extra != nil && t.Extra.External {
		name := t.Extra.FullyQualifiedName
		x, ok := ext[name]
		if !ok {
			return nil, fmt.Errorf("tensor %q lives in an external data file (.ptd) that was not given or does not hold it", name)
		}
		return x.Data, nil
	}
	idx := t.DataBufferIdx
	if idx == 0 {
		return nil, nil
	}
	if t.Alloc != nil {
		si := uint64(0)
		if t.Extra != nil {
			si = t.Extra.MutableDataSegmentsIdx
		}
		if si >= uint64(len(p.MutableSegments)) {
			return nil, fmt.Errorf("mutable tensor's initial data in mutable segment table %d of %d", si, len(p.MutableSegments))
		}
		return p.subsegment(p.MutableSegments[si], idx)
	}
	if len(p.ConstantBuffer) > 0 {
		if int(idx) >= len(p.ConstantBuffer) {
			return nil, fmt.Errorf("constant buffer entry %d of %d", idx, len(p.ConstantBuffer))
		}
		return p.ConstantBuffer[idx], nil
	}
	if p.ConstantSegment == nil {
		return nil, fmt.Errorf("constant %d but the program has no constant data", idx)
	}
	return p.subsegment(*p.ConstantSegment, idx)
}

func (p *Program) subsegment(s SubsegmentOffsets, idx uint32) ([]byte, error) {
	if int(idx) >= len(s.Offsets) {
		return nil, fmt.Errorf("constant %d of %d in segment %d", idx, len(s.Offsets), s.SegmentIndex)
	}
	seg, err := p.SegmentData(s.SegmentIndex)
	if err != nil {
		return nil, err
	}
	off := s.Offsets[idx]
	if off > uint64(len(seg)) {
		return nil, fmt.Errorf("constant %d at offset %d beyond its segment of %d bytes", idx, off, len(seg))
	}
	return seg[off:], nil
}

// tensorFromBytes builds the IR tensor (logical, row-major) of a value
// whose data in memory follows its dim order.
func tensorFromBytes(t *Tensor, data []byte, limit int64) (*graph.Tensor, error) {
	dt, err := t.ScalarType.DType()
	if err != nil {
		return nil, err
	}
	if t.StorageOffset != 0 {
		return nil, fmt.Errorf("tensor storage offset %d not supported", t.StorageOffset)
	}
	shape := t.shape()
	n, err := graph.CheckAllocLimit(dt, shape, limit)
	if err != nil {
		return nil, err
	}
	need := uint64(n) * uint64(dt.Size())
	if uint64(len(data)) < need {
		return nil, fmt.Errorf("%v%v tensor needs %d bytes, its data has %d", dt, shape, need, len(data))
	}
	out, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	raw, _ := graph.RawBytes(out)
	if contiguous(t.DimOrder) {
		copy(raw, data[:need])
		return out, nil
	}
	// Physical dims are shape permuted by dim order; scatter each element
	// to its logical position.
	es := dt.Size()
	rank := len(shape)
	phys := make([]int, rank)
	for i, d := range t.DimOrder {
		phys[i] = shape[d]
	}
	lstride := make([]int, rank)
	s := 1
	for i := rank - 1; i >= 0; i-- {
		lstride[i] = s
		s *= shape[i]
	}
	idx := make([]int, rank)
	for k := 0; k < n; k++ {
		off := 0
		for i := 0; i < rank; i++ {
			off += idx[i] * lstride[t.DimOrder[i]]
		}
		copy(raw[off*es:(off+1)*es], data[k*es:(k+1)*es])
		for i := rank - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < phys[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out, nil
}
