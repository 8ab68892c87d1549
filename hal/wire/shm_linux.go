//go:build linux

package wire

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Region is a shared-memory region: a memfd and its mapping.
type Region struct {
	ID   uint64
	File *os.File
	Mem  []byte
}

// RegionSeals are the seals every region carries from its creation: its
// size can never change again (so neither process can make the other's
// mapping fault with SIGBUS by truncating the file), and no further seal
// can be added (so the other process cannot seal it against writing).
const RegionSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// NewRegion creates a memfd region of size bytes (rounded up to a page),
// seals it with RegionSeals and maps it read-write.
func NewRegion(id uint64, name string, size int) (*Region, error) {
	if size <= 0 {
		size = 1
	}
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("wire: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: sizing shared region to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, RegionSeals); err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: sealing shared region: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: mapping shared region of %d bytes: %w", size, err)
	}
	return &Region{ID: id, File: f, Mem: mem}, nil
}

// CheckSealed verifies that f, received from the other process, is a
// memfd sealed against shrinking and growing and whose size holds at least
// size bytes: only then can mapping it never fault. It does not close f.
func CheckSealed(id uint64, f *os.File, size int64) error {
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("wire: region %d is not a sealable memfd (F_GET_SEALS: %v); refused", id, err)
	}
	if want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW; seals&want != want {
		return fmt.Errorf("wire: region %d is not sealed against resizing (seals %#x, want %#x); refused", id, seals, want)
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wire: region %d: %w", id, err)
	}
	if size <= 0 || size > st.Size() {
		return fmt.Errorf("wire: region %d: size %d does not fit its file of %d bytes", id, size, st.Size())
	}
	return nil
}

// MapRegion maps a region received from the other process. The region
// must be sealed as NewRegion seals it (CheckSealed) and size must not
// exceed the file's size; otherwise it is refused. f is owned by the
// region, or closed on error.
func MapRegion(id uint64, f *os.File, size int) (*Region, error) {
	if err := CheckSealed(id, f, int64(size)); err != nil {
		f.Close()
		return nil, err
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: mapping region %d (%d bytes): %w", id, size, err)
	}
	return &Region{ID: id, File: f, Mem: mem}, nil
}

// Close unmaps the region and closes its descriptor. It is safe to call twice.
func (r *Region) Close() error {
	var err error
	if r.Mem != nil {
		err = unix.Munmap(r.Mem)
		r.Mem = nil
	}
	if r.File != nil {
		if e := r.File.Close(); err == nil {
			err = e
		}
		r.File = nil
	}
	return err
}
