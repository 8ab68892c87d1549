// Package shared locates the external test material in ../shared (beside
// the repository root) for tests. Tests skip with a clear message when it is
// absent, and fail instead when SWITCHYARD_REQUIRE_SHARED=1.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// Root returns the absolute path of ../shared relative to the repository
// root (found by walking up to go.mod), or "" if it does not exist.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared")
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				return filepath.Clean(p)
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Required reports whether SWITCHYARD_REQUIRE_SHARED=1.
func Required() bool { return os.Getenv("SWITCHYARD_REQUIRE_SHARED") == "1" }

// Path returns ../shared/<rel>, skipping the test (or failing it when the
// material is required) if it is missing.
func Path(t testing.TB, rel string) string {
	t.Helper()
	root := Root()
	p := filepath.Join(root, rel)
	if root != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	msg := "external test material ../shared/" + rel + " is absent (it lives beside the checkout; see README)"
	if Required() {
		t.Fatalf("%s, and SWITCHYARD_REQUIRE_SHARED=1", msg)
	}
	t.Skip(msg)
	return ""
}
