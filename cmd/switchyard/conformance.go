package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

func init() { extraCommands = append(extraCommands, conformanceCmd) }

func conformanceCmd() *cobra.Command {
	var (
		backend, reportDir, shardFlag, filter, profile, gapsFile, binary, sharedDir, level, sources, signKey string
		timeout                                                                                              time.Duration
		noProgress                                                                                           bool
	)
	cmd := &cobra.Command{
		Use:   "conformance --backends NAME [--output-dir DIR] [--sign-key LAB.key] [--shard I/N] [--filter REGEX] [--timeout D]",
		Short: "Run the conformance suite against a backend and write certification reports",
		Long: `Runs every conformance case (generated per op, HAL contract, models, ONNX
node tests) through the runtime on backend NAME and compares with the cpu
reference kernels. With --output-dir DIR it writes conformance.json (versioned
schema), junit.xml and conformance.html; conformance.json lists the sha256
of the other two. With --sign-key (or ` + conformance.SignKeyEnv + `) the lab's
Ed25519 private key signs conformance.json: only a signed report is a
certificate ('switchyard conformance keygen' makes the key pair,
'switchyard conformance verify-report --lab-key' checks it).

The tested binary is hashed from what was loaded: this executable for a
linked-in backend, the plugin process's image, the dlopened library file.
--binary FILE only asserts which file that is: the run is refused when
FILE's content is not what was loaded.

--shard I/N runs one deterministic slice; 'switchyard conformance merge'
joins the slices into the report of the full run. A case that crashes or
hangs the backend fails and the run goes on. Exit status 1 when a case
failed or a gap entry is stale, 2 for usage errors and refused runs.

Reproduce one case by its ID: --filter '^op/Add/float32/bcast-row$'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if backend == "" {
				return fmt.Errorf("--backend is required (see 'switchyard backends')")
			}
			key, err := signingKey(signKey)
			if err != nil {
				return err
			}
			h := conformance.Harness{Profile: profile, AssertBinary: binary}
			h.Level = conformance.Level(level)
			h.Timeout = timeout
			if shardFlag != "" {
				sh, err := conformance.ParseShard(shardFlag)
				if err != nil {
					return err
				}
				h.Shard = sh
			}
			if filter != "" {
				re, err := regexp.Compile(filter)
				if err != nil {
					return fmt.Errorf("--filter: %w", err)
				}
				h.Filter = re
			}
			if sources != "" {
				for _, s := range strings.Split(sources, ",") {
					h.Sources = append(h.Sources, conformance.Source(strings.TrimSpace(s)))
				}
			}
			if gapsFile != "" {
				b, err := os.ReadFile(gapsFile)
				if err != nil {
					return err
				}
				g, err := conformance.ParseGaps(b)
				if err != nil {
					return err
				}
				h.Gaps = g
			}
			h.SharedRoot = sharedDir
			if h.SharedRoot == "" {
				h.SharedRoot = shared.Root()
			}
			r := backends().Registry()
			h.Binary, h.BinarySHA256 = loaderFile(backend)
			if h.Gaps == nil {
				h.Manifest = manifestFile(backend) // its vendor's gaps, if it ships any
			}
			h.Open = func(ctx context.Context) (*hal.Device, error) { return r.Open(ctx, backend) }
			if !noProgress && isTerminal(os.Stderr) {
				h.Progress = progressBar(os.Stderr)
			}
			rep, err := conformance.Execute(cmd.Context(), h)
			if h.Progress != nil {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			fmt.Print(rep.Summary())
			for _, res := range rep.Results {
				if res.Status == conformance.Fail || res.Status == conformance.UnexpectedPass {
					fmt.Printf("%s %s: %s\n", strings.ToUpper(string(res.Status)), res.ID, firstLineOf(res.Message))
				}
			}
			fmt.Printf("binary: %s sha256 %s (%s)\n", rep.Certification.Binary.Path, rep.Certification.Binary.SHA256, rep.Certification.Binary.Source)
			if reportDir != "" {
				if err := writeReports(rep, reportDir, key); err != nil {
					return err
				}
			}
			if !rep.Certification.Passed {
				return exitError{1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&backend, "backends", "", "the backend to test (one registry name; --backends as on every other command)")
	f.StringVar(&backend, "backend", "", "the backend to test (old name of --backends)")
	_ = f.MarkDeprecated("backend", "use --backends")
	f.StringVar(&reportDir, "output-dir", "", "write conformance.json, junit.xml and conformance.html to this directory")
	deprecatedOutputDir(cmd, &reportDir, "report")
	f.StringVar(&shardFlag, "shard", "", "run shard I of N (I/N, 0-based)")
	f.StringVar(&filter, "filter", "", "run only cases whose ID matches this regexp")
	f.DurationVar(&timeout, "timeout", time.Minute, "per-case timeout; a case still running after it (plus a grace period) fails as hung")
	f.StringVar(&profile, "profile", "", "relaxed tolerance profile the backend opts into (disclosed in the report)")
	f.StringVar(&gapsFile, "gaps", "", "gap declaration JSON (default: the gaps the plugin's manifest ships, else the suite's gaps/<backend>.json, if any)")
	f.StringVar(&binary, "binary", "", "assert that the backend is loaded from this file: the run is refused if its content is not what was loaded (never what is recorded)")
	f.StringVar(&signKey, "sign-key", "", "the lab's Ed25519 private key file: sign conformance.json, making it a certificate (default $"+conformance.SignKeyEnv+")")
	f.StringVar(&sharedDir, "shared", "", "directory holding testdata/models and testdata/onnx-node (default: ../shared beside the checkout)")
	f.StringVar(&level, "level", string(conformance.Full), "case set: quick or full")
	f.StringVar(&sources, "sources", "", "comma-separated sources to run: op, contract, model, onnx-node (default all)")
	f.BoolVar(&noProgress, "no-progress", false, "no progress bar even on a terminal")
	cmd.AddCommand(conformanceMergeCmd(), conformanceVerifyCmd(), conformanceKeygenCmd())
	return cmd
}

// loaderFile is the file and checksum the registry's loader was given for
// a plugin-process backend (its manifest's path and sha256): cross-checks
// of what conformance hashes from the running process, and the fallback
// where /proc cannot be read. Libraries say their own path; linked-in
// backends need none.
func loaderFile(name string) (path, sum string) {
	for _, p := range backends().Plugins() {
		if p.Err == nil && p.Name == name {
			return p.Path, p.SHA256
		}
	}
	return "", ""
}

// manifestFile is the manifest a plugin backend was installed with ("" for
// other backends): the suite reads the gaps its vendor ships there.
func manifestFile(name string) string {
	for _, p := range backends().Plugins() {
		if p.Err == nil && p.Name == name {
			return p.Manifest
		}
	}
	return ""
}

// signingKey reads the lab's private key from the flag's file, else from
// the file $SWITCHYARD_CONFORMANCE_SIGN_KEY names; nil when neither is set.
func signingKey(flag string) (ed25519.PrivateKey, error) {
	if os.Getenv("SWITCHYARD_CONFORMANCE_KEY") != "" {
		fmt.Fprintln(os.Stderr, "switchyard: warning: SWITCHYARD_CONFORMANCE_KEY (an HMAC secret) is no longer used; reports are signed with an Ed25519 lab key: switchyard conformance keygen, then --sign-key or "+conformance.SignKeyEnv)
	}
	if flag == "" {
		flag = os.Getenv(conformance.SignKeyEnv)
	}
	if flag == "" {
		return nil, nil
	}
	return conformance.ReadPrivateKey(flag)
}

// labKey reads the lab's public key from the flag's file, else from the
// file $SWITCHYARD_CONFORMANCE_LAB_KEY names; nil when neither is set.
func labKey(flag string) (ed25519.PublicKey, error) {
	if flag == "" {
		flag = os.Getenv(conformance.LabKeyEnv)
	}
	if flag == "" {
		return nil, nil
	}
	return conformance.ReadPublicKey(flag)
}

func writeReports(rep *conformance.Report, dir string, key ed25519.PrivateKey) error {
	paths, err := rep.WriteFiles(dir, key)
	if err != nil {
		return err
	}
	fmt.Printf("reports: %s\n", strings.Join(paths, " "))
	if key != nil {
		fmt.Printf("signed by lab key %s\n", rep.Seal.KeyID)
	} else {
		fmt.Println("unsigned (no --sign-key): an integrity checksum only, NOT a certificate")
	}
	return nil
}

func conformanceKeygenCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "keygen --output-dir DIR",
		Short: "Make a lab's Ed25519 key pair for signing conformance certificates",
		Long: "Writes DIR/" + conformance.PrivateKeyFile + " (the private key, PKCS #8 PEM, mode 0600: keep it in the lab; whoever holds it can sign certificates) and DIR/" + conformance.PublicKeyFile + ` (the public key, PKIX PEM: publish it; verify-report --lab-key checks
certificates against it). Refuses to overwrite an existing key.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--output-dir is required")
			}
			priv, pub, k, err := conformance.GenerateKeyPair(out)
			if err != nil {
				return err
			}
			fmt.Printf("private key: %s (mode 0600; keep it secret)\npublic key:  %s\nkey id:      %s\n", priv, pub, conformance.KeyID(k))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "output-dir", "", "directory to write "+conformance.PrivateKeyFile+" and "+conformance.PublicKeyFile+" to")
	deprecatedOutputDir(cmd, &out, "out")
	return cmd
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func progressBar(w io.Writer) func(done, total int, r *conformance.Result) {
	failed := 0
	last := time.Time{}
	return func(done, total int, r *conformance.Result) {
		if r.Status == conformance.Fail || r.Status == conformance.UnexpectedPass {
			failed++
		}
		if time.Since(last) < 50*time.Millisecond && done < total {
			return
		}
		last = time.Now()
		const width = 30
		n := width * done / max(total, 1)
		id := r.ID
		if len(id) > 40 {
			id = id[:40]
		}
		fmt.Fprintf(w, "\r\033[K[%s%s] %d/%d %d failed  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, failed, id)
	}
}

// reportPath accepts a report file or a directory holding conformance.json.
func reportPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, conformance.JSONFile)
	}
	return p
}

func conformanceMergeCmd() *cobra.Command {
	var out, signKey, pubKey string
	cmd := &cobra.Command{
		Use:   "merge --output-dir DIR [--sign-key LAB.key | --lab-key LAB.pub] SHARD...",
		Short: "Merge the reports of the shards of one run into the full run's report",
		Long: `Each SHARD is a conformance.json (or a directory holding one). They must
come from the same backend, binary, suite, case set, gaps and tolerance
profile, with distinct shards, and each must agree with its own results.

With --sign-key (the lab's private key) every shard must be signed by that
lab's key, and the merged report is signed again by it: a merged
certificate only ever holds results the lab itself signed. With --lab-key
every shard's signature is checked but the merge is left unsigned. With
neither, only the shards' integrity digests are checked and the merge is
not a certificate.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := signingKey(signKey)
			if err != nil {
				return err
			}
			pub, err := labKey(pubKey)
			if err != nil {
				return err
			}
			if key != nil {
				derived := key.Public().(ed25519.PublicKey)
				if pub != nil && !pub.Equal(derived) {
					return fmt.Errorf("--lab-key %s is not the public half of --sign-key %s", conformance.KeyID(pub), conformance.KeyID(derived))
				}
				pub = derived
			}
			var reps []*conformance.Report
			for _, a := range args {
				b, err := os.ReadFile(reportPath(a))
				if err != nil {
					return err
				}
				v, err := conformance.Verify(b, pub)
				if err != nil {
					fmt.Fprintf(os.Stderr, "switchyard: %s: %v\n", a, err)
					return exitError{1}
				}
				reps = append(reps, v.Report)
			}
			m, err := conformance.Merge(reps)
			if err != nil {
				return err
			}
			fmt.Print(m.Summary())
			if !m.Certification.Complete {
				fmt.Printf("incomplete: %d of %d cases (shards %v)\n", len(m.Results), m.Certification.CaseSetSize, m.Certification.Shards)
			}
			if out != "" {
				if err := writeReports(m, out, key); err != nil {
					return err
				}
			}
			if !m.Certification.Passed {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "output-dir", "", "write the merged conformance.json, junit.xml and conformance.html to this directory")
	deprecatedOutputDir(cmd, &out, "report")
	cmd.Flags().StringVar(&signKey, "sign-key", "", "the lab's private key: every shard must be signed by it, and the merge is signed with it (default $"+conformance.SignKeyEnv+")")
	cmd.Flags().StringVar(&pubKey, "lab-key", "", "the lab's public key: every shard must be signed by it (default $"+conformance.LabKeyEnv+")")
	return cmd
}

func conformanceVerifyCmd() *cobra.Command {
	var pubKey, binary string
	cmd := &cobra.Command{
		Use:   "verify-report [--lab-key LAB.pub] [--binary FILE] REPORT",
		Short: "Check a conformance certificate: the lab's signature, its verdict against its results, its files and binary",
		Long: `REPORT is a conformance.json or the directory holding it. With --lab-key
(or ` + conformance.LabKeyEnv + `) the report must be signed by that lab's Ed25519
key: a report carrying only a sha256 digest (which anyone can recompute
after editing) is "NOT CERTIFIED: unsigned", one sealed by another key or
algorithm is refused. Without a key only the digest is checked, which
proves nothing against a forger.

Either way the totals, completeness and verdict are recomputed from the
per-case results and gap declarations, and the junit.xml and
conformance.html beside the report must have the sha256 it lists. With
--binary FILE, FILE must be the binary the report certifies.

Exit status 0 when every check holds (the last line says whether the
report is a certificate: CERTIFIED, or NOT CERTIFIED and why), 1 when the
report is forged, edited, unsigned under a lab key or inconsistent, 2 for
usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pub, err := labKey(pubKey)
			if err != nil {
				return err
			}
			p := reportPath(args[0])
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fail := func(err error) error {
				fmt.Fprintln(os.Stderr, "switchyard:", err)
				return exitError{1}
			}
			v, err := conformance.Verify(b, pub)
			if err != nil {
				return fail(err)
			}
			checked, missing, err := conformance.VerifyFiles(filepath.Dir(p), v.Report)
			if err != nil {
				return fail(err)
			}
			if binary != "" {
				if err := conformance.VerifyBinary(binary, v.Report); err != nil {
					return fail(err)
				}
			}
			s := v.Seal
			if v.Signed {
				fmt.Printf("signature ok: signed by lab key %s (content sha256 %s)\n", s.KeyID, s.Digest)
			} else {
				fmt.Printf("integrity ok: %s digest %s (a checksum anyone can recompute: no lab key was given)\n", s.Algorithm, s.Digest)
			}
			fmt.Println("verdict recomputed from the results: agrees")
			for _, f := range checked {
				fmt.Printf("covered: %s\n", f)
			}
			for _, f := range missing {
				fmt.Printf("listed but absent (not checked): %s\n", f)
			}
			c := v.Certification
			fmt.Printf("binary: %s sha256 %s (%s)", c.Binary.Path, c.Binary.SHA256, c.Binary.Source)
			if binary != "" {
				fmt.Printf("; %s matches", binary)
			}
			fmt.Println()
			if !v.Signed {
				fmt.Println("the verdict as recorded (not vouched for by any lab key):")
			}
			fmt.Print(v.Summary())
			switch {
			case !v.Signed && s.Algorithm == conformance.AlgSHA256:
				fmt.Println("NOT CERTIFIED: unsigned")
			case !v.Signed:
				fmt.Println("NOT CERTIFIED: signature not checked (give the lab's public key with --lab-key)")
			case !c.Certified:
				fmt.Printf("NOT CERTIFIED: the signed verdict is %s\n", strings.ToLower(verdictText(c)))
			default:
				fmt.Printf("CERTIFIED by lab key %s\n", s.KeyID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&pubKey, "lab-key", "", "the lab's Ed25519 public key file: the report must be signed by it (default $"+conformance.LabKeyEnv+")")
	cmd.Flags().StringVar(&binary, "binary", "", "check that this file is the binary the report certifies")
	return cmd
}

func verdictText(c conformance.Certification) string {
	switch {
	case c.Passed && !c.Complete:
		return "PASSED on a partial run (shard or incomplete case set)"
	case c.Passed:
		return "PASSED on a filtered or partial run"
	}
	return "FAILED"
}
