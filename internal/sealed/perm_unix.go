//go:build unix

package sealed

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// openRegular opens path read-only without blocking (a FIFO opened for
// reading would wait for a writer) and refuses anything but a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is a %s, %w", path, kind(st.Mode()), ErrNotRegular)
	}
	return f, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// CheckPath reports (as an *InsecureError) whether users other than this
// one and root can replace the file at path or what it resolves to: the
// file is world-writable, or one of its directories is world-writable
// without the sticky bit, or is sticky but it or the entry in it belongs
// to another user. The path as given and its symlink-resolved form are
// both checked. Parts that do not exist are not judged (opening them
// fails on its own).
func CheckPath(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	paths := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		paths = append(paths, real)
	}
	me := os.Geteuid()
	trusted := func(uid int) bool { return uid == 0 || uid == me }
	for _, p := range paths {
		if st, err := os.Lstat(p); err == nil && st.Mode().Type() != fs.ModeSymlink && st.Mode().Perm()&0o002 != 0 {
			return &InsecureError{Path: path, At: p, Why: fmt.Sprintf("is world-writable (mode %v): anyone can rewrite it", st.Mode().Perm())}
		}
		child := p
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o002 != 0 {
				if st.Mode()&fs.ModeSticky == 0 {
					return &InsecureError{Path: path, At: dir, Why: fmt.Sprintf("is a world-writable directory without the sticky bit (mode %v): anyone can replace %s", st.Mode().Perm(), child)}
				}
				if o := owner(st); !trusted(o) {
					return &InsecureError{Path: path, At: dir, Why: fmt.Sprintf("is a world-writable directory owned by uid %d, who can replace %s", o, child)}
				}
				if cst, err := os.Lstat(child); err == nil && !trusted(owner(cst)) {
					return &InsecureError{Path: path, At: child, Why: fmt.Sprintf("is in the world-writable directory %s and owned by uid %d, who can replace it", dir, owner(cst))}
				}
			}
			if filepath.Dir(dir) == dir {
				break
			}
			child = dir
		}
	}
	return nil
}
