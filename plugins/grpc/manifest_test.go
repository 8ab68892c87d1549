package grpcplugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Bad manifests are reported with file and field and skipped; good ones
// are registered; a checksum mismatch is registered but refused at open
// with both hashes named; verification status is visible.
func TestDiscoveryAndRegistration(t *testing.T) {
	path, sum := simPlugin(t)
	dir := t.TempDir()
	other := t.TempDir()
	write(t, dir, "a-good.json", `{"name":"simproc","version":"1.0.0","kind":"process","path":"`+path+`","sha256":"`+sum+`","hal":{"min":"1.0","max":"1.0"},"device":"simulated","env":{"SWITCHYARD_SIM_OPTIONS":"{\"name\":\"simproc\",\"ops\":[\"Relu\"]}"}}`)
	write(t, dir, "b-badsum.json", `{"name":"tampered","version":"1.0.0","kind":"process","path":"`+path+`","sha256":"`+strings.Repeat("0", 64)+`","hal":{"min":"1.0","max":"1.0"},"env":{"SWITCHYARD_SIM_OPTIONS":"{\"name\":\"tampered\",\"ops\":[\"Relu\"]}"}}`)
	badKind := write(t, dir, "c-badkind.json", `{"name":"x","version":"1","kind":"daemon","path":"x","sha256":"`+sum+`","hal":{"min":"1.0","max":"1.0"}}`)
	badHAL := write(t, dir, "d-badhal.json", `{"name":"y","version":"1","kind":"process","path":"y","sha256":"`+sum+`","hal":{"min":"one","max":"1.0"}}`)
	badJSON := write(t, dir, "e-badjson.json", `{"name":`)
	badSum := write(t, dir, "f-badsumfield.json", `{"name":"z","version":"1","kind":"process","path":"z","sha256":"xyz","hal":{"min":"1.0","max":"1.0"}}`)
	foreign := write(t, dir, "g-foreign.json", `{"name":"w","version":"1","kind":"process","path":"w","sha256":"`+sum+`","hal":{"min":"1.0","max":"1.0"},"platforms":["plan9/mips"]}`)
	dup := write(t, other, "dup.json", `{"name":"simproc","version":"2","kind":"process","path":"`+path+`","sha256":"`+sum+`","hal":{"min":"1.0","max":"1.0"}}`)
	write(t, dir, "h-library.json", `{"name":"clib","version":"1","kind":"library","path":"libx.so","sha256":"`+sum+`","hal":{"min":"1.0","max":"1.0"}}`)

	r := hal.NewRegistry()
	regs, problems := grpcplugin.Register(r, []string{dir, other, filepath.Join(dir, "missing")}, grpcplugin.Options{Logger: quietLogger(t)})
	wantProblems := map[string]string{badKind: `"kind"`, badHAL: `"hal.min"`, badJSON: "not valid manifest JSON", badSum: `"sha256"`, foreign: `"platforms"`, dup: `"name"`}
	if len(problems) != len(wantProblems) {
		t.Errorf("%d problems, want %d: %v", len(problems), len(wantProblems), problems)
	}
	for _, p := range problems {
		var me *manifest.ManifestError
		if !errors.As(p, &me) {
			t.Errorf("problem %v is not a ManifestError", p)
			continue
		}
		if want, ok := wantProblems[me.File]; !ok || !strings.Contains(p.Error(), want) || !strings.Contains(p.Error(), me.File) {
			t.Errorf("problem %q: want file and %s named", p, want)
		}
	}
	status := map[string]grpcplugin.Registered{}
	for _, reg := range regs {
		status[reg.Manifest.Name] = reg
	}
	if !status["simproc"].Verification.OK || status["simproc"].Err != nil {
		t.Errorf("simproc: %+v", status["simproc"])
	}
	if v := status["tampered"].Verification; v.OK || !strings.Contains(v.Reason, sum) {
		t.Errorf("tampered: %+v", v)
	}
	if _, listed := status["clib"]; listed {
		t.Error("a library manifest was handled as a process plugin (plugins/cabi registers those)")
	}
	if got := strings.Join(r.Names(), ","); got != "simproc,tampered" {
		t.Fatalf("registered %s", got)
	}
	for _, e := range r.List() {
		if e.Kind != hal.LoadProcess {
			t.Errorf("%s has kind %s", e.Info.Name, e.Kind)
		}
	}
	ctx := context.Background()
	d, err := r.Open(ctx, "simproc")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Info().Description, "verified") {
		t.Errorf("description %q does not show verification", d.Info().Description)
	}
	_ = d.Close()
	_, err = r.Open(ctx, "tampered")
	if err == nil || !strings.Contains(err.Error(), sum) || !strings.Contains(err.Error(), strings.Repeat("0", 64)) {
		t.Fatalf("tampered plugin: %v", err)
	}
}
