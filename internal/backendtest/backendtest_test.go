package backendtest

import "testing"

func TestRequired(t *testing.T) {
	for env, want := range map[string]bool{"": false, "cabi": true, "grpc,cabi": true, "grpc cabi": true, "all": true, "xnnpack": false, "cabix": false} {
		t.Setenv(Env, env)
		if got := Required("cabi"); got != want {
			t.Errorf("%s=%q: Required(cabi) = %v", Env, env, got)
		}
	}
}

// fakeTB records how SkipUnlessRequired ended the test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestSkipUnlessRequired(t *testing.T) {
	t.Setenv(Env, "")
	f := &fakeTB{}
	SkipUnlessRequired(f, "grpc", "no memfd")
	if !f.skipped || f.failed {
		t.Fatalf("not required: skipped %v, failed %v", f.skipped, f.failed)
	}
	t.Setenv(Env, "grpc")
	f = &fakeTB{}
	SkipUnlessRequired(f, "grpc", "no memfd")
	if f.skipped || !f.failed {
		t.Fatalf("required: skipped %v, failed %v", f.skipped, f.failed)
	}
}
