// Package allocguard lets tests and fuzz targets see resources: it
// measures what a call allocates on the Go heap and fails the test when
// that passes a bound, and it keeps hostile regression inputs, generated
// by test code, in a fuzz target's committed seed corpus.
//
// A reader's bounds checks refuse counts and offsets larger than the
// file, but a small file that legitimately decodes into something huge
// (offsets aliasing one table, a metadata array of one-byte elements, a
// declared dense shape of 2^31) gets through them; only measuring the
// heap shows it.
package allocguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// Bound is the allocation a reader may make for an input of n bytes:
// factor times n plus slack.
func Bound(n int, factor, slack uint64) uint64 { return factor*uint64(n) + slack }

// Allocated runs f and returns the bytes it allocated on the heap (all
// goroutines' allocations during f count: run it where nothing else
// allocates much).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Check runs f and fails t when it allocated more than limit bytes.
func Check(t testing.TB, what string, limit uint64, f func()) {
	t.Helper()
	if got := Allocated(f); got > limit {
		t.Fatalf("%s allocated %d bytes (%.1f MB), over its bound of %d (%.1f MB)", what, got, float64(got)/(1<<20), limit, float64(limit)/(1<<20))
	}
}

// WriteEnv, set to 1, makes Seeds (re)write the seed files instead of
// checking them.
const WriteEnv = "SWITCHYARD_WRITE_SEEDS"

// Seeds keeps the hostile inputs gen returns in testdata/fuzz/<target>/
// as files named "hostile-<name>": with SWITCHYARD_WRITE_SEEDS=1 it writes
// them; otherwise it fails when one is missing or differs from what gen
// makes now (so the committed corpus stays the generator's output).
func Seeds(t *testing.T, target string, gen map[string][]byte) {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", target)
	write := os.Getenv(WriteEnv) == "1"
	for name, data := range gen {
		p := filepath.Join(dir, "hostile-"+name)
		want := encode(data)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("seed %s: %v (regenerate with %s=1)", p, err, WriteEnv)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("seed %s differs from its generator (regenerate with %s=1)", p, WriteEnv)
		}
	}
}

// encode writes data as a one-value corpus file of `go test -fuzz`.
func encode(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
}
