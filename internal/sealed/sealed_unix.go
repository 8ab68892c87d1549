//go:build unix && !linux

package sealed

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Open copies the regular file at path into a read-only file in a fresh
// private directory and hashes the copy.
func Open(path string) (*File, error) {
	src, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dir, err := os.MkdirTemp("", "switchyard-sealed-")
	if err != nil {
		return nil, fmt.Errorf("sealed: %w", err)
	}
	fail := func(err error) (*File, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	dst := filepath.Join(dir, filepath.Base(path))
	w, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o500)
	if err != nil {
		return fail(fmt.Errorf("sealed: %w", err))
	}
	n, err := io.Copy(w, io.LimitReader(src, MaxBytes+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(fmt.Errorf("sealed: copying %s: %w", path, err))
	}
	if n > MaxBytes {
		return fail(fmt.Errorf("sealed: %s is larger than %d bytes: %w", path, MaxBytes, ErrTooLarge))
	}
	ro, err := os.Open(dst)
	if err != nil {
		return fail(fmt.Errorf("sealed: %w", err))
	}
	sum, err := hashSealed(ro, n)
	if err != nil {
		ro.Close()
		return fail(fmt.Errorf("sealed: hashing the copy of %s: %w", path, err))
	}
	return &File{Source: path, SHA256: sum, Size: n, f: ro, dir: dir}, nil
}

// Path names the private copy.
func (f *File) Path() string { return filepath.Join(f.dir, filepath.Base(f.Source)) }

// PathAbove names the private copy (its path does not depend on
// descriptors here); the returned file is nil.
func (f *File) PathAbove(min int) (string, *os.File, error) { return f.Path(), nil, nil }
