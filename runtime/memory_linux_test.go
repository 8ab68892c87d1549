package runtime

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// TestBudgetRespectsRLIMIT_AS: under `ulimit -v` the default budget is at
// most three quarters of the address space the limit leaves (it was three
// quarters of MemAvailable, so a model could be budgeted past the limit
// and die in an allocation instead of being refused).
func TestBudgetRespectsRLIMIT_AS(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	used, ok := vmSize(bytes.NewReader(b))
	if !ok {
		t.Skip("no VmSize")
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skip(err)
	}
	const room = 1 << 30
	lim := syscall.Rlimit{Cur: uint64(used + room), Max: old.Max}
	if old.Cur < lim.Cur {
		t.Skipf("RLIMIT_AS already %d", old.Cur)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
		t.Skip(err)
	}
	got := DefaultMemoryBudget()
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Fatal(err)
	}
	if got > room/4*3+64<<20 {
		t.Fatalf("default budget %d MB with %d MB of address space left under RLIMIT_AS", got>>20, room>>20)
	}
}
