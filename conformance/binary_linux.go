package conformance

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// isMapped reports whether the open file f (opened from path) is mapped
// into process pid: a line of /proc/PID/maps with its device and inode, or,
// where a stacked file system (overlayfs) shows the underlying device, its
// inode and path.
func isMapped(pid int, f *os.File, path string) (bool, error) {
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false, errNoProc
	}
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if _, serr := os.Stat("/proc/self/maps"); serr != nil {
			return false, errNoProc
		}
		return false, err
	}
	defer maps.Close()
	major, minor := uint64(unix.Major(uint64(sys.Dev))), uint64(unix.Minor(uint64(sys.Dev)))
	abs, _ := filepath.Abs(path)
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sc := bufio.NewScanner(maps)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// address perms offset dev inode path
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 {
			continue
		}
		ino, err := strconv.ParseUint(fields[4], 10, 64)
		if err != nil || ino == 0 || ino != sys.Ino {
			continue
		}
		maj, min, ok := strings.Cut(fields[3], ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 16, 32)
		mi, err2 := strconv.ParseUint(min, 16, 32)
		if err1 == nil && err2 == nil && ma == major && mi == minor {
			return true, nil
		}
		if strings.TrimSpace(fields[5]) == abs {
			return true, nil
		}
	}
	return false, sc.Err()
}
