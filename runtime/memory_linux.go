package runtime

import (
	"bytes"
	"os"
	"syscall"
)

// addressSpaceAllowance is what RLIMIT_AS (ulimit -v) leaves of this
// process's address space: the soft limit less VmSize, when there is a
// limit. Every buffer a model allocates is mapped, so a budget past it
// fails with an out-of-memory crash instead of a refusal.
func addressSpaceAllowance() (int64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur == ^uint64(0) || rl.Cur > 1<<62 {
		return 0, false
	}
	used := int64(0)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		used, _ = vmSize(bytes.NewReader(b))
	}
	return max(int64(rl.Cur)-used, 0), true
}
