package formats_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all"
)

func init() {
	formats.Register(formats.Format{
		Name:       "zzmagic",
		Extensions: []string{".zz"},
		Match:      func(h []byte) bool { return len(h) >= 8 && string(h[4:8]) == "ZZ01" },
		LoadFile: func(string, formats.Options) (*graph.Model, error) {
			return nil, errors.New("zz loaded")
		},
	})
}

func TestLookup(t *testing.T) {
	cases := []struct {
		path string
		head []byte
		want string
	}{
		{"m.onnx", []byte{0x08, 0x07}, "onnx"},
		{"noext", []byte{0x08, 0x07}, "onnx"},                 // fallback
		{"m.onnx", []byte("\x10\x00\x00\x00ZZ01"), "zzmagic"}, // magic beats the extension
		{"m.zz", nil, "zzmagic"},
		{"M.ZZ", []byte{1}, "zzmagic"},
	}
	for _, c := range cases {
		f, err := formats.Lookup(c.path, c.head)
		if err != nil || f.Name != c.want {
			t.Errorf("Lookup(%q, %q) = %v, %v; want %s", c.path, c.head, f, err, c.want)
		}
	}
}

func TestLoadFileAndDecode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(p, []byte("\x10\x00\x00\x00ZZ01rest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := formats.LoadFile(p, formats.Options{}); err == nil || err.Error() != "zz loaded" {
		t.Fatalf("LoadFile: %v", err)
	}
	if _, err := formats.LoadFile(filepath.Join(dir, "missing.onnx"), formats.Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	// A format that needs a file refuses bytes clearly.
	if _, err := formats.Decode([]byte("\x10\x00\x00\x00ZZ01"), "", formats.Options{}); err == nil {
		t.Fatal("Decode of a file-only format succeeded")
	}
	// ONNX bytes decode through the registry (garbage gives ONNX's error).
	if _, err := formats.Decode([]byte{0xff, 0xff, 0xff}, "", formats.Options{}); err == nil {
		t.Fatal("garbage decoded")
	}
	found := false
	for _, n := range formats.Names() {
		found = found || n == "onnx"
	}
	if !found {
		t.Fatalf("onnx not registered: %v", formats.Names())
	}
}
