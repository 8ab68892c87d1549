package wire_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed generated code must be what protoc produces from hal.proto
// today. Skips (with what is missing) when protoc or the Go plugins are not
// installed; .ci/install.d/grpc.sh installs them so CI runs it.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	var missing []string
	for _, tool := range []string{"protoc", "protoc-gen-go", "protoc-gen-go-grpc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Skipf("cannot regenerate: %s not on PATH (run .ci/install.d/grpc.sh)", strings.Join(missing, ", "))
	}
	const rel = "switchyard/hal/v1"
	out := t.TempDir()
	cmd := exec.Command("protoc", "--go_out="+out, "--go_opt=paths=source_relative",
		"--go-grpc_out="+out, "--go-grpc_opt=paths=source_relative", rel+"/hal.proto")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	for _, f := range []string{"hal.pb.go", "hal_grpc.pb.go"} {
		want, err := os.ReadFile(filepath.Join(out, rel, f))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(rel, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale: regenerate with\n  cd hal/wire && protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative %s/hal.proto", rel, f, rel)
		}
	}
}
