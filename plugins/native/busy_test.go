package native

import (
	"os"
	"runtime"
	"testing"
)

// busyCores reads /proc/stat where there is one: a count of cores
// between none and all of them.
func TestBusyCores(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		if _, _, ok := cpuTicks(); ok {
			t.Fatal("cpuTicks read a /proc/stat that is not there")
		}
		t.Skip("no /proc/stat here")
	}
	busy, total, ok := cpuTicks()
	if !ok || total == 0 || busy > total {
		t.Fatalf("cpuTicks: busy %d total %d ok %v", busy, total, ok)
	}
	b, ok := busyCores()
	if !ok || b < 0 || b > float64(runtime.NumCPU())+0.01 {
		t.Fatalf("busyCores: %v %v with %d CPUs", b, ok, runtime.NumCPU())
	}
	if n := defaultThreads(0); n < 1 || n > runtime.GOMAXPROCS(0) {
		t.Fatalf("defaultThreads(0) = %d with GOMAXPROCS %d", n, runtime.GOMAXPROCS(0))
	}
	if n := defaultThreads(3); n != 3 {
		t.Fatalf("defaultThreads(3) = %d", n)
	}
}
