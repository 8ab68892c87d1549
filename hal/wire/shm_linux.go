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

// NewRegion creates a memfd region of size bytes (rounded up to a page) and
// maps it read-write.
func NewRegion(id uint64, name string, size int) (*Region, error) {
	if size <= 0 {
		size = 1
	}
	page := os.Getpagesize()
	size = (size + page - 1) / page * page
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("wire: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if err := f.Truncate(int64(size)); err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: sizing shared region to %d bytes: %w", size, err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: mapping shared region of %d bytes: %w", size, err)
	}
	return &Region{ID: id, File: f, Mem: mem}, nil
}

// MapRegion maps a region received from the other process. size must not
// exceed the file's size.
func MapRegion(id uint64, f *os.File, size int) (*Region, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("wire: region %d: %w", id, err)
	}
	if size <= 0 || int64(size) > st.Size() {
		f.Close()
		return nil, fmt.Errorf("wire: region %d: size %d does not fit its file of %d bytes", id, size, st.Size())
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
