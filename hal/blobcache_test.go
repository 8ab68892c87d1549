package hal_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/hal"
)

// DirCache: round trip, keys that are not digests refused (no path
// traversal), symlinks and oversized files are misses.
func TestDirCache(t *testing.T) {
	c := &hal.DirCache{Dir: t.TempDir(), MaxBlobBytes: 16}
	key := hal.BlobKey(hal.Info{Name: "x", Version: "1"}, hal.DeviceDesc{}, hal.CompileOptions{}, "digest")
	if err := c.Put(key, []byte("blob")); err != nil {
		t.Fatal(err)
	}
	if b, ok := c.Get(key); !ok || string(b) != "blob" {
		t.Fatalf("Get = %q, %v", b, ok)
	}
	if err := c.Put("../../etc/passwd", []byte("x")); err == nil || !strings.Contains(err.Error(), "not a sha256") {
		t.Fatalf("traversal key: %v", err)
	}
	if err := c.Put(key, make([]byte, 17)); err == nil {
		t.Fatal("oversized blob stored")
	}
	other := hal.BlobKey(hal.Info{Name: "x", Version: "2"}, hal.DeviceDesc{}, hal.CompileOptions{}, "digest")
	if other == key {
		t.Fatal("a new backend version gives the same key")
	}
	target := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(target, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(c.Dir, other+".blob")); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(other); ok {
		t.Fatal("a symlinked blob was read")
	}
}
