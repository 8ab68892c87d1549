package executorch

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/fbguard"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

func readShared(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(shared.Path(t, "testdata/executorch/"+rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParsePrograms(t *testing.T) {
	cases := []struct {
		rel      string
		methods  int
		values   int // of the first method
		instrs   int
		firstOp  string
		inputs   int
		outputs  int
		segments int
	}{
		{"add.pte", 1, 4, 1, "aten::add.out", 2, 1, 1},
		{"add_one.pte", 1, 4, 1, "aten::add.out", 1, 1, 1},
		{"linear.pte", 1, 10, 2, "aten::permute_copy.out", 1, 1, 1},
		{"linear_deprecated_constant_buffer.pte", 1, 6, 2, "aten::mul.out", 1, 1, 0},
		{"mean_where.pte", 1, 12, 4, "aten::mean.out", 1, 1, 0},
		{"kws/model.pte", 1, 289, 16, "cortex_m::quantize_per_tensor.out", 1, 1, 1},
		{"more/xor.pte", 4, 155, 66, "aten::permute_copy.out", 2, 10, 1},
		{"more/stories260k_hybrid_llama_qnn.pte", 0, 24, 1, "", 13, 11, 2},
	}
	for _, c := range cases {
		p, err := Parse(readShared(t, c.rel))
		if err != nil {
			t.Fatalf("%s: %v", c.rel, err)
		}
		if c.methods > 0 && len(p.Plans) != c.methods {
			t.Errorf("%s: %d methods, want %d", c.rel, len(p.Plans), c.methods)
		}
		pl := p.Plans[0]
		if len(pl.Values) != c.values || len(pl.Chains) != 1 || len(pl.Chains[0].Instructions) != c.instrs ||
			len(pl.Inputs) != c.inputs || len(pl.Outputs) != c.outputs || len(p.Segments) != c.segments {
			t.Errorf("%s: %d values, %d chains, %d inputs, %d outputs, %d segments", c.rel, len(pl.Values), len(pl.Chains), len(pl.Inputs), len(pl.Outputs), len(p.Segments))
			continue
		}
		in := pl.Chains[0].Instructions[0]
		if c.firstOp != "" && (in.Kind != InstrKernel || pl.Operators[in.Index].FullName() != c.firstOp) {
			t.Errorf("%s: first instruction %s", c.rel, pl.describeInstr(in))
		}
	}
}

func TestParseDetails(t *testing.T) {
	p, err := Parse(readShared(t, "linear.pte"))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Plans[0].Values[0].Tensor
	if w.ScalarType != TypeFloat || len(w.Sizes) != 2 || w.Extra == nil || !w.Extra.External || w.Extra.FullyQualifiedName != "linear.weight" {
		t.Fatalf("linear weight %+v %+v", w, w.Extra)
	}
	if l := p.Plans[0].Values[6]; l.Kind != KindIntList || len(l.Ints) != 2 || l.Ints[0] != 4 || l.Ints[1] != 5 {
		t.Fatalf("permute dims %+v", l)
	}
	k, err := Parse(readShared(t, "kws/model.pte"))
	if err != nil {
		t.Fatal(err)
	}
	in := k.Plans[0].Values[k.Plans[0].Inputs[0]].Tensor
	if string(in.DimOrder) != "\x00\x02\x01\x03" || in.ScalarType != TypeFloat {
		t.Fatalf("kws input %+v", in)
	}
	if c := k.ConstantSegment; c == nil || len(c.Offsets) != 64 {
		t.Fatalf("kws constant segment %+v", c)
	}
	var kb strings.Builder
	k.Describe(&kb, false)
	if !strings.Contains(kb.String(), "constants: 63 tensors (39216 bytes) in the program") {
		t.Errorf("kws describe:\n%s", kb.String())
	}
	q, err := Parse(readShared(t, "more/stories260k_hybrid_llama_qnn.pte"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := q.Plan("kv_forward")
	if err != nil {
		t.Fatal(err)
	}
	d := kv.Delegates[0]
	blob, err := q.DelegateBlob(d)
	if d.ID != "QnnBackend" || !d.InSegment || d.Index != 1 || err != nil || len(blob) != 1331456 {
		t.Fatalf("qnn delegate %+v, %d bytes, %v", d, len(blob), err)
	}
	var sb strings.Builder
	q.Describe(&sb, false)
	for _, want := range []string{"method kv_forward", "method prefill_forward", "backend QnnBackend, blob in segment 1 (1331456 bytes)", "segment 1: offset 0, 1331456 bytes — kv_forward delegate 0 (QnnBackend)"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("describe lacks %q", want)
		}
	}
	if _, err := q.Plan("nope"); err == nil || !strings.Contains(err.Error(), "kv_forward") {
		t.Errorf("missing method: %v", err)
	}
}

// TestParseHostile: truncations and corrupt offsets of a real program give
// errors, never panics or huge allocations.
func TestParseHostile(t *testing.T) {
	data := readShared(t, "mean_where.pte")
	for n := 0; n < len(data); n += 7 {
		_, _ = Parse(data[:n])
	}
	for i := 0; i < len(data); i += 3 {
		d := append([]byte{}, data...)
		d[i] ^= 0xff
		_, _ = Parse(d)
		d[i] ^= 0x7f
		_, _ = Parse(d)
	}
	// A root offset beyond the buffer is refused.
	if _, err := Parse([]byte("\x08\x00\x00\x00ET12\xff\xff\xff\x7f")); err == nil {
		t.Fatal("hostile root accepted")
	}
}

// fuzzBound is what parsing an input of n bytes may allocate: the
// reader's own budget (fbguard) and the Go structs built from what it
// decodes. The fuzz targets fail past it, so they see aliasing (issue
// #32); the testdata/fuzz/*/hostile-* seeds are written by
// TestHostileSeeds.
func fuzzBound(n int) uint64 { return allocguard.Bound(n, 4*fbguard.Factor, 4*fbguard.Slack) }

func FuzzProgram(f *testing.F) {
	for _, rel := range []string{"add.pte", "add_one.pte", "linear.pte", "mean_where.pte", "linear_deprecated_constant_buffer.pte"} {
		if p := shared.Root(); p != "" {
			if data, err := os.ReadFile(p + "/testdata/executorch/" + rel); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("\x1c\x00\x00\x00ET12"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p *Program
		var err error
		allocguard.Check(t, "Parse", fuzzBound(len(data)), func() { p, err = Parse(data) })
		if err != nil {
			return
		}
		var sb strings.Builder
		p.Describe(&sb, true)
		for _, pl := range p.Plans {
			_, _ = p.Lower(Options{Method: pl.Name, MaxTensorBytes: 1 << 20})
		}
	})
}

// FuzzData fuzzes the .ptd and bundled program readers.
func FuzzData(f *testing.F) {
	for _, rel := range []string{"linear.ptd", "more/xor.ptd", "bundled_program.bpte"} {
		if p := shared.Root(); p != "" {
			if data, err := os.ReadFile(p + "/testdata/executorch/" + rel); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		allocguard.Check(t, "ParsePTD", fuzzBound(len(data)), func() { _, _ = ParsePTD(data) })
		var b *Bundled
		var err error
		allocguard.Check(t, "ParseBundled", fuzzBound(len(data)), func() { b, err = ParseBundled(data, 1<<20) })
		if err == nil {
			if p, err := Parse(b.Program); err == nil {
				_, _ = p.Lower(Options{})
			}
		}
	})
}
