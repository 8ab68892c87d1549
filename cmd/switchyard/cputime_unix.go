//go:build unix

package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the CPU time the process has used so far, all threads
// together (ok false where the clock cannot be read). On a machine shared
// with other work it measures a run without the time others held the
// cores, which wall time cannot.
func processCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
