package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
)

func wantExit(t *testing.T, what string, out string, code, want int, contains ...string) {
	t.Helper()
	if code != want {
		t.Errorf("%s: exit %d, want %d\n%s", what, code, want, out)
		return
	}
	for _, c := range contains {
		if !strings.Contains(out, c) {
			t.Errorf("%s: output lacks %q\n%s", what, c, out)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// The lab's whole path through the CLI: keygen, a signed run, verify-report
// with the lab key (genuine accepted; unsigned, edited, swapped binary and
// edited JUnit/HTML refused), --binary refused when it is not what ran,
// and shards merged under the lab's key.
func TestConformanceCertificateCLI(t *testing.T) {
	t.Setenv(conformance.SignKeyEnv, "")
	t.Setenv(conformance.LabKeyEnv, "")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	out, code := sy(t, "conformance", "keygen", "--output-dir", keys)
	priv, pub := filepath.Join(keys, conformance.PrivateKeyFile), filepath.Join(keys, conformance.PublicKeyFile)
	wantExit(t, "keygen", out, code, 0, priv, pub, "key id:      ed25519:")
	if runtime.GOOS != "windows" {
		if st, err := os.Stat(priv); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("private key mode %v (%v), want 0600", st.Mode().Perm(), err)
		}
	}
	out, code = sy(t, "conformance", "keygen", "--output-dir", keys)
	wantExit(t, "keygen again", out, code, 2, "refusing to overwrite")

	// a complete run signed by the lab: a certificate
	cert := filepath.Join(dir, "cert")
	out, code = sy(t, "conformance", "--backend", "sim", "--level", "quick", "--no-progress", "--output-dir", cert, "--sign-key", priv)
	wantExit(t, "signed run", out, code, 0, "conformance CERTIFIED", "signed by lab key ed25519:", "(linked-in)")
	out, code = sy(t, "conformance", "verify-report", "--lab-key", pub, cert)
	wantExit(t, "verify genuine", out, code, 0, "signature ok: signed by lab key", "verdict recomputed from the results: agrees", "covered: "+filepath.Join(cert, conformance.JUnitFile), "covered: "+filepath.Join(cert, conformance.HTMLFile))
	if !strings.HasPrefix(lastLine(out), "CERTIFIED by lab key ed25519:") {
		t.Errorf("genuine certificate's last line: %q", lastLine(out))
	}
	t.Setenv(conformance.LabKeyEnv, pub) // the key from the environment
	out, code = sy(t, "conformance", "verify-report", "--binary", bin, filepath.Join(cert, conformance.JSONFile))
	wantExit(t, "verify genuine with --binary", out, code, 0, bin+" matches", "CERTIFIED by lab key")
	t.Setenv(conformance.LabKeyEnv, "")

	// a swapped binary is not the certified one
	out, code = sy(t, "conformance", "verify-report", "--lab-key", pub, "--binary", "/bin/ls", cert)
	wantExit(t, "verify --binary /bin/ls", out, code, 1, "binary is not the one the report certifies")

	// --binary naming another file than what was loaded refuses the run
	other := filepath.Join(dir, "other")
	out, code = sy(t, "conformance", "--backend", "sim", "--filter", "^op/Add/float32/same$", "--no-progress", "--output-dir", other, "--binary", "/bin/ls", "--sign-key", priv)
	wantExit(t, "run --binary /bin/ls", out, code, 2, "refusing to certify a file that is not what ran")
	if _, err := os.Stat(other); err == nil {
		t.Error("a refused run wrote a report")
	}
	out, code = sy(t, "conformance", "--backend", "sim", "--filter", "^op/Add/float32/same$", "--no-progress", "--binary", bin)
	wantExit(t, "run --binary <this executable>", out, code, 0, "binary: "+bin)

	// unsigned: an integrity checksum, never a certificate
	unsigned := filepath.Join(dir, "unsigned")
	out, code = sy(t, "conformance", "--backend", "sim", "--filter", "^op/Add/float32/same$", "--no-progress", "--output-dir", unsigned)
	wantExit(t, "unsigned run", out, code, 0, "NOT a certificate")
	out, code = sy(t, "conformance", "verify-report", "--lab-key", pub, unsigned)
	wantExit(t, "verify unsigned with the lab key", out, code, 1, "NOT CERTIFIED: unsigned")
	out, code = sy(t, "conformance", "verify-report", unsigned)
	wantExit(t, "verify unsigned without a key", out, code, 0, "integrity ok")
	if lastLine(out) != "NOT CERTIFIED: unsigned" {
		t.Errorf("unsigned report's last line: %q", lastLine(out))
	}

	// edits of a signed directory
	edited := func(name, file string, edit func([]byte) []byte, want string) {
		t.Helper()
		d := filepath.Join(dir, "edit-"+strings.ReplaceAll(name, " ", "-"))
		must(t, os.MkdirAll(d, 0o755))
		for _, f := range []string{conformance.JSONFile, conformance.JUnitFile, conformance.HTMLFile} {
			b, err := os.ReadFile(filepath.Join(cert, f))
			must(t, err)
			if f == file {
				e := edit(b)
				if bytes.Equal(e, b) {
					t.Fatalf("%s: edit did not apply", name)
				}
				b = e
			}
			must(t, os.WriteFile(filepath.Join(d, f), b, 0o644))
		}
		out, code := sy(t, "conformance", "verify-report", "--lab-key", pub, d)
		wantExit(t, name, out, code, 1, want)
	}
	edited("edited count", conformance.JSONFile, func(b []byte) []byte {
		return regexp.MustCompile(`"not-delegated": \d+`).ReplaceAll(b, []byte(`"not-delegated": 0`))
	}, "report was edited after it was sealed")
	edited("edited binary hash", conformance.JSONFile, func(b []byte) []byte {
		return regexp.MustCompile(`"sha256": "[0-9a-f]{64}",\s*"source"`).ReplaceAll(b, []byte(`"sha256": "`+strings.Repeat("0", 64)+`", "source"`))
	}, "report was edited after it was sealed")
	edited("downgraded seal", conformance.JSONFile, func(b []byte) []byte {
		b = regexp.MustCompile(`"algorithm": "ed25519"`).ReplaceAll(b, []byte(`"algorithm": "sha256"`))
		return regexp.MustCompile(`,\s*"signature": "[^"]*"`).ReplaceAll(b, nil)
	}, "NOT CERTIFIED: unsigned")
	edited("edited junit", conformance.JUnitFile, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`<testcase `), []byte(`<testcase name="op/Extra" classname="x" time="0"></testcase><testcase `), 1)
	}, conformance.JUnitFile)
	edited("edited html", conformance.HTMLFile, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`badge pass">CERTIFIED`), []byte(`badge pass">CERTIFIED (gold)`), 1)
	}, conformance.HTMLFile)

	// shards: each signed by the lab, merged and signed again
	var shards []string
	for i := 0; i < 2; i++ {
		d := filepath.Join(dir, "shard"+string(rune('0'+i)))
		out, code := sy(t, "conformance", "--backend", "sim", "--level", "quick", "--no-progress", "--shard", string(rune('0'+i))+"/2", "--output-dir", d, "--sign-key", priv)
		wantExit(t, "shard run", out, code, 0, "signed by lab key")
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	out, code = sy(t, append([]string{"conformance", "merge", "--sign-key", priv, "--output-dir", merged}, shards...)...)
	wantExit(t, "merge", out, code, 0, "conformance CERTIFIED", "signed by lab key")
	out, code = sy(t, "conformance", "verify-report", "--lab-key", pub, merged)
	wantExit(t, "verify merged", out, code, 0, "CERTIFIED by lab key")
	// an unsigned shard, or one signed by another key, is refused at merge
	vendorKeys := filepath.Join(dir, "vendor")
	_, _ = sy(t, "conformance", "keygen", "--output-dir", vendorKeys)
	vendorShard := filepath.Join(dir, "vendor-shard")
	_, _ = sy(t, "conformance", "--backend", "sim", "--level", "quick", "--no-progress", "--shard", "1/2", "--output-dir", vendorShard, "--sign-key", filepath.Join(vendorKeys, conformance.PrivateKeyFile))
	out, code = sy(t, "conformance", "merge", "--sign-key", priv, "--output-dir", filepath.Join(dir, "m2"), shards[0], vendorShard)
	wantExit(t, "merge a vendor-signed shard", out, code, 1, "NOT CERTIFIED: not signed by the lab key")
	unsignedShard := filepath.Join(dir, "unsigned-shard")
	_, _ = sy(t, "conformance", "--backend", "sim", "--level", "quick", "--no-progress", "--shard", "1/2", "--output-dir", unsignedShard)
	out, code = sy(t, "conformance", "merge", "--sign-key", priv, "--output-dir", filepath.Join(dir, "m3"), shards[0], unsignedShard)
	wantExit(t, "merge an unsigned shard", out, code, 1, "NOT CERTIFIED: unsigned")
}
