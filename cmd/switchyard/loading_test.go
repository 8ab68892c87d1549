package main

import (
	"bytes"
	"fmt"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/sealed"
)

// syEnv runs the CLI with extra environment entries; stdout and stderr
// come back apart.
func syEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// cLibrary builds a variant of sdk/c/testdata/broken_delegate.c; it skips
// without gcc unless SWITCHYARD_REQUIRE_BACKENDS names cabi.
func cLibrary(t *testing.T, variant string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	if err != nil {
		if backendtest.Required("cabi") {
			t.Fatalf("gcc is not installed and SWITCHYARD_REQUIRE_BACKENDS names cabi: %v", err)
		}
		t.Skip("gcc is not installed; cannot build the C test delegates")
	}
	sdk, err := filepath.Abs(filepath.Join("..", "..", "sdk", "c"))
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(t.TempDir(), "lib"+strings.ToLower(variant)+".so")
	out, err := exec.Command(cc, "-O2", "-std=c11", "-Wall", "-Werror", "-fPIC", "-shared", "-fvisibility=hidden", "-I", filepath.Join(sdk, "include"), "-DBROKEN_"+variant, "-o", lib, filepath.Join(sdk, "testdata", "broken_delegate.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("building %s: %v\n%s", variant, err, out)
	}
	return lib
}

// Finding 10: a C library whose constructor calls exit(3) does not end
// `switchyard backends` (nor `library`, nor a run that would pick it by
// default): it is probed in a child process and listed as unavailable
// with the exit status, the step and what it printed.
func TestLibraryConstructorExitIsReported(t *testing.T) {
	lib := cLibrary(t, "CTOR_EXIT")
	env := []string{"SWITCHYARD_LIBRARIES=exiting=" + lib}
	out, errOut, code := syEnv(t, env, "backends")
	if code != 0 || !strings.Contains(out, "cpu") {
		t.Fatalf("backends: exit %d\n%s\n%s", code, out, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "exiting ") {
			row = l
		}
	}
	for _, w := range []string{"no", "exit status 3", "while loading the library", lib, "giving up in my constructor"} {
		if !strings.Contains(row, w) {
			t.Errorf("backends row %q does not say %q", row, w)
		}
	}

	out, errOut, code = syEnv(t, nil, "library", lib)
	if code != 1 || !strings.Contains(out, "REFUSED (unavailable)") || !strings.Contains(out, "exit status 3") {
		t.Errorf("library: exit %d\n%s\n%s", code, out, errOut)
	}
	good := cLibrary(t, "EXECUTE")
	out, _, code = syEnv(t, nil, "library", "--json", good)
	if code != 0 || !strings.Contains(out, `"loaded": true`) || !strings.Contains(out, `"sha256"`) {
		t.Errorf("library of a good delegate: exit %d\n%s", code, out)
	}

	out, errOut, code = syEnv(t, env, "run")
	if code != 0 || !strings.Contains(out, "probabilities") || !strings.Contains(errOut, "backend exiting skipped") || !strings.Contains(errOut, "exit status 3") {
		t.Errorf("run with the library registered: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Finding 11: a plugin whose binary does not match its manifest's sha256
// is not skipped silently: every command says so on stderr with both
// hashes, `backends` lists it as unavailable with both hashes, and a run
// with the default backends goes on without it. Finding 5: a manifest in
// a world-writable directory is refused and `plugins` lists it as such.
func TestTamperedAndInsecurePluginsAreSaid(t *testing.T) {
	dir := t.TempDir()
	binPath := filepath.Join(dir, "tampered-plugin")
	must(t, os.WriteFile(binPath, []byte("#!/bin/sh\necho not the plugin\n"), 0o755))
	actual, err := sealed.HashFile(binPath, 0)
	must(t, err)
	claimed := strings.Repeat("ab", 32)
	must(t, os.WriteFile(filepath.Join(dir, "tampered.json"), []byte(fmt.Sprintf(`{"name":"tampered","version":"1","kind":"process","path":"tampered-plugin","sha256":%q,"hal":{"min":"1.0","max":"1.1"}}`, claimed)), 0o644))
	open := filepath.Join(t.TempDir(), "open")
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Chmod(open, 0o777))
	must(t, os.WriteFile(filepath.Join(open, "planted.json"), []byte(fmt.Sprintf(`{"name":"planted","version":"1","kind":"process","path":%q,"sha256":%q,"hal":{"min":"1.0","max":"1.1"}}`, binPath, actual)), 0o644))
	env := []string{"SWITCHYARD_PLUGIN_PATH=" + open + ":" + dir}

	out, errOut, code := syEnv(t, env, "backends")
	if code != 0 {
		t.Fatalf("backends: exit %d\n%s\n%s", code, out, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "tampered ") {
			row = l
		}
	}
	for _, w := range []string{"no", "checksum mismatch", actual, claimed} {
		if !strings.Contains(row, w) {
			t.Errorf("backends row %q does not say %q", row, w)
		}
	}
	if strings.Contains(out, "planted") {
		t.Errorf("a manifest from a world-writable directory was registered:\n%s", out)
	}
	for _, w := range []string{"plugin tampered", "will not be started", "checksum mismatch", actual, claimed, "world-writable directory without the sticky bit", sealed.EnvAllowInsecure} {
		if !strings.Contains(errOut, w) {
			t.Errorf("backends stderr does not say %q:\n%s", w, errOut)
		}
	}

	out, errOut, code = syEnv(t, env, "run")
	if code != 0 || !strings.Contains(out, "probabilities") || !strings.Contains(errOut, "checksum mismatch") || !strings.Contains(errOut, actual) || !strings.Contains(errOut, claimed) {
		t.Errorf("run with default backends: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := strings.Count(errOut, "checksum mismatch"); n != 1 {
		t.Errorf("the mismatch is said %d times, want once:\n%s", n, errOut)
	}

	out, _, code = syEnv(t, env, "plugins")
	if code != 0 || !strings.Contains(out, "REFUSED") || !strings.Contains(out, "planted.json") || !strings.Contains(out, "NOT verified") {
		t.Errorf("plugins: exit %d\n%s", code, out)
	}
	out, errOut, _ = syEnv(t, append(env, sealed.EnvAllowInsecure+"=1"), "plugins")
	if !strings.Contains(out, "INSECURE") || !strings.Contains(errOut, "loaded anyway") {
		t.Errorf("plugins with the opt-out:\n%s\n%s", out, errOut)
	}
}
