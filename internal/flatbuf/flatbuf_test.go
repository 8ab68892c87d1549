package flatbuf

import (
	"errors"
	"slices"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/switchyard-hal/switchyard/internal/fbguard"
)

// sample builds a root table with one field of every kind the reader
// decodes: 0 u8, 1 bool, 2 i32, 3 u32, 4 i64, 5 u64, 6 f32, 7 f64,
// 8 string, 9 []int32, 10 []int64, 11 []float32, 12 []float64,
// 13 []bool, 14 []uint16, 15 sub-table (field 0 = i32 7), 16 vector of
// two such tables.
func sample() []byte {
	b := flatbuffers.NewBuilder(256)
	child := func(v int32) flatbuffers.UOffsetT {
		b.StartObject(1)
		b.PrependInt32Slot(0, v, 0)
		return b.EndObject()
	}
	c1, c2, c3 := child(7), child(8), child(9)
	b.StartVector(4, 2, 4)
	b.PrependUOffsetT(c3)
	b.PrependUOffsetT(c2)
	kids := b.EndVector(2)
	s := b.CreateString("hello")
	vec := func(elem int, put func(k int), n int) flatbuffers.UOffsetT {
		b.StartVector(elem, n, elem)
		for k := n - 1; k >= 0; k-- {
			put(k)
		}
		return b.EndVector(n)
	}
	i32s := vec(4, func(k int) { b.PrependInt32(int32(-k)) }, 3)
	i64s := vec(8, func(k int) { b.PrependInt64(int64(k) << 40) }, 2)
	f32s := vec(4, func(k int) { b.PrependFloat32(float32(k) + 0.5) }, 2)
	f64s := vec(8, func(k int) { b.PrependFloat64(float64(k) - 0.25) }, 2)
	bools := vec(1, func(k int) { b.PrependBool(k == 1) }, 3)
	u16s := vec(2, func(k int) { b.PrependUint16(uint16(60000 + k)) }, 2)
	b.StartObject(17)
	b.PrependUint8Slot(0, 200, 0)
	b.PrependBoolSlot(1, true, false)
	b.PrependInt32Slot(2, -5, 0)
	b.PrependUint32Slot(3, 1<<31, 0)
	b.PrependInt64Slot(4, -1<<40, 0)
	b.PrependUint64Slot(5, 1<<63, 0)
	b.PrependFloat32Slot(6, 1.5, 0)
	b.PrependFloat64Slot(7, -2.25, 0)
	b.PrependUOffsetTSlot(8, s, 0)
	b.PrependUOffsetTSlot(9, i32s, 0)
	b.PrependUOffsetTSlot(10, i64s, 0)
	b.PrependUOffsetTSlot(11, f32s, 0)
	b.PrependUOffsetTSlot(12, f64s, 0)
	b.PrependUOffsetTSlot(13, bools, 0)
	b.PrependUOffsetTSlot(14, u16s, 0)
	b.PrependUOffsetTSlot(15, c1, 0)
	b.PrependUOffsetTSlot(16, kids, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// must returns v, panicking (failing the test) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestReadEveryKind(t *testing.T) {
	for _, o := range []Options{{}, {ShortTables: true}} {
		r := must(Root("test", sample(), o))
		if r.Fields() != 17 {
			t.Fatalf("fields %d", r.Fields())
		}
		if v := must(r.U8(0, 1)); v != 200 {
			t.Fatalf("u8 %d", v)
		}
		if v := must(r.Bool(1, false)); !v {
			t.Fatal("bool")
		}
		if v := must(r.I32(2, 0)); v != -5 {
			t.Fatalf("i32 %d", v)
		}
		if v := must(r.U32(3, 0)); v != 1<<31 {
			t.Fatalf("u32 %d", v)
		}
		if v := must(r.I64(4, 0)); v != -1<<40 {
			t.Fatalf("i64 %d", v)
		}
		if v := must(r.U64(5, 0)); v != 1<<63 {
			t.Fatalf("u64 %d", v)
		}
		if v := must(r.F32(6, 0)); v != 1.5 {
			t.Fatalf("f32 %v", v)
		}
		if v := must(r.F64(7, 0)); v != -2.25 {
			t.Fatalf("f64 %v", v)
		}
		if v := must(r.Str(8)); v != "hello" {
			t.Fatalf("str %q", v)
		}
		if v := must(r.I32s(9)); !slices.Equal(v, []int32{0, -1, -2}) {
			t.Fatalf("i32s %v", v)
		}
		if v := must(r.I64s(10)); !slices.Equal(v, []int64{0, 1 << 40}) {
			t.Fatalf("i64s %v", v)
		}
		if v := must(r.U64s(10)); !slices.Equal(v, []uint64{0, 1 << 40}) {
			t.Fatalf("u64s %v", v)
		}
		if v := must(r.F32s(11)); !slices.Equal(v, []float32{0.5, 1.5}) {
			t.Fatalf("f32s %v", v)
		}
		if v := must(r.F64s(12)); !slices.Equal(v, []float64{-0.25, 0.75}) {
			t.Fatalf("f64s %v", v)
		}
		if v := must(r.Bools(13)); !slices.Equal(v, []bool{false, true, false}) {
			t.Fatalf("bools %v", v)
		}
		if v := must(r.Ints32(14, 2)); !slices.Equal(v, []int32{60000, 60001}) {
			t.Fatalf("u16 widened %v", v)
		}
		if v := must(r.Ints32(13, 1)); !slices.Equal(v, []int32{0, 1, 0}) {
			t.Fatalf("u8 widened %v", v)
		}
		if v := must(r.Ints32(9, 4)); !slices.Equal(v, []int32{0, -1, -2}) {
			t.Fatalf("i32 widened %v", v)
		}
		if _, err := r.Ints32(9, 3); err == nil {
			t.Fatal("width 3 accepted")
		}
		c, ok, err := r.Sub(15, "child")
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if v := must(c.I32(0, 0)); v != 7 {
			t.Fatalf("child %d", v)
		}
		kids := must(r.Tables(16, "kid"))
		if len(kids) != 2 || must(kids[0].I32(0, 0)) != 8 || must(kids[1].I32(0, 0)) != 9 {
			t.Fatalf("kids %v", kids)
		}
		// absent fields: defaults and nil
		if v := must(r.I32(40, 3)); v != 3 {
			t.Fatalf("default %d", v)
		}
		if v := must(c.Str(1)); v != "" {
			t.Fatalf("absent string %q", v)
		}
		if _, ok, err := c.Sub(2, "none"); ok || err != nil {
			t.Fatal("absent table", ok, err)
		}
		if v := must(c.Tables(3, "none")); v != nil {
			t.Fatal("absent vector", v)
		}
		if v := must(Table{}.I32(0, 4)); v != 4 {
			t.Fatal("zero table", v)
		}
	}
}

// vtableOf returns the position of the vtable of the table at pos.
func vtableOf(b []byte, pos uint32) uint32 {
	return uint32(int64(pos) - int64(flatbuffers.GetSOffsetT(b[pos:])))
}

// TestShortTables: a table whose recorded size stops inside its last
// field is refused unless the format's writer is known to record such
// sizes, and a field must still end inside the buffer.
func TestShortTables(t *testing.T) {
	b := sample()
	r := must(Root("test", b, Options{}))
	vt := vtableOf(b, r.pos)
	// shorten the table so it stops right after field 5 starts
	o5 := flatbuffers.GetVOffsetT(b[vt+4+2*5:])
	flatbuffers.WriteVOffsetT(b[vt+2:], o5+4)
	r = must(Root("test", b, Options{}))
	if _, err := r.U64(5, 0); err == nil {
		t.Fatal("strict: a field beyond its table's size accepted")
	}
	r = must(Root("test", b, Options{ShortTables: true}))
	if v, err := r.U64(5, 0); err != nil || v != 1<<63 {
		t.Fatal("short tables:", v, err)
	}
	// a field that starts beyond the table is refused either way
	flatbuffers.WriteVOffsetT(b[vt+2:], o5-1)
	r = must(Root("test", b, Options{ShortTables: true}))
	if _, err := r.U64(5, 0); err == nil {
		t.Fatal("short tables: a field starting beyond its table accepted")
	}
}

// TestRefusals: each malformed structure is an error, not a panic.
func TestRefusals(t *testing.T) {
	good := sample()
	r := must(Root("test", good, Options{}))
	vt := vtableOf(good, r.pos)
	cases := map[string]func(b []byte){
		"root outside": func(b []byte) { flatbuffers.WriteUOffsetT(b, flatbuffers.UOffsetT(len(b))) },
		"root unaligned": func(b []byte) {
			flatbuffers.WriteUOffsetT(b, flatbuffers.GetUOffsetT(b)+2)
		},
		"vtable outside":  func(b []byte) { flatbuffers.WriteSOffsetT(b[r.pos:], -flatbuffers.SOffsetT(len(b))) },
		"vtable too long": func(b []byte) { flatbuffers.WriteVOffsetT(b[vt:], 0xfffe) },
		"vtable odd":      func(b []byte) { flatbuffers.WriteVOffsetT(b[vt:], 5) },
		"object too long": func(b []byte) { flatbuffers.WriteVOffsetT(b[vt+2:], 0xffff) },
		"object too short": func(b []byte) {
			flatbuffers.WriteVOffsetT(b[vt+2:], 2)
		},
	}
	for name, spoil := range cases {
		b := slices.Clone(good)
		spoil(b)
		if _, err := Root("test", b, Options{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := Root("test", good[:7], Options{}); err == nil {
		t.Error("7-byte buffer accepted")
	}
	// a vector whose count overruns the buffer
	b := slices.Clone(good)
	r = must(Root("test", b, Options{}))
	o := uint32(flatbuffers.GetVOffsetT(b[vt+4+2*9:]))
	at := r.pos + o
	v := at + uint32(flatbuffers.GetUOffsetT(b[at:]))
	flatbuffers.WriteUOffsetT(b[v:], 1<<30)
	if _, err := r.I32s(9); err == nil {
		t.Error("vector overrunning the buffer accepted")
	}
	// a reference pointing past the end
	flatbuffers.WriteUOffsetT(b[at:], flatbuffers.UOffsetT(len(b)))
	if _, err := r.I32s(9); err == nil {
		t.Error("reference outside the buffer accepted")
	}
}

// TestBudget: offsets that point many times at one vector are charged
// each time, so the decode is refused once it passes the file's budget.
func TestBudget(t *testing.T) {
	r := must(Root("test", sample(), Options{}))
	var fe *fbguard.Error
	for k := 0; ; k++ {
		_, err := r.I64s(10)
		if errors.As(err, &fe) {
			if fe.What != "test" {
				t.Fatalf("budget error names %q", fe.What)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if k > (fbguard.Factor*1000+fbguard.Slack)/16 {
			t.Fatal("repeated decodes never refused")
		}
	}
}

// FuzzRoot: no input panics the reader, whatever field it is asked for.
func FuzzRoot(f *testing.F) {
	f.Add(sample(), false)
	f.Add(sample()[:40], true)
	f.Fuzz(func(t *testing.T, b []byte, short bool) {
		r, err := Root("fuzz", b, Options{ShortTables: short})
		if err != nil {
			return
		}
		walk(r, 2)
	})
}

// walk calls every accessor on every field of t and, depth levels down,
// of the tables it references.
func walk(t Table, depth int) {
	for i := range min(t.Fields(), 24) {
		_, _ = t.U8(i, 0)
		_, _ = t.Bool(i, false)
		_, _ = t.I32(i, 0)
		_, _ = t.U64(i, 0)
		_, _ = t.F64(i, 0)
		_, _ = t.Str(i)
		_, _ = t.I64s(i)
		_, _ = t.Ints32(i, 2)
		_, _ = t.Bools(i)
		if depth == 0 {
			continue
		}
		if s, ok, err := t.Sub(i, "sub"); ok && err == nil {
			walk(s, depth-1)
		}
		if ts, err := t.Tables(i, "elem"); err == nil {
			for _, s := range ts[:min(len(ts), 4)] {
				walk(s, depth-1)
			}
		}
	}
}

func TestDecode(t *testing.T) {
	r := must(Root("test", sample(), Options{}))
	got, err := Decode(r, 16, "kid", func(c Table) (int32, error) { return c.I32(0, 0) })
	if err != nil || !slices.Equal(got, []int32{8, 9}) {
		t.Fatal(got, err)
	}
	bad := errors.New("bad")
	_, err = Decode(r, 16, "kid", func(c Table) (int32, error) {
		v, _ := c.I32(0, 0)
		if v == 9 {
			return 0, bad
		}
		return v, nil
	})
	if !errors.Is(err, bad) || err.Error() != "kid 1: bad" {
		t.Fatal(err)
	}
	if got, err := Decode(r, 40, "none", func(Table) (int, error) { return 1, nil }); got != nil || err != nil {
		t.Fatal(got, err)
	}
}
