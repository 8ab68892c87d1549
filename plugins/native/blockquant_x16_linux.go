package native

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// x16Release gives back this process's pages of b (the raw rows a weight
// repacked into the x16 layout no longer reads) where b lies in a
// read-only private file mapping, as formats/llama maps a GGUF file
// (internal/regular.Map): MADV_DONTNEED on the pages wholly inside b, so
// they leave the resident set; they stay in the page cache and fault
// back in unchanged if anything reads them again. Any other memory (a
// heap copy, a writable mapping) is left alone: there DONTNEED would
// lose the bytes.
func x16Release(b []byte) {
	if len(b) == 0 {
		return
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	ps := uintptr(os.Getpagesize())
	a0, a1 := (lo+ps-1)&^(ps-1), hi&^(ps-1)
	if a1 <= a0 || !x16ReadOnlyFileMapping(lo, hi) {
		return
	}
	_ = unix.Madvise(b[a0-lo:a1-lo], unix.MADV_DONTNEED)
}

// x16ReadOnlyFileMapping reports whether [lo, hi) lies in one mapping of
// /proc/self/maps that is a file's (an inode), read-only and private.
func x16ReadOnlyFileMapping(lo, hi uintptr) bool {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode [path]
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		s, e, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(s, 16, 64)
		end, err2 := strconv.ParseUint(e, 16, 64)
		if err1 != nil || err2 != nil || uint64(lo) < start || uint64(lo) >= end {
			continue
		}
		return uint64(hi) <= end && fs[1] == "r--p" && fs[4] != "0"
	}
	return false
}

// x16Alloc is n bytes for a weight's x16 copy: on the Go heap, its
// whole 2 MiB pages advised as huge (MADV_HUGEPAGE: with transparent huge
// pages on "madvise", as is common, each first write then faults in 2 MiB
// instead of 4 KiB; packing 300 MB took about a second of page faults).
func x16Alloc(n int) []byte {
	b := make([]byte, n)
	const huge = 2 << 20
	if n < 2*huge {
		return b
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	a0, a1 := (lo+huge-1)&^(huge-1), (lo+uintptr(n))&^(huge-1)
	if a1 > a0 {
		_ = unix.Madvise(b[a0-lo:a1-lo], unix.MADV_HUGEPAGE)
	}
	return b
}
