// Package depcheck lets tests assert what a package links: it runs
// `go list -deps` and reports the module packages found that a layering
// rule forbids.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is this module's import path.
const Module = "github.com/switchyard-hal/switchyard"

// Deps lists the import paths pkg depends on (itself included), as
// `go list -deps` prints them; test packages are not included. It skips
// the test when no go command is at hand.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies with")
	}
	out, err := exec.Command(goCmd, "list", "-deps", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v %s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

// Forbidden returns the dependencies of pkg for which bad is true.
func Forbidden(t testing.TB, pkg string, bad func(dep string) bool) []string {
	t.Helper()
	var found []string
	for _, d := range Deps(t, pkg) {
		if bad(d) {
			found = append(found, d)
		}
	}
	return found
}

// LinksKernels reports an import path that is a reference-kernel
// implementation (core/kernels/<group>, core/kernels/all) or the cpu
// backend; the core/kernels registry itself holds no kernel and is allowed.
func LinksKernels(dep string) bool {
	return strings.HasPrefix(dep, Module+"/core/kernels/") || dep == Module+"/plugins/cpu"
}
