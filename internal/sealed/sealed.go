// Package sealed makes what is verified what is run. A plugin binary or a
// C delegate library is opened once, copied into a private in-memory file
// that is then sealed against every change (Linux memfd with
// F_SEAL_WRITE|F_SEAL_SHRINK|F_SEAL_GROW|F_SEAL_SEAL), and the sealed copy
// is hashed. The caller compares that hash with the manifest and then
// executes or dlopens the copy itself (/proc/self/fd/N), never the path
// again: swapping a symlink, renaming another file over the path or
// rewriting the file after the check changes nothing that runs.
//
// CheckPath refuses files that other users can replace: a world-writable
// file, or a file under a world-writable directory that lacks the sticky
// bit (or has it, but the entry or the directory belongs to another user,
// who may then still rename it away). Callers refuse such paths unless
// SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS=1 (InsecureAllowed) and warn
// loudly when they go ahead.
//
// Contracts:
//   - Open reads only regular files (a FIFO or device is refused without
//     blocking) of at most MaxBytes; the copy is private to this process
//     (and to anyone who may ptrace it) and cannot change once Open returns.
//   - File.SHA256 is the hash of the sealed bytes, read back after sealing.
//   - Close releases the copy; what was already executed or mapped from it
//     stays valid.
//
// On other Unix systems (no memfd) the copy is a read-only file in a fresh
// private directory (mode 0700): other users cannot touch it, the current
// user could; the directory is removed by Close. A memfd copy costs memory
// equal to the file's size while it is open (the loaders close it once the
// process has started; a loaded library's copy lives as long as it is
// loaded).
package sealed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// EnvAllowInsecure names the environment variable that, set to 1 (or
// true), lets loaders go ahead with files CheckPath refuses (they warn).
const EnvAllowInsecure = "SWITCHYARD_ALLOW_INSECURE_PLUGIN_PATHS"

// InsecureAllowed reports whether EnvAllowInsecure is set to 1 or true.
func InsecureAllowed() bool {
	v := strings.TrimSpace(os.Getenv(EnvAllowInsecure))
	return v == "1" || strings.EqualFold(v, "true") || strings.EqualFold(v, "yes")
}

// MaxBytes bounds the size of a file Open copies (4 GiB).
const MaxBytes int64 = 4 << 30

// ErrNotRegular is wrapped by errors about FIFOs, devices, sockets and
// directories given where a file is expected.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when a file exceeds the size bound of the call.
var ErrTooLarge = errors.New("file too large")

// InsecureError says why a path can be replaced by other users.
type InsecureError struct {
	Path string // the path that was checked
	At   string // the file or directory at fault
	Why  string
}

func (e *InsecureError) Error() string {
	if e.At == e.Path {
		return fmt.Sprintf("%s %s", e.Path, e.Why)
	}
	return fmt.Sprintf("%s: %s %s", e.Path, e.At, e.Why)
}

// Hint is the sentence loaders append to a refusal.
func Hint() string {
	return "refusing it (fix the permissions, or set " + EnvAllowInsecure + "=1 to load it anyway)"
}

// File is a sealed private copy of a file.
type File struct {
	// Source is the path that was opened.
	Source string
	// SHA256 is the hex sha256 of the sealed copy.
	SHA256 string
	// Size is its length in bytes.
	Size int64

	f   *os.File // read-only
	dir string   // private directory to remove (non-Linux)
}

// Fd is the descriptor of the sealed copy (valid until Close).
func (f *File) Fd() uintptr { return f.f.Fd() }

// ReadAt reads the sealed copy.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

// Close releases the copy. It is safe to call more than once.
func (f *File) Close() error {
	if f == nil || f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
		f.dir = ""
	}
	return err
}

// HashFile hashes a regular file of at most max bytes (max <= 0: MaxBytes)
// by path, without blocking on FIFOs or devices. It is for display (what is
// installed); loaders use Open and the copy's hash.
func HashFile(path string, max int64) (string, error) {
	src, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	if max <= 0 {
		max = MaxBytes
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(src, max+1))
	if err != nil {
		return "", err
	}
	if n > max {
		return "", fmt.Errorf("%s: larger than %d bytes: %w", path, max, ErrTooLarge)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadFile reads a regular file of at most max bytes, without blocking on
// FIFOs or devices (for manifests).
func ReadFile(path string, max int64) ([]byte, error) {
	src, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b, err := io.ReadAll(io.LimitReader(src, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes: %w", path, max, ErrTooLarge)
	}
	return b, nil
}

// hashSealed hashes the first n bytes of the read-only copy.
func hashSealed(f *os.File, n int64) (string, error) {
	h := sha256.New()
	got, err := io.Copy(h, io.NewSectionReader(f, 0, n))
	if err != nil {
		return "", err
	}
	if got != n {
		return "", fmt.Errorf("sealed copy has %d bytes, %d were written", got, n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
