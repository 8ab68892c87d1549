package executorch

import (
	"fmt"
	"unsafe"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// fbuf is a flatbuffer whose every offset is checked against its length
// before the flatbuffers runtime reads through it: the runtime itself
// trusts its input and would index out of range on a hostile file.
type fbuf struct {
	b []byte
	// g bounds what decoding the buffer allocates: offsets that point
	// many times at one table or vector would otherwise decode it each
	// time (nil: unbounded).
	g *fbguard.Budget
}

// guarded returns a flatbuffer over b with the allocation budget of a
// file of that size.
func guarded(what string, b []byte) fbuf { return fbuf{b: b, g: fbguard.New(what, len(b))} }

// tableCost is what the budget charges for opening a table: the view
// and, roughly, the decoded struct a reader builds from it.
const tableCost = int(unsafe.Sizeof(table{})) + 16

// table is a checked flatbuffer table: its vtable lies inside the buffer.
type table struct {
	f    fbuf
	t    flatbuffers.Table
	vlen uint32 // vtable length in bytes
}

func (f fbuf) u32at(pos uint64) (uint32, error) {
	if pos+4 > uint64(len(f.b)) {
		return 0, fmt.Errorf("offset %d beyond buffer of %d bytes", pos, len(f.b))
	}
	return flatbuffers.GetUint32(f.b[pos:]), nil
}

// root returns the root table.
func (f fbuf) root() (table, error) {
	off, err := f.u32at(0)
	if err != nil {
		return table{}, err
	}
	return f.tableAt(uint64(off))
}

// tableAt checks the table at pos and its vtable.
func (f fbuf) tableAt(pos uint64) (table, error) {
	if pos%4 != 0 || pos+4 > uint64(len(f.b)) {
		return table{}, fmt.Errorf("table offset %d outside buffer of %d bytes", pos, len(f.b))
	}
	so := int64(flatbuffers.GetInt32(f.b[pos:]))
	vt := int64(pos) - so
	if vt < 0 || vt+4 > int64(len(f.b)) || vt%2 != 0 {
		return table{}, fmt.Errorf("vtable of table at %d outside buffer", pos)
	}
	vlen := uint32(flatbuffers.GetUint16(f.b[vt:]))
	tlen := uint64(flatbuffers.GetUint16(f.b[vt+2:]))
	if vlen < 4 || vlen%2 != 0 || vt+int64(vlen) > int64(len(f.b)) || pos+tlen > uint64(len(f.b)) {
		return table{}, fmt.Errorf("vtable of table at %d malformed", pos)
	}
	if err := f.g.Take(1, tableCost); err != nil {
		return table{}, err
	}
	tb := table{f: f, t: flatbuffers.Table{Bytes: f.b, Pos: flatbuffers.UOffsetT(pos)}, vlen: vlen}
	// Every field must lie inside the table's declared size.
	for o := uint32(4); o < vlen; o += 2 {
		fo := uint64(flatbuffers.GetUint16(f.b[vt+int64(o):]))
		if fo != 0 && (fo < 4 || fo > tlen) {
			return table{}, fmt.Errorf("field at %d of table at %d outside it", fo, pos)
		}
	}
	return tb, nil
}

// field returns the absolute position of field i (its number in the
// schema, unions counting two) and whether it is present; size bytes must
// fit.
func (t table) field(i int, size int) (uint64, bool, error) {
	vo := uint32(4 + 2*i)
	if vo >= t.vlen {
		return 0, false, nil
	}
	o := t.t.Offset(flatbuffers.VOffsetT(vo))
	if o == 0 {
		return 0, false, nil
	}
	p := uint64(t.t.Pos) + uint64(o)
	if p+uint64(size) > uint64(len(t.f.b)) {
		return 0, false, fmt.Errorf("field %d beyond buffer", i)
	}
	return p, true, nil
}

func (t table) u8(i int) (uint8, error) {
	p, ok, err := t.field(i, 1)
	if !ok || err != nil {
		return 0, err
	}
	return t.f.b[p], nil
}

func (t table) boolean(i int) (bool, error) {
	v, err := t.u8(i)
	return v != 0, err
}

func (t table) u32(i int) (uint32, error) {
	p, ok, err := t.field(i, 4)
	if !ok || err != nil {
		return 0, err
	}
	return flatbuffers.GetUint32(t.f.b[p:]), nil
}

func (t table) i32(i int) (int32, error) {
	v, err := t.u32(i)
	return int32(v), err
}

func (t table) u64(i int) (uint64, error) {
	p, ok, err := t.field(i, 8)
	if !ok || err != nil {
		return 0, err
	}
	return flatbuffers.GetUint64(t.f.b[p:]), nil
}

func (t table) i64(i int) (int64, error) {
	v, err := t.u64(i)
	return int64(v), err
}

func (t table) f64(i int) (float64, error) {
	p, ok, err := t.field(i, 8)
	if !ok || err != nil {
		return 0, err
	}
	return flatbuffers.GetFloat64(t.f.b[p:]), nil
}

// indirect follows the uoffset stored in field i.
func (t table) indirect(i int) (uint64, bool, error) {
	p, ok, err := t.field(i, 4)
	if !ok || err != nil {
		return 0, ok, err
	}
	q := p + uint64(flatbuffers.GetUint32(t.f.b[p:]))
	if q >= uint64(len(t.f.b)) {
		return 0, false, fmt.Errorf("field %d points beyond buffer", i)
	}
	return q, true, nil
}

// sub returns the table in field i, ok false when absent.
func (t table) sub(i int) (table, bool, error) {
	q, ok, err := t.indirect(i)
	if !ok || err != nil {
		return table{}, false, err
	}
	s, err := t.f.tableAt(q)
	return s, err == nil, err
}

// vec returns the start and length of the vector in field i whose
// elements are elem bytes; the whole vector must fit, so a hostile count
// is refused before anything is allocated for it.
func (t table) vec(i int, elem int) (uint64, int, error) {
	q, ok, err := t.indirect(i)
	if !ok || err != nil {
		return 0, 0, err
	}
	n, err := t.f.u32at(q)
	if err != nil {
		return 0, 0, err
	}
	start := q + 4
	if uint64(n)*uint64(elem) > uint64(len(t.f.b))-start {
		return 0, 0, fmt.Errorf("vector of %d elements in field %d beyond buffer", n, i)
	}
	return start, int(n), nil
}

func (t table) bytes(i int) ([]byte, error) {
	s, n, err := t.vec(i, 1)
	if err != nil || n == 0 {
		return nil, err
	}
	return t.f.b[s : s+uint64(n) : s+uint64(n)], nil
}

func (t table) str(i int) (string, error) {
	b, err := t.bytes(i)
	if err == nil {
		err = t.f.g.Take(len(b), 1)
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
	if err := t.f.g.Take(n, 4); err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for k := range out {
		out[k] = flatbuffers.GetInt32(t.f.b[s+4*uint64(k):])
	}
	return out, nil
}

func (t table) i64s(i int) ([]int64, error) {
	s, n, err := t.vec(i, 8)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.f.g.Take(n, 8); err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for k := range out {
		out[k] = flatbuffers.GetInt64(t.f.b[s+8*uint64(k):])
	}
	return out, nil
}

func (t table) u64s(i int) ([]uint64, error) {
	v, err := t.i64s(i)
	if err != nil {
		return nil, err
	}
	if err := t.f.g.Take(len(v), 8); err != nil {
		return nil, err
	}
	out := make([]uint64, len(v))
	for k, x := range v {
		out[k] = uint64(x)
	}
	return out, nil
}

func (t table) f64s(i int) ([]float64, error) {
	s, n, err := t.vec(i, 8)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.f.g.Take(n, 8); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for k := range out {
		out[k] = flatbuffers.GetFloat64(t.f.b[s+8*uint64(k):])
	}
	return out, nil
}

func (t table) bools(i int) ([]bool, error) {
	b, err := t.bytes(i)
	if err != nil {
		return nil, err
	}
	if err := t.f.g.Take(len(b), 1); err != nil {
		return nil, err
	}
	out := make([]bool, len(b))
	for k, x := range b {
		out[k] = x != 0
	}
	return out, nil
}

// tables returns the vector of tables in field i.
func (t table) tables(i int) ([]table, error) {
	s, n, err := t.vec(i, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if err := t.f.g.Take(n, int(unsafe.Sizeof(table{}))); err != nil {
		return nil, err
	}
	out := make([]table, n)
	for k := range out {
		p := s + 4*uint64(k)
		q := p + uint64(flatbuffers.GetUint32(t.f.b[p:]))
		if out[k], err = t.f.tableAt(q); err != nil {
			return nil, fmt.Errorf("element %d: %w", k, err)
		}
	}
	return out, nil
}
