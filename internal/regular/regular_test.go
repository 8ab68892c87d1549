package regular

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadAndMap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "model.bin")
	if err := os.WriteFile(p, []byte("switchyard"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(string, int64) ([]byte, error){"ReadFile": ReadFile, "Map": Map} {
		b, err := read(p, 0)
		if err != nil || string(b) != "switchyard" {
			t.Fatalf("%s: %q %v", name, b, err)
		}
		if b, err := read(p, 10); err != nil || len(b) != 10 {
			t.Fatalf("%s at its limit: %v", name, err)
		}
		if _, err := read(p, 9); err == nil || !strings.Contains(err.Error(), "more than the 9") {
			t.Fatalf("%s over its limit: %v", name, err)
		}
		if _, err := read(dir, 0); !errors.Is(err, ErrNotRegular) {
			t.Fatalf("%s of a directory: %v", name, err)
		}
		if _, err := read(filepath.Join(dir, "absent"), 0); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s of a missing file: %v", name, err)
		}
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := Map(empty, 0); err != nil || len(b) != 0 {
		t.Fatalf("empty file: %v %v", b, err)
	}
}
