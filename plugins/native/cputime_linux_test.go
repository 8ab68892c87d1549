package native

import (
	"syscall"
	"unsafe"
)

// threadClock is the calling thread's CPU time in ns from
// CLOCK_THREAD_CPUTIME_ID (exact, where Getrusage's thread times move in
// scheduler ticks); 0 when the clock fails.
func threadClock() int64 {
	var ts syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return ts.Nano()
}
