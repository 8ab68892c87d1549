package conformance_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// labKeys makes a lab key pair through the key files, as keygen does.
func labKeys(t *testing.T) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	privPath, pubPath, _, err := conformance.GenerateKeyPair(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	priv, err := conformance.ReadPrivateKey(privPath)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := conformance.ReadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// gapReport is a small run with one pass, one expected failure and one
// declared-unsupported case.
func gapReport(t *testing.T) *conformance.Report {
	t.Helper()
	g, err := conformance.ParseGaps([]byte(`{"backend":"sim",
		"unsupported":[{"pattern":"^op/Add/float32/scalars$","reason":"no scalar path"}],
		"expected_failures":[{"pattern":"^op/Add/float32/bcast-row$","reason":"broadcast bug #12"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h := simHarness(sim.Options{Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^op/Add/float32/(same|bcast-row|scalars)$")
	h.Gaps = g
	rep := run(t, h)
	st := rep.Certification.Totals.ByStatus
	if st[conformance.Pass] != 1 || st[conformance.ExpectedFailure] != 1 || st[conformance.Unsupported] != 1 {
		t.Fatalf("statuses %v, want 1 pass, 1 expected-failure, 1 unsupported", st)
	}
	return rep
}

// failReport is a small run with one failure.
func failReport(t *testing.T) *conformance.Report {
	t.Helper()
	return run(t, simHarness(sim.Options{Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^op/Add/float32/(same|bcast-row)$"))
}

// jsonEdit decodes a report's JSON (numbers verbatim), applies f and
// encodes it again, seal untouched: an edit by hand.
func jsonEdit(t *testing.T, data []byte, f func(m map[string]any)) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(out, data) {
		t.Fatal("the edit changed nothing")
	}
	return out
}

func obj(m map[string]any, path ...string) map[string]any {
	for _, k := range path {
		m = m[k].(map[string]any)
	}
	return m
}

func results(m map[string]any) []any { return m["results"].([]any) }

func resultByID(m map[string]any, id string) map[string]any {
	for _, r := range results(m) {
		if r.(map[string]any)["id"] == id {
			return r.(map[string]any)
		}
	}
	panic("no result " + id)
}

func reseal(t *testing.T, data []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := conformance.Reseal(data, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sign(t *testing.T, r *conformance.Report, key ed25519.PrivateKey) []byte {
	t.Helper()
	b, err := r.Sign(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A genuine certificate is accepted with the lab key, re-indented too.
func TestCertificateGenuineAccepted(t *testing.T) {
	priv, pub := labKeys(t)
	rep := gapReport(t)
	b := sign(t, rep, priv)
	v, err := conformance.Verify(b, pub)
	if err != nil {
		t.Fatalf("genuine certificate: %v", err)
	}
	if !v.Signed || v.Seal.Algorithm != conformance.AlgEd25519 || v.Seal.KeyID != conformance.KeyID(pub) {
		t.Errorf("verified %+v, seal %+v", v.Signed, v.Seal)
	}
	var anyv any
	_ = json.Unmarshal(b, &anyv)
	compact, _ := json.Marshal(anyv)
	if _, err := conformance.Verify(compact, pub); err != nil {
		t.Errorf("re-encoded certificate: %v", err)
	}
	if v, err := conformance.Verify(b, nil); err != nil || v.Signed {
		t.Errorf("without a key: signed=%v err=%v (want an unchecked integrity pass)", v != nil && v.Signed, err)
	}
	self, _ := os.Executable()
	if err := conformance.VerifyBinary(self, v.Report); err != nil {
		t.Errorf("the linked executable: %v", err)
	}
}

// Every way a vendor without the lab's private key might forge a
// certificate is refused by Verify with the lab's public key.
func TestCertificateForgeriesRejected(t *testing.T) {
	priv, pub := labKeys(t)
	vendor, _ := labKeys(t) // a vendor's own key pair
	rep := gapReport(t)
	genuine := sign(t, rep, priv)
	sealOf := func(m map[string]any) map[string]any { return m["seal"].(map[string]any) }
	passAll := func(m map[string]any) {
		// the expected failure becomes a pass; totals and verdict fixed to match
		r := resultByID(m, "op/Add/float32/bcast-row")
		r["status"] = "pass"
		delete(r, "gap")
		delete(r, "mismatches")
		g := obj(m, "gaps")
		delete(g, "expected_failures")
		st := obj(m, "certification", "totals", "by_status")
		st["pass"], st["expected-failure"] = json.Number("2"), nil
		delete(st, "expected-failure")
		src := obj(m, "certification", "totals", "by_source", "op")
		src["pass"] = json.Number("2")
		delete(src, "expected-failure")
	}
	for _, tc := range []struct {
		name string
		make func() []byte
		want error
	}{
		{"edited counts", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) {
				obj(m, "certification", "totals", "by_status")["pass"] = json.Number("3")
			})
		}, conformance.ErrTampered},
		{"edited results, counts and verdict, plain hash recomputed", func() []byte {
			return reseal(t, jsonEdit(t, genuine, passAll), nil)
		}, conformance.ErrUnsigned},
		{"edited counts, plain hash recomputed", func() []byte {
			return reseal(t, jsonEdit(t, genuine, func(m map[string]any) {
				obj(m, "certification")["certified"] = true
			}), nil)
		}, conformance.ErrUnsigned},
		{"downgraded: signature replaced by its sha256 digest", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) {
				s := sealOf(m)
				s["algorithm"] = "sha256"
				delete(s, "signature")
				delete(s, "key_id")
			})
		}, conformance.ErrUnsigned},
		{"downgraded: signature stripped", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) { delete(sealOf(m), "signature") })
		}, conformance.ErrUnsigned},
		{"downgraded: no seal", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) { delete(m, "seal") })
		}, conformance.ErrUnsigned},
		{"downgraded: Ed25519 to HMAC under a key the vendor chose", func() []byte {
			edited := jsonEdit(t, genuine, passAll)
			canon, err := conformance.Canonical(edited)
			if err != nil {
				t.Fatal(err)
			}
			mac := hmac.New(sha256.New, []byte("vendor-secret"))
			mac.Write(canon)
			return jsonEdit(t, edited, func(m map[string]any) {
				m["seal"] = map[string]any{"algorithm": "hmac-sha256", "digest": hex.EncodeToString(mac.Sum(nil))}
			})
		}, conformance.ErrWrongKey},
		{"signed by the vendor's own Ed25519 key", func() []byte {
			return reseal(t, jsonEdit(t, genuine, passAll), vendor)
		}, conformance.ErrWrongKey},
		{"vendor signature under the lab's key id", func() []byte {
			return jsonEdit(t, reseal(t, jsonEdit(t, genuine, passAll), vendor), func(m map[string]any) {
				sealOf(m)["key_id"] = conformance.KeyID(pub)
			})
		}, conformance.ErrTampered},
		{"lab signature moved onto edited content", func() []byte {
			return jsonEdit(t, genuine, passAll)
		}, conformance.ErrTampered},
		{"binary sha256 swapped", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) {
				obj(m, "certification", "binary")["sha256"] = strings.Repeat("ab", 32)
			})
		}, conformance.ErrTampered},
		{"binary path swapped", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) {
				obj(m, "certification", "binary")["path"] = "/opt/vendor/plugin-v2"
			})
		}, conformance.ErrTampered},
		{"file list added", func() []byte {
			return jsonEdit(t, genuine, func(m map[string]any) {
				m["files"] = []any{map[string]any{"name": "junit.xml", "sha256": strings.Repeat("cd", 32)}}
			})
		}, conformance.ErrTampered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged := tc.make()
			_, err := conformance.Verify(forged, pub)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if tc.want == conformance.ErrUnsigned && !strings.Contains(err.Error(), "NOT CERTIFIED: unsigned") {
				t.Errorf("message %q does not say NOT CERTIFIED: unsigned", err)
			}
		})
	}
	// without the key a recomputed digest passes (that is why a verifier
	// needs the key), unless the counts disagree with the results
	if v, err := conformance.Verify(reseal(t, jsonEdit(t, genuine, passAll), nil), nil); err != nil || v.Signed {
		t.Errorf("integrity-only check of a consistent forgery: signed=%v err=%v", v != nil && v.Signed, err)
	}
	forged := reseal(t, jsonEdit(t, genuine, func(m map[string]any) { obj(m, "certification")["passed"] = false }), nil)
	if _, err := conformance.Verify(forged, nil); !errors.Is(err, conformance.ErrInconsistent) {
		t.Errorf("integrity-only check of edited counts: %v, want ErrInconsistent", err)
	}
	// a schema downgrade is not read at all
	if _, err := conformance.Verify(jsonEdit(t, genuine, func(m map[string]any) { m["schema"] = "switchyard.conformance.report/v1" }), pub); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("v1 schema: %v", err)
	}
}

// A report signed by the lab's key but whose stated totals or verdict
// disagree with its results and gaps is refused: the verdict is
// recomputed, never taken from the record.
func TestCertificateVerdictRecomputed(t *testing.T) {
	priv, pub := labKeys(t)
	for _, base := range []struct {
		name string
		rep  *conformance.Report
	}{{"gaps", gapReport(t)}, {"failure", failReport(t)}} {
		genuine := sign(t, base.rep, priv)
		if _, err := conformance.Verify(genuine, pub); err != nil {
			t.Fatalf("%s: genuine: %v", base.name, err)
		}
		edits := map[string]func(m map[string]any){
			"cases":  func(m map[string]any) { obj(m, "certification", "totals")["cases"] = json.Number("7") },
			"status": func(m map[string]any) { obj(m, "certification", "totals", "by_status")["pass"] = json.Number("5") },
			"zero":   func(m map[string]any) { obj(m, "certification", "totals", "by_status")["fail"] = json.Number("0") },
			"source": func(m map[string]any) {
				obj(m, "certification", "totals", "by_source", "op")["pass"] = json.Number("9")
			},
			"passed":  func(m map[string]any) { c := obj(m, "certification"); c["passed"] = c["passed"] != true },
			"certify": func(m map[string]any) { obj(m, "certification")["certified"] = true },
			"complete": func(m map[string]any) {
				c := obj(m, "certification")
				c["complete"] = c["complete"] != true
			},
			"case set": func(m map[string]any) { obj(m, "certification")["case_set_size"] = json.Number("1") },
			"no binary": func(m map[string]any) {
				obj(m, "certification", "binary")["sha256"] = ""
			},
			"duplicate result": func(m map[string]any) { m["results"] = append(results(m), results(m)[0]) },
			"unknown status":   func(m map[string]any) { results(m)[0].(map[string]any)["status"] = "passed" },
			"foreign shard": func(m map[string]any) {
				obj(m, "certification")["shards"] = []any{map[string]any{"index": json.Number("0"), "count": json.Number("1000")}}
			},
		}
		if base.name == "gaps" {
			edits["expected failure without its gap"] = func(m map[string]any) { delete(obj(m, "gaps"), "expected_failures") }
			edits["unsupported without its gap"] = func(m map[string]any) { delete(obj(m, "gaps"), "unsupported") }
			edits["gap reference edited"] = func(m map[string]any) {
				resultByID(m, "op/Add/float32/bcast-row")["gap"].(map[string]any)["reason"] = "fixed upstream"
			}
			edits["declared gap widened"] = func(m map[string]any) {
				// the failing case is declared expected and the passing one too
				obj(m, "gaps")["expected_failures"].([]any)[0].(map[string]any)["pattern"] = "^op/Add/float32/(bcast-row|same)$"
			}
		} else {
			edits["failure relabelled expected with a made-up gap"] = func(m map[string]any) {
				r := resultByID(m, "op/Add/float32/bcast-row")
				r["status"] = "expected-failure"
				r["gap"] = map[string]any{"kind": "expected-failure", "pattern": ".*", "reason": "known"}
				st := obj(m, "certification", "totals", "by_status")
				delete(st, "fail")
				st["expected-failure"] = json.Number("1")
				src := obj(m, "certification", "totals", "by_source", "op")
				delete(src, "fail")
				src["expected-failure"] = json.Number("1")
				obj(m, "certification")["passed"] = true
			}
		}
		for name, edit := range edits {
			// signed by the lab's own key: only the recomputation catches it
			forged := reseal(t, jsonEdit(t, genuine, edit), priv)
			if _, err := conformance.Verify(forged, pub); !errors.Is(err, conformance.ErrInconsistent) {
				t.Errorf("%s/%s: Verify = %v, want ErrInconsistent", base.name, name, err)
			}
		}
	}
	// and Sign refuses to sign such a report
	rep := failReport(t)
	rep.Certification.Passed = true
	if _, err := rep.Sign(priv); !errors.Is(err, conformance.ErrInconsistent) {
		t.Errorf("Sign of an inconsistent report: %v", err)
	}
}

// The JUnit and HTML files are covered: the signed JSON lists their sha256
// and each carries the digest of the report it renders.
func TestCertificateCoversJUnitAndHTML(t *testing.T) {
	priv, pub := labKeys(t)
	rep := failReport(t)
	dir := t.TempDir()
	if _, err := rep.WriteFiles(dir, priv); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(dir, conformance.JSONFile)
	load := func() *conformance.Report {
		b, err := os.ReadFile(jsonPath)
		if err != nil {
			t.Fatal(err)
		}
		v, err := conformance.Verify(b, pub)
		if err != nil {
			t.Fatal(err)
		}
		return v.Report
	}
	v := load()
	checked, missing, err := conformance.VerifyFiles(dir, v)
	if err != nil || len(checked) != 2 || len(missing) != 0 {
		t.Fatalf("genuine files: checked %v missing %v err %v", checked, missing, err)
	}
	content, err := v.ContentDigest()
	if err != nil {
		t.Fatal(err)
	}
	junit, _ := os.ReadFile(filepath.Join(dir, conformance.JUnitFile))
	html, _ := os.ReadFile(filepath.Join(dir, conformance.HTMLFile))
	for name, b := range map[string][]byte{"junit": junit, "html": html} {
		if !bytes.Contains(b, []byte(content)) || !bytes.Contains(b, []byte(conformance.KeyID(pub))) {
			t.Errorf("%s does not name the report digest %s and the signing key", name, content)
		}
	}
	restore := func() {
		_ = os.WriteFile(filepath.Join(dir, conformance.JUnitFile), junit, 0o644)
		_ = os.WriteFile(filepath.Join(dir, conformance.HTMLFile), html, 0o644)
	}
	for _, tc := range []struct {
		name, file string
		edit       func([]byte) []byte
	}{
		{"junit failures hidden", conformance.JUnitFile, func(b []byte) []byte {
			return regexp.MustCompile(`failures="1"`).ReplaceAll(b, []byte(`failures="0"`))
		}},
		{"junit failure removed", conformance.JUnitFile, func(b []byte) []byte {
			return regexp.MustCompile(`(?s)<failure .*?</failure>`).ReplaceAll(b, nil)
		}},
		{"html badge", conformance.HTMLFile, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`badge fail">FAILED`), []byte(`badge pass">CERTIFIED`), 1)
		}},
	} {
		restore()
		p := filepath.Join(dir, tc.file)
		edited := tc.edit(append([]byte{}, map[string][]byte{conformance.JUnitFile: junit, conformance.HTMLFile: html}[tc.file]...))
		if bytes.Equal(edited, map[string][]byte{conformance.JUnitFile: junit, conformance.HTMLFile: html}[tc.file]) {
			t.Fatalf("%s: edit did not apply", tc.name)
		}
		if err := os.WriteFile(p, edited, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conformance.VerifyFiles(dir, load()); !errors.Is(err, conformance.ErrTampered) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: VerifyFiles = %v, want ErrTampered naming %s", tc.name, err, tc.file)
		}
		// listing the edited file's hash in the JSON breaks the signature
		sum := sha256File(t, p)
		b, _ := os.ReadFile(jsonPath)
		forged := jsonEdit(t, b, func(m map[string]any) {
			for _, f := range m["files"].([]any) {
				if f.(map[string]any)["name"] == tc.file {
					f.(map[string]any)["sha256"] = sum
				}
			}
		})
		if _, err := conformance.Verify(forged, pub); !errors.Is(err, conformance.ErrTampered) {
			t.Errorf("%s: JSON relisting the edited file: %v", tc.name, err)
		}
	}
	restore()
	// a JUnit file beside a report that does not list it is not covered
	only := t.TempDir()
	rep.Files = nil // WriteFiles listed them; a JSON-only certificate lists none
	b := sign(t, rep, priv)
	_ = os.WriteFile(filepath.Join(only, conformance.JSONFile), b, 0o644)
	_ = os.WriteFile(filepath.Join(only, conformance.JUnitFile), junit, 0o644)
	vb, err := conformance.Verify(b, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := conformance.VerifyFiles(only, vb.Report); !errors.Is(err, conformance.ErrTampered) {
		t.Errorf("unlisted junit.xml beside the report: %v", err)
	}
	// an unsigned write says so in every file
	udir := t.TempDir()
	if _, err := rep.WriteFiles(udir, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{conformance.JUnitFile, conformance.HTMLFile} {
		b, _ := os.ReadFile(filepath.Join(udir, f))
		if !bytes.Contains(b, []byte("NOT a certificate")) && !bytes.Contains(b, []byte("not a certificate")) {
			t.Errorf("unsigned %s does not say it is not a certificate", f)
		}
	}
}

// Merged shards verified against the lab key and re-signed by it are a
// certificate of the whole run.
func TestCertificateMergedShards(t *testing.T) {
	priv, pub := labKeys(t)
	filter := "^op/Add/float32/"
	var shards []*conformance.Report
	for i := 0; i < 2; i++ {
		h := simHarness(sim.Options{Ops: []string{"Add"}}, filter)
		h.Shard = conformance.Shard{Index: i, Count: 2}
		v, err := conformance.Verify(sign(t, run(t, h), priv), pub)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, v.Report)
	}
	m, err := conformance.Merge(shards)
	if err != nil {
		t.Fatal(err)
	}
	v, err := conformance.Verify(sign(t, m, priv), pub)
	if err != nil || !v.Certification.Complete || len(v.Certification.Shards) != 0 {
		t.Fatalf("merged certificate: %v", err)
	}
	full := run(t, simHarness(sim.Options{Ops: []string{"Add"}}, filter))
	if err := conformance.Equivalent(v.Report, full); err != nil {
		t.Errorf("merged vs full: %v", err)
	}
	// shards with other gap declarations do not merge
	other := *shards[1]
	other.Gaps = &conformance.Gaps{Backend: "sim", Unsupported: []conformance.Gap{{Pattern: "^nothing$", Reason: "r"}}}
	if _, err := conformance.Merge([]*conformance.Report{shards[0], &other}); err == nil || !strings.Contains(err.Error(), "gap") {
		t.Errorf("merging shards with different gaps: %v", err)
	}
}

// keygen's files: private 0600, public readable, never overwritten; a
// private key others may read is refused.
func TestLabKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lab")
	privPath, pubPath, pub, err := conformance.GenerateKeyPair(dir)
	if err != nil {
		t.Fatal(err)
	}
	if goruntime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{privPath: 0o600, pubPath: 0o644} {
			st, err := os.Stat(p)
			if err != nil || st.Mode().Perm() != want {
				t.Errorf("%s: mode %v err %v, want %v", p, st.Mode().Perm(), err, want)
			}
		}
	}
	if _, _, _, err := conformance.GenerateKeyPair(dir); err == nil || !strings.Contains(err.Error(), "overwrite") {
		t.Errorf("second keygen into the same directory: %v", err)
	}
	priv, err := conformance.ReadPrivateKey(privPath)
	if err != nil || !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatalf("private key: %v", err)
	}
	if p2, err := conformance.ReadPublicKey(pubPath); err != nil || !p2.Equal(pub) {
		t.Fatalf("public key: %v", err)
	}
	if _, err := conformance.ReadPublicKey(privPath); err == nil {
		t.Error("the private key file was read as a public key")
	}
	if goruntime.GOOS != "windows" {
		if err := os.Chmod(privPath, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := conformance.ReadPrivateKey(privPath); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("world-readable private key: %v", err)
		}
	}
}

// ---- binding the tested binary ----

// procBackend is a backend served by a "plugin process" the test started.
type procBackend struct {
	*sim.Backend
	pid *atomic.Int64
}

func (p procBackend) PID() int { return int(p.pid.Load()) }

// libBackend is a backend loaded from a "library" at path.
type libBackend struct {
	*sim.Backend
	path string
}

func (l libBackend) Path() string { return l.path }

// reportedBackend's loader says what it executed.
type reportedBackend struct {
	*sim.Backend
	path, sum string
}

func (r reportedBackend) LoadedBinary() (string, string, error) { return r.path, r.sum, nil }

func copyFile(t *testing.T, src, dst string, extra []byte) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, append(b, extra...), 0o755); err != nil {
		t.Fatal(err)
	}
}

// startPlugin runs a copy of sleep (plus extra trailing bytes, so each
// copy hashes differently) as a stand-in plugin process.
func startPlugin(t *testing.T, path string, extra string) int {
	t.Helper()
	if goruntime.GOOS != "linux" {
		t.Skip("reads /proc/PID/exe")
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary to stand in for a plugin process")
	}
	copyFile(t, sleep, path, []byte(extra))
	cmd := exec.Command(path, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func harnessOf(b hal.Backend, kind hal.LoadKind) conformance.Harness {
	h := conformance.Harness{Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(b, kind) }, Gaps: &conformance.Gaps{Backend: "sim"}}
	h.Filter = regexp.MustCompile("^op/Add/float32/same$")
	return h
}

func execute(h conformance.Harness) (*conformance.Report, error) {
	return conformance.Execute(context.Background(), h)
}

// A linked-in backend certifies the running executable; --binary naming
// another file is refused, never recorded.
func TestBinaryLinkedIsTheRunningExecutable(t *testing.T) {
	h := harnessOf(sim.New(sim.Options{Ops: []string{"Add"}}), hal.LoadLinked)
	rep := run(t, h)
	self, _ := os.Executable()
	b := rep.Certification.Binary
	if b.Source != conformance.BinaryLinkedIn || b.Path != self || b.SHA256 != sha256File(t, self) || !strings.Contains(b.Note, "certifies this build") {
		t.Errorf("linked binary record %+v", b)
	}
	other := filepath.Join(t.TempDir(), "ls")
	copyFile(t, self, other, []byte("x"))
	for _, field := range []string{"AssertBinary", "Binary"} {
		h := harnessOf(sim.New(sim.Options{Ops: []string{"Add"}}), hal.LoadLinked)
		if field == "Binary" {
			h.Binary = other
		} else {
			h.AssertBinary = other
		}
		if _, err := execute(h); !errors.Is(err, conformance.ErrBinaryMismatch) {
			t.Errorf("%s naming another file: %v, want ErrBinaryMismatch", field, err)
		}
	}
	h = harnessOf(sim.New(sim.Options{Ops: []string{"Add"}}), hal.LoadLinked)
	h.AssertBinary = self
	if _, err := execute(h); err != nil {
		t.Errorf("AssertBinary naming the executable: %v", err)
	}
}

// A plugin process is bound by the image the kernel executed: a file
// swapped in at its path afterwards is refused, and so is a claim naming
// another file.
func TestBinaryProcessIsTheExecutedImage(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin")
	var pid atomic.Int64
	pid.Store(int64(startPlugin(t, plugin, "build-1")))
	want := sha256File(t, plugin)
	mk := func() conformance.Harness {
		return harnessOf(procBackend{sim.New(sim.Options{Ops: []string{"Add"}}), &pid}, hal.LoadProcess)
	}
	rep := run(t, mk())
	b := rep.Certification.Binary
	if b.Source != conformance.BinaryProcessImage || b.SHA256 != want || b.Path != plugin {
		t.Errorf("process binary record %+v, want sha256 %s of %s", b, want, plugin)
	}
	h := mk()
	h.Binary, h.BinarySHA256 = plugin, want
	if _, err := execute(h); err != nil {
		t.Errorf("matching Binary and BinarySHA256: %v", err)
	}
	h = mk()
	h.AssertBinary = "/bin/ls"
	if _, err := execute(h); !errors.Is(err, conformance.ErrBinaryMismatch) {
		t.Errorf("--binary /bin/ls: %v, want ErrBinaryMismatch", err)
	}
	h = mk()
	h.BinarySHA256 = strings.Repeat("0", 64)
	if _, err := execute(h); !errors.Is(err, conformance.ErrBinaryMismatch) {
		t.Errorf("a loader checksum that is not the image's: %v", err)
	}
	// swap the file at the path: the process still runs the old image
	swapped := filepath.Join(dir, "swapped")
	copyFile(t, plugin, swapped, []byte("evil"))
	if err := os.Rename(swapped, plugin); err != nil {
		t.Fatal(err)
	}
	h = mk()
	h.Binary = plugin
	if _, err := execute(h); !errors.Is(err, conformance.ErrBinaryMismatch) {
		t.Errorf("file swapped after exec: %v, want ErrBinaryMismatch", err)
	}
	// a process backend nothing can bind is refused
	var none atomic.Int64
	if _, err := execute(harnessOf(procBackend{sim.New(sim.Options{Ops: []string{"Add"}}), &none}, hal.LoadProcess)); err == nil || !strings.Contains(err.Error(), "cannot bind") {
		t.Errorf("process backend without a process: %v", err)
	}
	if _, err := execute(harnessOf(sim.New(sim.Options{Ops: []string{"Add"}}), hal.LoadProcess)); err == nil || !strings.Contains(err.Error(), "cannot bind") {
		t.Errorf("process backend without a PID or Binary: %v", err)
	}
}

// A plugin process replaced by another binary during the run (a restart
// that executed something else) refuses the report.
func TestBinaryChangedDuringRunRefused(t *testing.T) {
	dir := t.TempDir()
	var pid atomic.Int64
	pid.Store(int64(startPlugin(t, filepath.Join(dir, "a"), "a")))
	other := startPlugin(t, filepath.Join(dir, "b"), "b")
	h := harnessOf(procBackend{sim.New(sim.Options{Ops: []string{"Add"}}), &pid}, hal.LoadProcess)
	h.Filter = regexp.MustCompile("^op/Add/float32/(same|bcast-row)$")
	h.Progress = func(done, total int, r *conformance.Result) { pid.Store(int64(other)) }
	if _, err := execute(h); !errors.Is(err, conformance.ErrBinaryMismatch) || !strings.Contains(err.Error(), "changed during the run") {
		t.Errorf("binary swapped mid-run: %v", err)
	}
}

// A library is bound by the file mapped into the process: a path whose
// file is not the mapped one is refused.
func TestBinaryLibraryIsTheMappedFile(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	self, _ := os.Executable() // mapped into this process like a dlopened library
	rep := run(t, harnessOf(libBackend{sim.New(sim.Options{Ops: []string{"Add"}}), self}, hal.LoadLibrary))
	if b := rep.Certification.Binary; b.Source != conformance.BinaryMappedLibrary || b.SHA256 != sha256File(t, self) {
		t.Errorf("library record %+v", b)
	}
	// a Go adapter over libraries it opens by name names no file: this
	// build is what is bound, and the record says the libraries are not
	rep = run(t, harnessOf(sim.New(sim.Options{Ops: []string{"Add"}}), hal.LoadLibrary))
	if b := rep.Certification.Binary; b.Source != conformance.BinaryLinkedAdapter || b.SHA256 != sha256File(t, self) || !strings.Contains(b.Note, "NOT hashed") {
		t.Errorf("library backend naming no file: %+v", b)
	}
	cp := filepath.Join(t.TempDir(), "libvendor.so")
	copyFile(t, self, cp, nil) // same bytes, but not what was loaded
	if _, err := execute(harnessOf(libBackend{sim.New(sim.Options{Ops: []string{"Add"}}), cp}, hal.LoadLibrary)); !errors.Is(err, conformance.ErrBinaryMismatch) || !strings.Contains(err.Error(), "not mapped") {
		t.Errorf("unmapped library file: %v", err)
	}
}

// A loader that reports what it executed is believed only when the file
// still hashes the same.
func TestBinaryLoaderReported(t *testing.T) {
	f := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(f, []byte("plugin bytes"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256File(t, f)
	rep := run(t, harnessOf(reportedBackend{sim.New(sim.Options{Ops: []string{"Add"}}), f, sum}, hal.LoadProcess))
	if b := rep.Certification.Binary; b.Source != conformance.BinaryLoaderReported || b.SHA256 != sum || b.Path != f {
		t.Errorf("loader-reported record %+v", b)
	}
	if _, err := execute(harnessOf(reportedBackend{sim.New(sim.Options{Ops: []string{"Add"}}), f, strings.Repeat("1", 64)}, hal.LoadProcess)); !errors.Is(err, conformance.ErrBinaryMismatch) {
		t.Errorf("loader sha256 that the file does not have: %v", err)
	}
}
