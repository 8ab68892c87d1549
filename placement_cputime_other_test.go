//go:build !linux

package switchyard_test

import "time"

var clockStart = time.Now()

// runClock is wall time where the process's CPU time is not read.
func runClock() time.Duration { return time.Since(clockStart) }
