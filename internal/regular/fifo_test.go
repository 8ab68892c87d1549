//go:build linux || darwin

package regular

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFIFORefused: a FIFO without a writer is refused at once, not
// waited on.
func TestFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := ReadFile(p, 0); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("FIFO: %v", err)
	}
	opened := false
	_, _, err := OpenWith(func(flag int) (*os.File, error) {
		opened = flag&syscall.O_NONBLOCK != 0
		return os.OpenFile(p, flag, 0)
	}, "fifo")
	if !errors.Is(err, ErrNotRegular) || !opened {
		t.Fatalf("OpenWith: non-blocking %v, %v", opened, err)
	}
}
