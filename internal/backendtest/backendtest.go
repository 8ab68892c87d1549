// Package backendtest is what tests of vendor backends share: a test that
// needs a library, tool or platform that is missing skips with the reason,
// unless SWITCHYARD_REQUIRE_BACKENDS (comma- or space-separated backend
// names, or "all") names its backend — then it fails, so that CI cannot
// pass by skipping what it was set up to test.
package backendtest

import (
	"os"
	"strings"
	"testing"
)

// Env is the variable listing the backends whose tests must not skip.
const Env = "SWITCHYARD_REQUIRE_BACKENDS"

// Required reports whether SWITCHYARD_REQUIRE_BACKENDS names backend (or
// "all").
func Required(backend string) bool {
	for _, b := range strings.FieldsFunc(os.Getenv(Env), func(r rune) bool { return r == ',' || r == ' ' }) {
		if b == backend || b == "all" {
			return true
		}
	}
	return false
}

// SkipUnlessRequired skips t, saying why, or fails it when the backend is
// required.
func SkipUnlessRequired(t testing.TB, backend, reason string) {
	t.Helper()
	if Required(backend) {
		t.Fatalf("%s: %s, and %s names %s", backend, reason, Env, backend)
		return
	}
	t.Skipf("%s: %s (set %s=%s to make this a failure)", backend, reason, Env, backend)
}
