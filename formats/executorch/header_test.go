package executorch

import (
	"os"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

func TestParseHeaderShared(t *testing.T) {
	cases := []struct {
		rel      string
		extended bool
		prog     uint64
		base     uint64
		segSize  uint64
	}{
		{"testdata/executorch/add.pte", false, 0, 0, 0},
		{"testdata/executorch/add_one.pte", true, 0x410, 0x480, 4},
		{"testdata/executorch/kws/model.pte", true, 0x3a38, 0x3a80, 0x9930},
	}
	for _, c := range cases {
		data, err := os.ReadFile(shared.Path(t, c.rel))
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseHeader(data, uint64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", c.rel, err)
		}
		if h.Identifier != "ET12" || h.Extended != c.extended || h.ProgramSize != c.prog || h.SegmentBaseOffset != c.base || h.SegmentDataSize != c.segSize {
			t.Errorf("%s: got %+v", c.rel, h)
		}
	}
}

func TestParseHeaderHostile(t *testing.T) {
	good := []byte("\x3c\x00\x00\x00ET12eh00\x20\x00\x00\x00" +
		"\x28\x00\x00\x00\x00\x00\x00\x00" + "\x28\x00\x00\x00\x00\x00\x00\x00" + "\x04\x00\x00\x00\x00\x00\x00\x00")
	if _, err := ParseHeader(good, 0x2c); err != nil {
		t.Fatalf("good header refused: %v", err)
	}
	for name, size := range map[string]uint64{"segment beyond end": 0x2b, "tiny file": 20} {
		if _, err := ParseHeader(good, size); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseHeader([]byte("\x00\x00\x00\x00TFL3"), 8); err == nil {
		t.Error("non-ExecuTorch accepted")
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte("\x3c\x00\x00\x00ET12eh00\x20\x00\x00\x00"), uint64(64))
	f.Fuzz(func(t *testing.T, data []byte, size uint64) {
		h, err := ParseHeader(data, size)
		if err == nil && h.Extended && h.SegmentBaseOffset+h.SegmentDataSize > size {
			t.Fatalf("accepted segments past the end: %+v size %d", h, size)
		}
	})
}
