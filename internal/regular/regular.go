// Package regular opens, reads and maps model files only when they are
// regular files, with their size known from stat before a byte is read: a FIFO
// named model.onnx would block format detection forever, and a link to
// /dev/zero named model.gguf would be read until memory runs out.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is returned for paths that are not regular files (FIFOs,
// devices, sockets, directories), links to them included.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading without blocking (a FIFO with no writer
// would block a plain open forever) and refuses anything but a regular
// file before a byte is read.
func Open(path string) (*os.File, fs.FileInfo, error) {
	return OpenWith(func(flag int) (*os.File, error) { return os.OpenFile(path, flag, 0) }, path)
}

// OpenWith is Open for a file that open opens with the flags it is given
// (an os.Root's OpenFile, say); name names it in errors.
func OpenWith(open func(flag int) (*os.File, error), name string) (*os.File, fs.FileInfo, error) {
	f, err := open(os.O_RDONLY | nonBlock)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w (mode %v)", name, ErrNotRegular, st.Mode().Type())
	}
	return f, st, nil
}

// openSized opens a regular file of at most max bytes (max <= 0: any
// size this machine can address) and returns it with its size at open.
func openSized(path string, max int64) (*os.File, int, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, 0, err
	}
	size := st.Size()
	if max > 0 && size > max {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %d bytes, more than the %d this reader takes", path, size, max)
	}
	if int64(int(size)) != size {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %d bytes, more than this machine can address", path, size)
	}
	return f, int(size), nil
}

// ReadFile reads a whole regular file of at most max bytes (max <= 0:
// no limit beyond what fits in memory), sized by stat: a file that grows
// while it is read is read to its size at open, one that shrinks is an
// error.
func ReadFile(path string, max int64) ([]byte, error) {
	f, size, err := openSized(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, size)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("%s: reading %d bytes: %w (did the file shrink while it was read?)", path, size, err)
	}
	return buf, nil
}
