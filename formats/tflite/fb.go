package tflite

import (
	"fmt"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// table is a bounds-checked view of one flatbuffer table. Every access
// checks its offsets against the buffer before reading, so a hostile file
// yields an error, never a panic or an out-of-range allocation. The
// flatbuffers runtime does the little-endian decoding.
type table struct {
	b      []byte
	pos    uint32 // start of the table
	vt     uint32 // start of its vtable
	vtLen  uint32 // vtable length in bytes
	objLen uint32 // table length in bytes
	// g bounds what decoding the file allocates: offsets that point many
	// times at one table or vector would otherwise decode it each time.
	g *fbguard.Budget
}

// tableCost is what the budget charges for opening a table: the view
// and, roughly, the decoded struct a reader builds from it.
const tableCost = int(unsafe.Sizeof(table{})) + 16

// errf is the error every malformed-structure check returns.
func errf(format string, args ...any) error {
	return fmt.Errorf("tflite: malformed flatbuffer: "+format, args...)
}

func fits(b []byte, off, n uint64) bool { return off <= uint64(len(b)) && n <= uint64(len(b))-off }

// tableAt opens the table whose start is pos.
func tableAt(b []byte, g *fbguard.Budget, pos uint32, what string) (table, error) {
	if !fits(b, uint64(pos), 4) {
		return table{}, errf("%s table at %d is outside the %d-byte buffer", what, pos, len(b))
	}
	vt := int64(pos) - int64(flatbuffers.GetSOffsetT(b[pos:]))
	if vt < 0 || !fits(b, uint64(vt), 4) {
		return table{}, errf("%s table at %d has its vtable outside the buffer", what, pos)
	}
	vtLen := uint32(flatbuffers.GetVOffsetT(b[vt:]))
	objLen := uint32(flatbuffers.GetVOffsetT(b[vt+2:]))
	if vtLen < 4 || vtLen%2 != 0 || !fits(b, uint64(vt), uint64(vtLen)) {
		return table{}, errf("%s table at %d has a bad vtable length %d", what, pos, vtLen)
	}
	if objLen < 4 || !fits(b, uint64(pos), uint64(objLen)) {
		return table{}, errf("%s table at %d has a bad object length %d", what, pos, objLen)
	}
	if err := g.Take(1, tableCost); err != nil {
		return table{}, err
	}
	return table{b: b, pos: pos, vt: uint32(vt), vtLen: vtLen, objLen: objLen, g: g}, nil
}

// root opens the root table of a flatbuffer.
func root(b []byte) (table, error) {
	if len(b) < 8 {
		return table{}, errf("file of %d bytes is too short", len(b))
	}
	return tableAt(b, fbguard.New("tflite", len(b)), uint32(flatbuffers.GetUOffsetT(b)), "root")
}

// field returns the offset of field i (from the table start) when present
// and size bytes fit inside the table, else 0.
func (t table) field(i int, size uint32) (uint32, error) {
	slot := uint32(4 + 2*i)
	if slot+2 > t.vtLen {
		return 0, nil
	}
	o := uint32(flatbuffers.GetVOffsetT(t.b[t.vt+slot:]))
	if o == 0 {
		return 0, nil
	}
	if o < 4 || uint64(o)+uint64(size) > uint64(t.objLen) {
		return 0, errf("field %d of the table at %d lies outside it", i, t.pos)
	}
	return o, nil
}

func (t table) u8(i int, def uint8) (uint8, error) {
	o, err := t.field(i, 1)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetUint8(t.b[t.pos+o:]), nil
}

func (t table) boolean(i int, def bool) (bool, error) {
	o, err := t.field(i, 1)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetBool(t.b[t.pos+o:]), nil
}

func (t table) i32(i int, def int32) (int32, error) {
	o, err := t.field(i, 4)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetInt32(t.b[t.pos+o:]), nil
}

func (t table) u32(i int, def uint32) (uint32, error) {
	o, err := t.field(i, 4)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetUint32(t.b[t.pos+o:]), nil
}

func (t table) u64(i int, def uint64) (uint64, error) {
	o, err := t.field(i, 8)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetUint64(t.b[t.pos+o:]), nil
}

func (t table) f32(i int, def float32) (float32, error) {
	o, err := t.field(i, 4)
	if o == 0 || err != nil {
		return def, err
	}
	return flatbuffers.GetFloat32(t.b[t.pos+o:]), nil
}

// ref follows the offset stored in field i; ok is false when the field is
// absent.
func (t table) ref(i int) (pos uint32, ok bool, err error) {
	o, err := t.field(i, 4)
	if o == 0 || err != nil {
		return 0, false, err
	}
	at := uint64(t.pos) + uint64(o)
	target := at + uint64(flatbuffers.GetUOffsetT(t.b[at:]))
	if target > uint64(len(t.b)) || target > 1<<32-1 {
		return 0, false, errf("field %d of the table at %d points outside the buffer", i, t.pos)
	}
	return uint32(target), true, nil
}

// sub opens the table stored in field i; ok is false when absent.
func (t table) sub(i int, what string) (table, bool, error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return table{}, false, err
	}
	s, err := tableAt(t.b, t.g, p, what)
	return s, err == nil, err
}

// vec locates the vector in field i with elements of elem bytes: the
// position of its first element and its length, both checked against the
// buffer.
func (t table) vec(i int, elem uint32) (start uint32, n int, err error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return 0, 0, err
	}
	if !fits(t.b, uint64(p), 4) {
		return 0, 0, errf("vector at %d is outside the buffer", p)
	}
	l := uint64(flatbuffers.GetUOffsetT(t.b[p:]))
	if !fits(t.b, uint64(p)+4, l*uint64(elem)) {
		return 0, 0, errf("vector at %d of %d elements of %d bytes overruns the %d-byte buffer", p, l, elem, len(t.b))
	}
	return p + 4, int(l), nil
}

func (t table) bytes(i int) ([]byte, error) {
	s, n, err := t.vec(i, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	return t.b[s : s+uint32(n)], nil
}

func (t table) str(i int) (string, error) {
	b, err := t.bytes(i)
	if err == nil {
		err = t.g.Take(len(b), 1)
	}
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func (t table) i32s(i int) ([]int32, error) {
	s, n, err := t.vec(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.g.Take(n, 4); err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for k := range out {
		out[k] = flatbuffers.GetInt32(t.b[s+uint32(4*k):])
	}
	return out, nil
}

func (t table) i64s(i int) ([]int64, error) {
	s, n, err := t.vec(i, 8)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.g.Take(n, 8); err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for k := range out {
		out[k] = flatbuffers.GetInt64(t.b[s+uint32(8*k):])
	}
	return out, nil
}

func (t table) f32s(i int) ([]float32, error) {
	s, n, err := t.vec(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.g.Take(n, 4); err != nil {
		return nil, err
	}
	out := make([]float32, n)
	for k := range out {
		out[k] = flatbuffers.GetFloat32(t.b[s+uint32(4*k):])
	}
	return out, nil
}

// tables opens every table of the vector of tables in field i.
func (t table) tables(i int, what string) ([]table, error) {
	s, n, err := t.vec(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.g.Take(n, int(unsafe.Sizeof(table{}))); err != nil {
		return nil, err
	}
	out := make([]table, n)
	for k := range out {
		at := s + uint32(4*k)
		p := uint64(at) + uint64(flatbuffers.GetUOffsetT(t.b[at:]))
		if p > 1<<32-1 {
			return nil, errf("%s %d points outside the buffer", what, k)
		}
		if out[k], err = tableAt(t.b, t.g, uint32(p), what); err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, k, err)
		}
	}
	return out, nil
}
