//go:build linux

package sealed

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// mfdExec is MFD_EXEC (Linux 6.3): the copy may be executed even where
// vm.memfd_noexec makes memfds non-executable by default.
const mfdExec = 0x10

const seals = unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// Open copies the regular file at path into a sealed memfd and hashes the
// sealed bytes.
func Open(path string) (*File, error) {
	src, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	name := "switchyard-sealed:" + filepath.Base(path)
	if len(name) > 200 {
		name = name[:200]
	}
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING) // before Linux 6.3
	}
	if err != nil {
		return nil, fmt.Errorf("sealed: memfd_create for %s: %w", path, err)
	}
	rw := os.NewFile(uintptr(fd), "memfd:"+name)
	defer rw.Close()
	n, err := io.Copy(rw, io.LimitReader(src, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("sealed: copying %s: %w", path, err)
	}
	if n > MaxBytes {
		return nil, fmt.Errorf("sealed: %s is larger than %d bytes: %w", path, MaxBytes, ErrTooLarge)
	}
	if _, err := unix.FcntlInt(rw.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("sealed: sealing the copy of %s: %w", path, err)
	}
	if got, err := unix.FcntlInt(rw.Fd(), unix.F_GET_SEALS, 0); err != nil || got&seals != seals {
		return nil, fmt.Errorf("sealed: the copy of %s is not sealed (seals %#x): %v", path, got, err)
	}
	// keep only a read-only descriptor: nothing in this process can write
	// to the copy (the seals stop everyone else), and exec never meets a
	// writer (ETXTBSY on kernels that still check)
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", rw.Fd()), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sealed: reopening the copy of %s read-only (is /proc mounted?): %w", path, err)
	}
	sum, err := hashSealed(ro, n)
	if err != nil {
		ro.Close()
		return nil, fmt.Errorf("sealed: hashing the copy of %s: %w", path, err)
	}
	return &File{Source: path, SHA256: sum, Size: n, f: ro}, nil
}

// Path names the sealed copy for exec or dlopen in this process:
// /proc/self/fd/N.
func (f *File) Path() string { return fmt.Sprintf("/proc/self/fd/%d", f.f.Fd()) }

// PathAbove duplicates the copy's descriptor to a number at least min
// (close-on-exec) and names it. A child started with os/exec can exec that
// path when min is above every descriptor the child is given (os/exec
// moves them around below 2×their count before exec). Close the returned
// file once the child has started (or the library is unloaded).
func (f *File) PathAbove(min int) (string, *os.File, error) {
	nfd, err := unix.FcntlInt(f.f.Fd(), unix.F_DUPFD_CLOEXEC, min)
	if err != nil {
		return "", nil, fmt.Errorf("sealed: duplicating the copy of %s: %w", f.Source, err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", nfd), os.NewFile(uintptr(nfd), f.f.Name()), nil
}
