package runtime

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// fallbackMemoryBudget is the budget where the machine's memory cannot be
// read (not Linux, or /proc unreadable).
const fallbackMemoryBudget = 4 << 30

// DefaultMemoryBudget is the memory budget a model gets when
// Options.MemoryBudget is 0: three quarters of the memory this process can
// still use, the smallest of the kernel's MemAvailable (/proc/meminfo),
// the remaining allowance of its cgroup (memory.max − memory.current,
// cgroup v2; containers see the host's /proc/meminfo), the address space
// its RLIMIT_AS leaves (`ulimit -v`, less what the process has mapped)
// and the Go runtime's soft limit (GOMEMLIMIT). Where none of them is
// known it is 4 GiB.
func DefaultMemoryBudget() int64 {
	avail := int64(math.MaxInt64)
	known := false
	if goruntime.GOOS == "linux" {
		if b, err := os.ReadFile("/proc/meminfo"); err == nil {
			if v, ok := memAvailable(bytes.NewReader(b)); ok {
				avail, known = min(avail, v), true
			}
		}
		if v, ok := cgroupAllowance(); ok {
			avail, known = min(avail, v), true
		}
	}
	if v, ok := addressSpaceAllowance(); ok {
		avail, known = min(avail, v), true
	}
	if lim := debug.SetMemoryLimit(-1); lim > 0 && lim < math.MaxInt64 {
		avail, known = min(avail, lim), true
	}
	if !known {
		return fallbackMemoryBudget
	}
	return max(avail/4*3, 64<<20)
}

// memAvailable parses MemAvailable (in kB) from /proc/meminfo.
func memAvailable(r io.Reader) (int64, bool) { return procKB(r, "MemAvailable:") }

// procKB reads the first "key value kB" line with that key of a /proc
// file, in bytes.
func procKB(r io.Reader, key string) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == key {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb < 0 || kb > math.MaxInt64/1024 {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// cgroupAllowance is memory.max − memory.current of this process's cgroup
// (v2), when it has a limit.
func cgroupAllowance() (int64, bool) {
	dirs := []string{"/sys/fs/cgroup"}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "0::"); ok && p != "/" && p != "" {
				dirs = append([]string{filepath.Join("/sys/fs/cgroup", filepath.Clean(p))}, dirs...)
			}
		}
	}
	for _, d := range dirs {
		maxB, err := os.ReadFile(filepath.Join(d, "memory.max"))
		if err != nil {
			continue
		}
		limit, ok := parseCgroupBytes(maxB)
		if !ok {
			return 0, false // "max": no limit here
		}
		cur := int64(0)
		if b, err := os.ReadFile(filepath.Join(d, "memory.current")); err == nil {
			cur, _ = parseCgroupBytes(b)
		}
		return max(limit-cur, 0), true
	}
	return 0, false
}

func parseCgroupBytes(b []byte) (int64, bool) {
	s := strings.TrimSpace(string(b))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, false
	}
	return v, true
}

// vmSize parses VmSize (in kB) from /proc/self/status: the address space
// the process has mapped, which RLIMIT_AS bounds.
func vmSize(r io.Reader) (int64, bool) { return procKB(r, "VmSize:") }
