package xnnpack

import (
	"context"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"os"
	"testing"

	"github.com/ebitengine/purego"
)

// hideLibsEnv, set to 1, makes this test binary look for vendor libraries
// that do not exist, as on a machine without them (TestSkipsWithoutLibraries
// runs the binary again that way).
const hideLibsEnv = "SWITCHYARD_XNNPACK_TEST_HIDE_LIBS"

func init() {
	if os.Getenv(hideLibsEnv) == "1" {
		defaultLibrary = "libXNNPACK-hidden-by-test.so.0"
		defaultThreadPoolLibrary = "libpthreadpool-hidden-by-test.so.0"
		defaultFFILibrary = "libffi-hidden-by-test.so.8"
	}
}

// Required reports whether SWITCHYARD_REQUIRE_BACKENDS names xnnpack: then a
// missing library fails the tests instead of skipping them.
func Required() bool { return backendtest.Required(Name) }

// OpenForTest opens the backend, closed at the end of the test. Where the
// libraries are missing it skips the test with the reason, or fails it
// when SWITCHYARD_REQUIRE_BACKENDS names xnnpack. Every test that needs
// the library starts here.
func OpenForTest(t testing.TB, opts Options) *Backend {
	t.Helper()
	b, err := New(context.Background(), opts)
	if err != nil {
		if Required() {
			t.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		t.Skipf("xnnpack unavailable: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// VendorLibrary is one library New opens by default, with its Debian
// package.
type VendorLibrary struct{ Name, Package string }

// VendorLibraries are the default vendor libraries, in the order New opens
// them (the names this test binary uses: hidden ones under hideLibsEnv).
func VendorLibraries() []VendorLibrary {
	return []VendorLibrary{{defaultThreadPoolLibrary, "libpthreadpool0"}, {defaultLibrary, "libxnnpack0"}, {defaultFFILibrary, "libffi8"}}
}

// Loadable reports whether the dynamic loader can open the library now,
// checked independently of New.
func Loadable(name string) bool {
	h, err := purego.Dlopen(name, purego.RTLD_LAZY|purego.RTLD_LOCAL)
	if err != nil {
		return false
	}
	_ = purego.Dlclose(h)
	return true
}
