package native

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedAssemblyIsCurrent: every file a //go:generate line of this
// package writes (the avo generators under internal/, run as
// `go run ./internal/GEN -out F.s -stubs F.go -pkg native`) is what that
// generator produces today. The go:generate lines are the list: a new
// generator is checked as soon as it is declared.
func TestGeneratedAssemblyIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the generators")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH: %v", err)
	}
	gens := generateLines(t)
	if len(gens) < 5 {
		t.Fatalf("found %d go:generate lines, expected the five avo generators at least", len(gens))
	}
	for _, args := range gens {
		pkg := args[0]
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, filepath.Base(pkg))
			build := exec.Command(goTool, "build", "-o", bin, pkg)
			build.Env = append(os.Environ(), "GOOS=", "GOARCH=", "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building %s: %v\n%s", pkg, err, out)
			}
			gen := exec.Command(bin, args[1:]...)
			gen.Dir = dir
			if out, err := gen.CombinedOutput(); err != nil {
				t.Fatalf("running %s: %v\n%s", pkg, err, out)
			}
			for i, a := range args {
				if a != "-out" && a != "-stubs" || i+1 >= len(args) {
					continue
				}
				f := args[i+1]
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
		})
	}
}

// generateLines returns the arguments after `go run` of every
// //go:generate line of the package's Go files.
func generateLines(t *testing.T) [][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			rest, ok := strings.CutPrefix(sc.Text(), "//go:generate go run ")
			if !ok {
				continue
			}
			out = append(out, strings.Fields(rest))
		}
		_ = f.Close()
	}
	return out
}
