package calibrate

import (
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is the process's CPU time: at one thread a call's time without
// the time other processes held the core.
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
