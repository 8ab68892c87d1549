package native

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The committed vector math assembly (vmath.go) and its Go declarations must be what
// the avo generator internal/asmgenvm produces today.
func TestGeneratedVMathIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the generator")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "asmgenvm")
	build := exec.Command(goTool, "build", "-o", bin, "./internal/asmgenvm")
	build.Env = append(os.Environ(), "GOOS=", "GOARCH=", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the generator: %v\n%s", err, out)
	}
	gen := exec.Command(bin, "-out", "vmath_amd64.s", "-stubs", "vmath_stubs_amd64.go", "-pkg", "native")
	gen.Dir = dir
	if out, err := gen.CombinedOutput(); err != nil {
		t.Fatalf("running the generator: %v\n%s", err, out)
	}
	for _, f := range []string{"vmath_amd64.s", "vmath_stubs_amd64.go"} {
		want, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: regenerate with `go generate ./plugins/native`", f)
		}
	}
}
