package xnnpack

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// libraryFree are the tests that pass without the vendor libraries.
var libraryFree = map[string]bool{"TestUnavailable": true, "TestNoReferenceFallbackImports": true,
	// the cost model (cost.go) is pure arithmetic over a plan
	"TestStructureFromPlan": true, "TestStructureGuess": true, "TestEstimateAgainstCPU": true, "BenchmarkBoundary": true, "TestRelowerCharged": true,
	// the op table (check.go) needs no library
	"TestCapabilitiesMatchSupports": true,
	// layout changes and strided copies (layout.go, gather.go) are Go
	"TestTransposeIntoLayouts": true, "TestStridedCopyMatchesSlices": true, "TestReshapePermKeepsBytes": true}

// TestSkipsWithoutLibraries runs this test binary again with the vendor
// libraries unfindable (hideLibsEnv): every test and benchmark that needs
// them must skip, saying that xnnpack is unavailable and why, and must fail
// instead when SWITCHYARD_REQUIRE_BACKENDS names xnnpack. The library-free
// tests pass either way. (.ci/run also runs the whole suite on a machine
// without the libraries; this is the same check, here on every machine.)
func TestSkipsWithoutLibraries(t *testing.T) {
	if os.Getenv(hideLibsEnv) == "1" {
		t.Skip("run by TestSkipsWithoutLibraries with the libraries hidden")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	child := func(require bool, args ...string) string {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SWITCHYARD_REQUIRE_BACKENDS=") && !strings.HasPrefix(kv, hideLibsEnv+"=") {
				env = append(env, kv)
			}
		}
		env = append(env, hideLibsEnv+"=1")
		if require {
			env = append(env, "SWITCHYARD_REQUIRE_BACKENDS=cabi,xnnpack")
		}
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		_ = cmd.Run() // the exit status follows the results, checked below
		if ctx.Err() != nil {
			t.Fatalf("child run %v timed out:\n%s", args, out.String())
		}
		return out.String()
	}
	var tests []string
	for _, l := range strings.Split(child(false, "-test.list", "."), "\n") {
		if strings.HasPrefix(l, "Test") || strings.HasPrefix(l, "Benchmark") {
			tests = append(tests, l)
		}
	}
	if len(tests) < 10 {
		t.Fatalf("listed only %v", tests)
	}
	// a test starts "=== RUN   TestX", a benchmark "BenchmarkX"; both end
	// "--- STATUS: Name"
	res := regexp.MustCompile(`(?m)^--- (PASS|FAIL|SKIP): (\w+)(?: |$)`)
	run := regexp.MustCompile(`(?m)^(?:=== RUN   )?((?:Test|Benchmark)\w+)$`)
	for _, require := range []bool{false, true} {
		// benchmarks apart: they do not run after a failed test
		out := child(require, "-test.v", "-test.count=1", "-test.run=.", "-test.timeout=90s") +
			child(require, "-test.v", "-test.run=^$", "-test.bench=.", "-test.benchtime=1x", "-test.timeout=90s")
		// split the output by top-level test: RUN line … result line
		starts := run.FindAllStringSubmatchIndex(out, -1)
		seen := map[string]bool{}
		for _, m := range res.FindAllStringSubmatchIndex(out, -1) {
			status, name := out[m[2]:m[3]], out[m[4]:m[5]]
			body := ""
			for _, s := range starts {
				if out[s[2]:s[3]] == name && s[0] < m[0] {
					body = out[s[1]:m[0]]
				}
			}
			seen[name] = true
			// the reason: what is missing and the package that provides it
			want, msgs := "SKIP", []string{"xnnpack unavailable: ", "cannot open libpthreadpool-hidden-by-test.so.0 (Debian: apt-get install libpthreadpool0)"}
			if require {
				want, msgs[0] = "FAIL", "xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: "
			}
			switch {
			case name == "TestSkipsWithoutLibraries":
				want, msgs = "SKIP", []string{"run by TestSkipsWithoutLibraries"}
			case libraryFree[name]:
				want, msgs = "PASS", nil
			}
			hasAll := true
			for _, m := range msgs {
				hasAll = hasAll && strings.Contains(body, m)
			}
			if status != want || !hasAll {
				t.Errorf("libraries hidden, SWITCHYARD_REQUIRE_BACKENDS naming xnnpack=%v: %s: %s, want %s with %q; its output:\n%s", require, name, status, want, msgs, body)
			}
		}
		for _, name := range tests {
			// a benchmark that runs prints no "--- PASS" line
			if !seen[name] && !(libraryFree[name] && strings.HasPrefix(name, "Benchmark")) {
				t.Errorf("libraries hidden, required=%v: %s reported no result; output:\n%s", require, name, out)
			}
		}
	}
	t.Logf("%d tests and benchmarks checked: each skips with the reason, or fails when required", len(tests))
}
