//go:build unix

package regular

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Mapped reports whether Map maps files (true here) or reads them.
const Mapped = true

// Map maps a whole regular file of at most max bytes (max <= 0: no limit
// beyond the address space) read-only into memory, sized by stat, and
// returns its bytes. The pages are the page cache's: nothing is copied,
// a page is read from disk when it is first touched, and the kernel can
// drop clean pages under memory pressure. A write into the returned slice
// is a fault (the mapping is PROT_READ), never a silent change to the
// file or to other users of it.
//
// The mapping is never unmapped: Go's collector does not see references
// into it, so no finalizer can tell when the last slice into it is gone,
// and a use after munmap would be a crash. It is released when the
// process exits. A file truncated while it is mapped makes reads of the
// vanished pages fault (SIGBUS), as with every mapped-file reader.
func Map(path string, max int64) ([]byte, error) {
	f, size, err := openSized(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size == 0 {
		return []byte{}, nil // mmap refuses an empty length
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("%s: mapping %d bytes: %w", path, size, err)
	}
	return b, nil
}

// Unmap releases a mapping Map returned, for a caller that failed before
// anything kept a slice of it (a file that did not decode); after it, any
// access to b is a crash. An empty b is a no-op.
func Unmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Munmap(b)
}
