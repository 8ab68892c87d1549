package xnnpack

import (
	"runtime"
	"testing"
)

// The default thread count: an explicit count, then the environment, then
// GOMAXPROCS less the cores busy right now, never below 1 nor above
// GOMAXPROCS.
func TestDefaultThreads(t *testing.T) {
	OpenForTest(t, Options{Threads: 1}) // skips where the libraries are missing, as every test here
	if n := defaultThreads(3); n != 3 {
		t.Errorf("defaultThreads(3) = %d", n)
	}
	t.Setenv("SWITCHYARD_XNNPACK_THREADS", "5")
	if n := defaultThreads(0); n != 5 {
		t.Errorf("with SWITCHYARD_XNNPACK_THREADS=5: %d", n)
	}
	t.Setenv("SWITCHYARD_XNNPACK_THREADS", "")
	if n := defaultThreads(0); n < 1 || n > runtime.GOMAXPROCS(0) {
		t.Errorf("defaultThreads(0) = %d with GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
	if runtime.GOOS == "linux" {
		busy, ok := busyCores()
		if !ok || busy < 0 {
			t.Errorf("busyCores() = %d, %v: /proc/loadavg unread", busy, ok)
		}
	}
}
