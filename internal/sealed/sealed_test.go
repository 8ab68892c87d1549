package sealed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func linuxOnly(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("sealed memfd copies are Linux only")
	}
}

// The copy holds the bytes that were opened, hashed after sealing; later
// changes to the file (in place or by rename) do not reach it, and the
// copy itself cannot be written, truncated or grown.
func TestOpenSealsACopy(t *testing.T) {
	linuxOnly(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	orig := bytes.Repeat([]byte("switchyard"), 10000)
	if err := os.WriteFile(p, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := sha256.Sum256(orig)
	if f.SHA256 != hex.EncodeToString(want[:]) || f.Size != int64(len(orig)) {
		t.Fatalf("sha256 %s size %d", f.SHA256, f.Size)
	}
	// rewrite the original in place and replace it: the copy keeps its bytes
	if err := os.WriteFile(p, []byte("evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, orig) {
		t.Fatal("the sealed copy changed with the file")
	}
	// nobody can change the copy, even through a writable reopen
	w, err := os.OpenFile(f.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPERM) {
		t.Errorf("write to the sealed copy: %v, want EPERM", err)
	}
	if err := w.Truncate(10); !errors.Is(err, syscall.EPERM) {
		t.Errorf("shrinking the sealed copy: %v, want EPERM", err)
	}
	if err := w.Truncate(int64(len(orig)) + 10); !errors.Is(err, syscall.EPERM) {
		t.Errorf("growing the sealed copy: %v, want EPERM", err)
	}
	if err := f.Close(); err != nil || f.Close() != nil {
		t.Fatal("Close twice")
	}
}

// The copy of an executable runs from its descriptor (the child gets the
// descriptor above the ones os/exec rearranges).
func TestExecTheCopy(t *testing.T) {
	linuxOnly(t)
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo binary")
	}
	f, err := Open(echo)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path, fd, err := f.PathAbove(40)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	cmd := exec.Command(path, "sealed ok")
	r, w, _ := os.Pipe()
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w, w, w}
	out, err := cmd.Output()
	w.Close()
	if err != nil || string(out) != "sealed ok\n" {
		t.Fatalf("exec %s: %q %v", path, out, err)
	}
}

// A FIFO (or any non-regular file) is refused at once, not waited on.
func TestOpenRefusesFIFOWithoutBlocking(t *testing.T) {
	linuxOnly(t)
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 3)
	go func() {
		_, err := Open(p)
		done <- err
		_, err = HashFile(p, 0)
		done <- err
		_, err = ReadFile(p, 1<<20)
		done <- err
	}()
	for i := 0; i < 3; i++ {
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("FIFO: %v, want ErrNotRegular", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("opening a FIFO blocked")
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestReadFileBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, make([]byte, 101), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the bound: %v", err)
	}
	if _, err := HashFile(p, 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("HashFile over the bound: %v", err)
	}
	if b, err := ReadFile(p, 101); err != nil || len(b) != 101 {
		t.Errorf("ReadFile at the bound: %d %v", len(b), err)
	}
}

// World-writable files and directories (without a saving sticky bit) are
// insecure; a private directory, or a sticky one holding our own file, is
// not; a symlink is judged by where it leads too.
func TestCheckPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	root := t.TempDir()
	mk := func(dir string, mode os.FileMode) string {
		d := filepath.Join(root, dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	file := func(dir string, mode os.FileMode) string {
		p := filepath.Join(dir, "plugin")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	private := file(mk("private", 0o755), 0o755)
	open := file(mk("open", 0o777), 0o755)
	sticky := file(mk("sticky", 0o777|os.ModeSticky), 0o755)
	wwFile := file(mk("wwfile", 0o755), 0o666)
	nested := file(mk("open2/sub", 0o755), 0o755)
	if err := os.Chmod(filepath.Join(root, "open2"), 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "private", "link")
	if err := os.Symlink(open, link); err != nil {
		t.Fatal(err)
	}
	for p, bad := range map[string]bool{private: false, sticky: false, open: true, wwFile: true, nested: true, link: true, filepath.Join(root, "private", "missing"): false} {
		err := CheckPath(p)
		var ie *InsecureError
		if bad != errors.As(err, &ie) {
			t.Errorf("CheckPath(%s) = %v, want insecure %v", p, err, bad)
		}
		if err != nil {
			t.Log(err)
		}
	}
	t.Setenv(EnvAllowInsecure, "1")
	if !InsecureAllowed() {
		t.Error("InsecureAllowed with the variable set")
	}
	t.Setenv(EnvAllowInsecure, "")
	if InsecureAllowed() {
		t.Error("InsecureAllowed without the variable")
	}
}
