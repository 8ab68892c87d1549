package cabi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
)

// sdkDir finds sdk/c from the package directory.
func sdkDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "sdk", "c")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod)")
		}
		dir = parent
	}
}

// buildC compiles C sources of sdk/c (paths relative to it) into a shared
// library in a fresh temporary directory. It skips the test when gcc is
// missing (fails when SWITCHYARD_REQUIRE_BACKENDS names cabi) or when the
// platform cannot load C delegates.
func buildC(t testing.TB, out string, src string, defines ...string) string {
	t.Helper()
	if !supported {
		backendtest.SkipUnlessRequired(t, "cabi", "C delegates are not supported on this platform")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		backendtest.SkipUnlessRequired(t, "cabi", "gcc is not installed; cannot build the C delegates (install gcc or see .ci/install.d/cabi.sh)")
	}
	sdk := sdkDir(t)
	lib := filepath.Join(t.TempDir(), out)
	args := []string{"-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-pthread", "-fvisibility=hidden", "-I", filepath.Join(sdk, "include"), "-o", lib}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	args = append(args, filepath.Join(sdk, src))
	cmd := exec.Command(cc, args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", src, err, msg)
	}
	return lib
}

func exampleLib(t testing.TB) string {
	return buildC(t, "libswitchyard_example.so", "example/example_delegate.c")
}

func brokenLib(t testing.TB, variant string) string {
	return buildC(t, "libbroken_"+strings.ToLower(variant)+".so", "testdata/broken_delegate.c", "BROKEN_"+variant)
}
