// Package flatbuf reads flatbuffers that may be hostile: the one table
// and vector reader of the .tflite and .pte (ExecuTorch) importers.
//
// The flatbuffers runtime (github.com/google/flatbuffers/go) trusts its
// input and indexes out of range on a malformed file; this package checks
// every offset and length against the buffer before the runtime decodes
// the bytes there, so a hostile file yields an error, never a panic or an
// allocation sized by an unchecked count. What decoding allocates is
// charged to the file's fbguard.Budget, so offsets that point many times
// at one large table or vector cannot decode a small file into a large
// one.
package flatbuf

import (
	"errors"
	"fmt"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// Table is a checked view of one flatbuffer table: the table and its
// vtable lie inside the buffer. Fields are numbered as in the schema
// (a union counts two: its type, then its value). The zero Table has no
// fields.
type Table struct {
	b      []byte
	g      *fbguard.Budget
	pos    uint32 // start of the table
	vt     uint32 // start of its vtable
	vtLen  uint32 // vtable length in bytes
	objLen uint32 // table length in bytes
	short  bool   // Options.ShortTables
}

// Options say how strictly a format's tables are read.
type Options struct {
	// ShortTables accepts a table whose recorded size ends inside its
	// last field: a field then has to start inside its table and end
	// inside the buffer. ExecuTorch's writer records such sizes (an
	// 8-byte field at offset 4 of a table of 8 bytes); without it, every
	// field's bytes lie inside its table's recorded size, as the
	// .tflite writers make them.
	ShortTables bool
}

// tableCost is what the budget charges for opening a table: the view
// and, roughly, the decoded struct a reader builds from it.
const tableCost = int(unsafe.Sizeof(Table{})) + 16

// maxPos is the largest position a flatbuffer offset can reach.
const maxPos = 1<<32 - 1

func fits(b []byte, off, n uint64) bool { return off <= uint64(len(b)) && n <= uint64(len(b))-off }

// errf is the error of every malformed-structure check, prefixed with
// the format the budget names.
func errf(g *fbguard.Budget, format string, args ...any) error {
	msg := fmt.Sprintf("malformed flatbuffer: "+format, args...)
	if w := g.What(); w != "" {
		msg = w + ": " + msg
	}
	return errors.New(msg)
}

// Root opens the root table of the flatbuffer b with the allocation
// budget of a file of len(b) bytes; what names the format in errors
// ("tflite", "executorch program").
func Root(what string, b []byte, o Options) (Table, error) {
	g := fbguard.New(what, len(b))
	if len(b) < 8 {
		return Table{}, errf(g, "buffer of %d bytes is too short", len(b))
	}
	return Table{b: b, g: g, short: o.ShortTables}.tableAt(uint64(flatbuffers.GetUOffsetT(b)), "root")
}

// tableAt opens the table whose start is pos in the buffer of t; what
// names it in errors.
func (t Table) tableAt(pos uint64, what string) (Table, error) {
	b, g := t.b, t.g
	if pos%4 != 0 || pos > maxPos || !fits(b, pos, 4) {
		return Table{}, errf(g, "%s table at %d is outside the %d-byte buffer", what, pos, len(b))
	}
	vt := int64(pos) - int64(flatbuffers.GetSOffsetT(b[pos:]))
	if vt < 0 || vt%2 != 0 || !fits(b, uint64(vt), 4) {
		return Table{}, errf(g, "%s table at %d has its vtable outside the buffer", what, pos)
	}
	vtLen := uint32(flatbuffers.GetVOffsetT(b[vt:]))
	objLen := uint32(flatbuffers.GetVOffsetT(b[vt+2:]))
	if vtLen < 4 || vtLen%2 != 0 || !fits(b, uint64(vt), uint64(vtLen)) {
		return Table{}, errf(g, "%s table at %d has a bad vtable length %d", what, pos, vtLen)
	}
	if objLen < 4 || !fits(b, pos, uint64(objLen)) {
		return Table{}, errf(g, "%s table at %d has a bad object length %d", what, pos, objLen)
	}
	if err := g.Take(1, tableCost); err != nil {
		return Table{}, err
	}
	return Table{b: b, g: g, pos: uint32(pos), vt: uint32(vt), vtLen: vtLen, objLen: objLen, short: t.short}, nil
}

// Fields returns how many field slots the table's vtable has: a writer
// of an older schema writes fewer.
func (t Table) Fields() int {
	if t.vtLen < 4 {
		return 0
	}
	return int(t.vtLen-4) / 2
}

// Take charges n elements of elem bytes to the budget of the file the
// table is in: what a reader allocates from the table beyond the
// accessors here (a copy of its bytes, say).
func (t Table) Take(n, elem int) error { return t.g.Take(n, elem) }

// field returns the offset of field i from the table's start when the
// field is present, 0 when absent; size bytes must fit inside the table
// (with ShortTables: start inside it and end inside the buffer).
func (t Table) field(i int, size uint32) (uint32, error) {
	if i < 0 {
		return 0, nil
	}
	slot := uint64(4 + 2*i)
	if slot+2 > uint64(t.vtLen) {
		return 0, nil
	}
	o := uint32(flatbuffers.GetVOffsetT(t.b[t.vt+uint32(slot):]))
	if o == 0 {
		return 0, nil
	}
	end := uint64(o) + uint64(size)
	if o < 4 || (!t.short && end > uint64(t.objLen)) || (t.short && (o > t.objLen || !fits(t.b, uint64(t.pos), end))) {
		return 0, errf(t.g, "field %d (%d bytes at %d) of the %d-byte table at %d lies outside it", i, size, o, t.objLen, t.pos)
	}
	return o, nil
}

// scalar reads the size-byte scalar in field i with get, def when absent.
func scalar[T any](t Table, i int, size uint32, def T, get func([]byte) T) (T, error) {
	o, err := t.field(i, size)
	if o == 0 || err != nil {
		return def, err
	}
	return get(t.b[t.pos+o:]), nil
}

// U8 returns field i as a uint8, def when absent.
func (t Table) U8(i int, def uint8) (uint8, error) {
	return scalar(t, i, 1, def, flatbuffers.GetUint8)
}

// Bool returns field i as a bool, def when absent.
func (t Table) Bool(i int, def bool) (bool, error) {
	return scalar(t, i, 1, def, flatbuffers.GetBool)
}

// I32 returns field i as an int32, def when absent.
func (t Table) I32(i int, def int32) (int32, error) {
	return scalar(t, i, 4, def, flatbuffers.GetInt32)
}

// U32 returns field i as a uint32, def when absent.
func (t Table) U32(i int, def uint32) (uint32, error) {
	return scalar(t, i, 4, def, flatbuffers.GetUint32)
}

// I64 returns field i as an int64, def when absent.
func (t Table) I64(i int, def int64) (int64, error) {
	return scalar(t, i, 8, def, flatbuffers.GetInt64)
}

// U64 returns field i as a uint64, def when absent.
func (t Table) U64(i int, def uint64) (uint64, error) {
	return scalar(t, i, 8, def, flatbuffers.GetUint64)
}

// F32 returns field i as a float32, def when absent.
func (t Table) F32(i int, def float32) (float32, error) {
	return scalar(t, i, 4, def, flatbuffers.GetFloat32)
}

// F64 returns field i as a float64, def when absent.
func (t Table) F64(i int, def float64) (float64, error) {
	return scalar(t, i, 8, def, flatbuffers.GetFloat64)
}

// ref follows the offset stored in field i; ok is false when the field is
// absent.
func (t Table) ref(i int) (pos uint64, ok bool, err error) {
	o, err := t.field(i, 4)
	if o == 0 || err != nil {
		return 0, false, err
	}
	at := uint64(t.pos) + uint64(o)
	target := at + uint64(flatbuffers.GetUOffsetT(t.b[at:]))
	if target >= uint64(len(t.b)) || target > maxPos {
		return 0, false, errf(t.g, "field %d of the table at %d points outside the buffer", i, t.pos)
	}
	return target, true, nil
}

// Sub opens the table stored in field i; ok is false when absent. what
// names the table in errors.
func (t Table) Sub(i int, what string) (Table, bool, error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return Table{}, false, err
	}
	s, err := t.tableAt(p, what)
	return s, err == nil, err
}

// vec locates the vector in field i with elements of elem bytes: the
// position of its first element and its length, both checked against the
// buffer, so a hostile count is refused before anything is allocated.
func (t Table) vec(i int, elem uint32) (start uint32, n int, err error) {
	p, ok, err := t.ref(i)
	if !ok || err != nil {
		return 0, 0, err
	}
	if !fits(t.b, p, 4) {
		return 0, 0, errf(t.g, "vector at %d is outside the buffer", p)
	}
	l := uint64(flatbuffers.GetUOffsetT(t.b[p:]))
	if !fits(t.b, p+4, l*uint64(elem)) {
		return 0, 0, errf(t.g, "vector at %d of %d elements of %d bytes overruns the %d-byte buffer", p, l, elem, len(t.b))
	}
	return uint32(p + 4), int(l), nil
}

// Bytes returns the byte vector in field i: a view of the buffer, not a
// copy (nil when absent or empty).
func (t Table) Bytes(i int) ([]byte, error) {
	s, n, err := t.vec(i, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	e := s + uint32(n)
	return t.b[s:e:e], nil
}

// Str returns the string in field i ("" when absent).
func (t Table) Str(i int) (string, error) {
	b, err := t.Bytes(i)
	if err == nil {
		err = t.g.Take(len(b), 1)
	}
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// vector decodes the vector in field i, whose elements are size bytes
// each, with get; what it allocates is charged to the budget.
func vector[T any](t Table, i int, size uint32, get func([]byte) T) ([]T, error) {
	s, n, err := t.vec(i, size)
	if err != nil || n == 0 {
		return nil, err
	}
	var zero T
	if err := t.g.Take(n, int(unsafe.Sizeof(zero))); err != nil {
		return nil, err
	}
	out := make([]T, n)
	for k := range out {
		out[k] = get(t.b[s+uint32(k)*size:])
	}
	return out, nil
}

// I32s returns the int32 vector in field i (nil when absent or empty).
func (t Table) I32s(i int) ([]int32, error) { return vector(t, i, 4, flatbuffers.GetInt32) }

// I64s returns the int64 vector in field i.
func (t Table) I64s(i int) ([]int64, error) { return vector(t, i, 8, flatbuffers.GetInt64) }

// U64s returns the uint64 vector in field i.
func (t Table) U64s(i int) ([]uint64, error) { return vector(t, i, 8, flatbuffers.GetUint64) }

// F32s returns the float32 vector in field i.
func (t Table) F32s(i int) ([]float32, error) { return vector(t, i, 4, flatbuffers.GetFloat32) }

// F64s returns the float64 vector in field i.
func (t Table) F64s(i int) ([]float64, error) { return vector(t, i, 8, flatbuffers.GetFloat64) }

// Bools returns the bool vector in field i.
func (t Table) Bools(i int) ([]bool, error) { return vector(t, i, 1, flatbuffers.GetBool) }

// Ints32 returns the integer vector in field i widened to int32; width
// is its element size: 4 (int32), 2 (uint16) or 1 (uint8).
func (t Table) Ints32(i int, width int) ([]int32, error) {
	switch width {
	case 4:
		return t.I32s(i)
	case 2:
		return vector(t, i, 2, func(b []byte) int32 { return int32(flatbuffers.GetUint16(b)) })
	case 1:
		return vector(t, i, 1, func(b []byte) int32 { return int32(b[0]) })
	}
	return nil, fmt.Errorf("flatbuf: integer width %d (4, 2 or 1)", width)
}

// Tables opens every table of the vector of tables in field i; what
// names its elements in errors.
func (t Table) Tables(i int, what string) ([]Table, error) {
	s, n, err := t.vec(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.g.Take(n, int(unsafe.Sizeof(Table{}))); err != nil {
		return nil, err
	}
	out := make([]Table, n)
	for k := range out {
		at := uint64(s) + 4*uint64(k)
		p := at + uint64(flatbuffers.GetUOffsetT(t.b[at:]))
		if out[k], err = t.tableAt(p, what); err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, k, err)
		}
	}
	return out, nil
}

// Decode opens the vector of tables in field i and decodes each with
// parse; what names an element in errors ("operator 3: ..."). It returns
// nil for an absent or empty vector.
func Decode[T any](t Table, i int, what string, parse func(Table) (T, error)) ([]T, error) {
	tabs, err := t.Tables(i, what)
	if err != nil || len(tabs) == 0 {
		return nil, err
	}
	out := make([]T, len(tabs))
	for k, tab := range tabs {
		if out[k], err = parse(tab); err != nil {
			return nil, fmt.Errorf("%s %d: %w", what, k, err)
		}
	}
	return out, nil
}
