package llm_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the process's CPU time (it does not grow while other
// processes hold the shared cores), for the benchmarks' cpu metrics.
func processCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
