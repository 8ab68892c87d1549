package switchyard_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// runClock is the process's CPU time: at one thread it is a run's time
// without the time other processes held the core (the machine the tests
// run on is shared; wall time there measures the load as much as the run).
func runClock() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ts.Nano())
}
