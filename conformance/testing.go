package conformance

import (
	"context"
	"crypto/ed25519"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

// Environment variables Run reads, so CI and labs steer a backend's Go
// test without editing it.
const (
	// LevelEnv selects the level: "quick" (default) or "full".
	LevelEnv = "SWITCHYARD_CONFORMANCE_LEVEL"
	// FilterEnv keeps only case IDs matching this regexp.
	FilterEnv = "SWITCHYARD_CONFORMANCE_FILTER"
	// ReportEnv names a directory to write the JSON, JUnit and HTML reports
	// to; they are signed when SignKeyEnv names the lab's private key.
	ReportEnv = "SWITCHYARD_CONFORMANCE_REPORT"
)

// Run is the Go test entry point: a backend's conformance test is a
// Harness and one call. Every case becomes a subtest named by its ID
// (source/…): a failure or a stale gap entry fails it; a case the backend
// declined, a declared gap or a case that does not apply is skipped with
// its reason. Case failures never stop the run.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.SharedRoot == "" {
		h.SharedRoot = shared.Root()
		if h.SharedRoot == "" && shared.Required() {
			t.Fatal("conformance: ../shared is absent and SWITCHYARD_REQUIRE_SHARED=1")
		}
	}
	if h.Level == "" {
		h.Level = Level(os.Getenv(LevelEnv))
	}
	if f := os.Getenv(FilterEnv); f != "" && h.Filter == nil {
		re, err := regexp.Compile(f)
		if err != nil {
			t.Fatalf("conformance: %s: %v", FilterEnv, err)
		}
		h.Filter = re
	}
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-5*time.Second))
		defer cancel()
	}
	rep, err := Execute(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range rep.Results {
		res := res
		name := strings.TrimPrefix(res.ID, string(res.Source)+"/")
		t.Run(string(res.Source)+"/"+name, func(t *testing.T) {
			switch res.Status {
			case Pass:
				if res.Message != "" {
					t.Log(res.Message)
				}
			case Fail, UnexpectedPass:
				t.Errorf("%s", failureText(res))
			default:
				t.Skipf("%s: %s", res.Status, res.Message)
			}
		})
	}
	t.Log(rep.Summary())
	if dir := os.Getenv(ReportEnv); dir != "" {
		var key ed25519.PrivateKey
		if kf := os.Getenv(SignKeyEnv); kf != "" {
			if key, err = ReadPrivateKey(kf); err != nil {
				t.Fatalf("%s: %v", SignKeyEnv, err)
			}
		}
		paths, err := rep.WriteFiles(dir, key)
		if err != nil {
			t.Fatalf("writing reports: %v", err)
		}
		t.Logf("reports: %s", strings.Join(paths, ", "))
	}
}
