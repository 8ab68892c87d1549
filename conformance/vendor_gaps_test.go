package conformance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// vendorSim is a backend outside the tree: no file in conformance/gaps.
func vendorSimOptions() sim.Options {
	return sim.Options{Name: "vendorsim", Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}
}

const vendorGapsJSON = `{"backend": "vendorsim", "expected_failures": [{"pattern": "/bcast-row$", "reason": "vendor: row broadcasting is off by one (ticket 42)"}]}`

// writeManifest writes a plugin manifest carrying the vendor's gaps.
func writeManifest(t *testing.T, gaps string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "vendorsim-plugin")
	if err := os.WriteFile(bin, []byte("not run"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("not run"))
	m := `{"name": "vendorsim", "version": "1.0.0", "kind": "process", "path": "vendorsim-plugin", "sha256": "` + hex.EncodeToString(sum[:]) + `",
	 "hal": {"min": "1.0", "max": "1.1"}, "gaps": ` + gaps + `}`
	file := filepath.Join(dir, "vendorsim.json")
	if err := os.WriteFile(file, []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func vendorHarness() conformance.Harness {
	opts := vendorSimOptions()
	h := conformance.Harness{Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(sim.New(opts), hal.LoadLinked) }}
	h.Filter = regexp.MustCompile(`^op/Add/float32/(same|bcast-row)$`)
	return h
}

// A plugin's manifest carries its vendor's gaps: the suite applies them,
// the report records where they came from, the signed certificate covers
// them, verify-report's summary lists them, and a certificate whose gaps
// were edited afterwards is refused.
func TestVendorGapsFromManifest(t *testing.T) {
	h := vendorHarness()
	h.Manifest = writeManifest(t, vendorGapsJSON)
	rep, err := conformance.Execute(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if r := result(t, rep, "op/Add/float32/bcast-row"); r.Status != conformance.ExpectedFailure || r.Gap == nil || !strings.Contains(r.Gap.Reason, "ticket 42") {
		t.Fatalf("bcast-row: %s %v, want an expected failure under the vendor's gap", r.Status, r.Gap)
	}
	if src := rep.Gaps.Source; !strings.HasPrefix(src, conformance.GapsVendorManifest+" ") || !strings.HasSuffix(src, "vendorsim.json") {
		t.Fatalf("gaps source %q", src)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := rep.Sign(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := conformance.Verify(signed, pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := v.Summary()
	for _, want := range []string{"gaps declared for vendorsim (vendor-manifest ", "expected failure  /bcast-row$: vendor: row broadcasting is off by one (ticket 42)"} {
		if !strings.Contains(sum, want) {
			t.Errorf("verified summary lacks %q:\n%s", want, sum)
		}
	}
	for name, edit := range map[string]func(string) string{
		"reason":  func(s string) string { return strings.Replace(s, "ticket 42", "ticket 43", 1) },
		"pattern": func(s string) string { return strings.Replace(s, `"/bcast-row$"`, `"bcast"`, 1) },
		"source": func(s string) string {
			return strings.Replace(s, `"source": "vendor-manifest `, `"source": "builtin `, 1)
		},
	} {
		edited := edit(string(signed))
		if edited == string(signed) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := conformance.Verify([]byte(edited), pub); !errors.Is(err, conformance.ErrTampered) {
			t.Errorf("a certificate whose vendor gaps' %s was edited: %v, want ErrTampered", name, err)
		}
	}
}

type declaringSim struct {
	*sim.Backend
	gaps string
}

func (d declaringSim) ConformanceGaps() []byte { return []byte(d.gaps) }

// A vendor's Go package declares its gaps itself (GapDeclarer).
func TestVendorGapsFromPackage(t *testing.T) {
	h := vendorHarness()
	h.Open = func(ctx context.Context) (*hal.Device, error) {
		return hal.NewDevice(declaringSim{sim.New(vendorSimOptions()), vendorGapsJSON}, hal.LoadLinked)
	}
	rep, err := conformance.Execute(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gaps.Source != conformance.GapsVendorPackage {
		t.Fatalf("gaps source %q", rep.Gaps.Source)
	}
	if r := result(t, rep, "op/Add/float32/bcast-row"); r.Status != conformance.ExpectedFailure {
		t.Fatalf("bcast-row: %s", r.Status)
	}
}

// Vendor gaps that name another backend, set their own source, or belong
// to an in-tree backend (which keeps its gaps in conformance/gaps) are
// refused before anything runs.
func TestVendorGapsRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		gaps, backend, want string
	}{
		"other backend": {`{"backend": "someone-else"}`, "vendorsim", `for backend "someone-else"`},
		"own source":    {`{"backend": "vendorsim", "source": "builtin"}`, "vendorsim", "set by the suite"},
		"in-tree":       {`{"backend": "sim"}`, "sim", "both in conformance/gaps"},
	} {
		h := vendorHarness()
		opts := vendorSimOptions()
		opts.Name = tc.backend
		gaps := tc.gaps
		h.Open = func(ctx context.Context) (*hal.Device, error) {
			return hal.NewDevice(declaringSim{sim.New(opts), gaps}, hal.LoadLinked)
		}
		if _, err := conformance.Execute(context.Background(), h); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := conformance.ManifestGaps(writeManifest(t, `[]`)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("a manifest whose gaps are not an object: %v", err)
	}
}
