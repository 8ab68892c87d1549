package conformance

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
)

// SchemaVersion names the report's JSON schema. Readers refuse other
// versions; fields are only ever added within a version. v2: Ed25519 lab
// signatures (v1's HMAC and unkeyed seals are gone), the verdict is
// recomputed on verification, the binary record says how it was bound,
// and the report lists the JUnit and HTML files made from it.
const SchemaVersion = "switchyard.conformance.report/v2"

// Report is a conformance run's result: the certification record, the
// tolerance profile and gaps it ran under, and every case's result.
type Report struct {
	Schema        string        `json:"schema"`
	Certification Certification `json:"certification"`
	Tolerances    Disclosure    `json:"tolerances"`
	Gaps          *Gaps         `json:"gaps"`
	Coverage      Coverage      `json:"coverage"`
	Results       []Result      `json:"results"`
	// Files are the other formats written beside the report (JUnit, HTML)
	// and their SHA-256, so the seal covers them (VerifyFiles).
	Files []FileDigest `json:"files,omitempty"`
	Seal  *Seal        `json:"seal,omitempty"`
}

// FileDigest names a file made from the report and its content's SHA-256.
type FileDigest struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Certification is the record a lab files for a backend.
type Certification struct {
	Backend      BackendRecord `json:"backend"`
	Binary       BinaryRecord  `json:"binary"`
	HALVersion   string        `json:"hal_version"` // negotiated
	HostHAL      string        `json:"host_hal_version"`
	SuiteVersion string        `json:"suite_version"`
	// CaseSetHash covers the suite version, ops.json, tolerances.json and
	// the sorted IDs of the selected cases (before sharding).
	CaseSetHash string   `json:"case_set_hash"`
	CaseSetSize int      `json:"case_set_size"`
	Level       Level    `json:"level"`
	Filter      string   `json:"filter,omitempty"`
	Sources     []string `json:"sources,omitempty"`
	// Shards lists the shards this report holds (empty = an unsharded run).
	Shards   []Shard      `json:"shards,omitempty"`
	Complete bool         `json:"complete"` // every selected case is in the report
	Device   DeviceRecord `json:"device"`
	Date     string       `json:"date"` // RFC 3339, UTC
	// DurationMS is the wall time of the run (summed over merged shards).
	DurationMS float64 `json:"duration_ms"`
	Totals     Totals  `json:"totals"`
	// Passed: no failure and no stale gap entry. Certified additionally
	// needs a complete, unfiltered run of every source and a bound binary.
	// Verify recomputes both (and the totals) from the results.
	Passed    bool `json:"passed"`
	Certified bool `json:"certified"`
}

// BackendRecord is the backend's Info.
type BackendRecord struct {
	Name        string   `json:"name"`
	Vendor      string   `json:"vendor"`
	Version     string   `json:"version"`
	HALRange    string   `json:"hal_range"`
	Device      string   `json:"device"`
	Description string   `json:"description"`
	Load        string   `json:"load"` // linked, library, process
	Features    []string `json:"features,omitempty"`
	// TestedAs is the name the runtime reached the backend by, when it
	// differs (the cpu backend is tested as "cpu-under-test").
	TestedAs string `json:"tested_as,omitempty"`
}

// BinaryRecord identifies the code that was tested: the bytes the harness
// hashed from what was loaded (see BinaryReporter for how).
type BinaryRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Source says how the bytes were obtained: BinaryLinkedIn,
	// BinaryLinkedAdapter, BinaryProcessImage, BinaryMappedLibrary, BinaryLoaderReported or
	// BinaryLoaderVerified.
	Source string `json:"source"`
	// Note says in words what was hashed.
	Note string `json:"note"`
}

// DeviceRecord describes the machine.
type DeviceRecord struct {
	Description string `json:"description"`
	Kind        string `json:"kind"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	Host        string `json:"host,omitempty"`
	Go          string `json:"go"`
}

// Disclosure states the tolerance policy and profile used.
type Disclosure struct {
	PolicyVersion      string `json:"policy_version"`
	PolicySHA256       string `json:"policy_sha256"`
	Profile            string `json:"profile,omitempty"`
	ProfileDescription string `json:"profile_description,omitempty"`
}

// Coverage says what the case set does not reach.
type Coverage struct {
	// UncoveredOps have a reference kernel but no generated cases yet.
	UncoveredOps []string `json:"uncovered_ops,omitempty"`
}

func newReport(opened, tested *hal.Device, h Harness, bin BinaryRecord, policy *Policy, gaps *Gaps) *Report {
	info := opened.Info()
	rep := &Report{Schema: SchemaVersion, Gaps: gaps}
	c := &rep.Certification
	c.Backend = BackendRecord{Name: info.Name, Vendor: info.Vendor, Version: info.Version, HALRange: info.HAL.String(), Device: string(info.Device), Description: info.Description, Load: string(opened.Kind()), Features: opened.Features()}
	if tested.Name() != info.Name {
		c.Backend.TestedAs = tested.Name()
	}
	c.HALVersion = opened.HALVersion().String()
	c.HostHAL = hal.Current.String()
	c.SuiteVersion = SuiteVersion
	c.Level = h.Level
	if h.Filter != nil {
		c.Filter = h.Filter.String()
	}
	for _, s := range h.Sources {
		c.Sources = append(c.Sources, string(s))
	}
	c.Binary = bin
	host, _ := os.Hostname()
	c.Device = DeviceRecord{Description: info.Description, Kind: string(info.Device), OS: goruntime.GOOS, Arch: goruntime.GOARCH, CPUs: goruntime.NumCPU(), Host: host, Go: goruntime.Version()}
	ps := sha256.Sum256(tolerancesJSON)
	if h.Policy != nil {
		b, _ := json.Marshal(h.Policy)
		ps = sha256.Sum256(b)
	}
	rep.Tolerances = Disclosure{PolicyVersion: policy.Version, PolicySHA256: hex.EncodeToString(ps[:]), Profile: h.Profile}
	if h.Profile != "" {
		rep.Tolerances.ProfileDescription = policy.Profiles[h.Profile].Description
	}
	return rep
}

// finish computes totals and verdicts, dates and seals the report.
func (r *Report) finish(d time.Duration) {
	c := &r.Certification
	c.Date = time.Now().UTC().Format(time.RFC3339)
	c.DurationMS = float64(d.Microseconds()) / 1000
	r.refresh()
}

func (r *Report) refresh() {
	c := &r.Certification
	c.Totals = totalsOf(r.Results)
	c.Complete = len(r.Results) == c.CaseSetSize
	c.Passed, c.Certified = verdict(c)
	r.Seal, r.Files = nil, nil
}

// Merge combines the reports of the shards of one run into the report of
// the whole run. Every input must come from the same backend, binary,
// suite, case set, gaps and tolerances, with distinct shards of the same
// count, and agree with its own results (Check). The merged report is
// unsealed: a lab verifies each shard against its public key (Verify) and
// signs the merge with its private key (Sign, WriteFiles); the CLI's
// `conformance merge --sign-key` does both, so a merged certificate is
// only ever made from shards the same lab signed.
func Merge(reports []*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("conformance: nothing to merge")
	}
	for i, r := range reports {
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("conformance: merge: report %d: %w", i, err)
		}
	}
	first := reports[0]
	gapsOf := func(r *Report) string { b, _ := json.Marshal(r.Gaps); return string(b) }
	out := *first
	out.Results = nil
	out.Certification.Shards = nil
	out.Certification.DurationMS = 0
	seenShard := map[Shard]bool{}
	seenID := map[string]bool{}
	count := 0
	latest := ""
	for i, r := range reports {
		c, fc := r.Certification, first.Certification
		same := []struct{ what, a, b string }{
			{"backend", c.Backend.Name + " " + c.Backend.Version, fc.Backend.Name + " " + fc.Backend.Version},
			{"binary sha256", c.Binary.SHA256, fc.Binary.SHA256},
			{"suite version", c.SuiteVersion, fc.SuiteVersion},
			{"case-set hash", c.CaseSetHash, fc.CaseSetHash},
			{"tolerance profile", r.Tolerances.Profile, first.Tolerances.Profile},
			{"tolerance policy", r.Tolerances.PolicySHA256, first.Tolerances.PolicySHA256},
			{"gap declaration", gapsOf(r), gapsOf(first)},
			{"level", string(c.Level), string(fc.Level)},
			{"filter", c.Filter, fc.Filter},
			{"sources", strings.Join(c.Sources, ","), strings.Join(fc.Sources, ",")},
		}
		for _, s := range same {
			if s.a != s.b {
				return nil, fmt.Errorf("conformance: merge: report %d has %s %q, report 0 has %q", i, s.what, s.a, s.b)
			}
		}
		if len(c.Shards) == 0 {
			return nil, fmt.Errorf("conformance: merge: report %d is not a shard", i)
		}
		for _, s := range c.Shards {
			if count == 0 {
				count = s.Count
			}
			if s.Count != count {
				return nil, fmt.Errorf("conformance: merge: shard %v does not split the run into %d", s, count)
			}
			if seenShard[s] {
				return nil, fmt.Errorf("conformance: merge: shard %v given twice", s)
			}
			seenShard[s] = true
			out.Certification.Shards = append(out.Certification.Shards, s)
		}
		for _, res := range r.Results {
			if seenID[res.ID] {
				return nil, fmt.Errorf("conformance: merge: case %s appears in two shards", res.ID)
			}
			seenID[res.ID] = true
			out.Results = append(out.Results, res)
		}
		out.Certification.DurationMS += c.DurationMS
		if c.Date > latest {
			latest = c.Date
		}
	}
	sort.Slice(out.Certification.Shards, func(i, j int) bool { return out.Certification.Shards[i].Index < out.Certification.Shards[j].Index })
	if len(seenShard) == count {
		out.Certification.Shards = nil // the whole run
	}
	sortResults(out.Results)
	out.Certification.Date = latest
	out.refresh()
	return &out, nil
}

// Equivalent reports how two reports differ in substance: the certification
// (except date, duration and host) and every result (except durations).
// A merged sharded run must be equivalent to the full run.
func Equivalent(a, b *Report) error {
	norm := func(r *Report) ([]byte, error) {
		c := *r
		c.Seal, c.Files = nil, nil
		c.Certification.Date, c.Certification.DurationMS = "", 0
		c.Certification.Device.Host = "" // shards may run on several machines
		c.Results = append([]Result{}, r.Results...)
		for i := range c.Results {
			c.Results[i].DurationMS = 0
			if c.Results[i].Source == SourceContract {
				c.Results[i].Message = "" // timings appear in some contract messages
			}
		}
		return json.Marshal(c)
	}
	x, err := norm(a)
	if err != nil {
		return err
	}
	y, err := norm(b)
	if err != nil {
		return err
	}
	if bytes.Equal(x, y) {
		return nil
	}
	if len(a.Results) != len(b.Results) {
		return fmt.Errorf("%d results vs %d", len(a.Results), len(b.Results))
	}
	for i := range a.Results {
		ra, rb := a.Results[i], b.Results[i]
		if ra.ID != rb.ID || ra.Status != rb.Status {
			return fmt.Errorf("result %d: %s %s vs %s %s", i, ra.ID, ra.Status, rb.ID, rb.Status)
		}
	}
	return errors.New("the certification records differ")
}

// Files are the names WriteFiles uses inside a report directory.
const (
	JSONFile  = "conformance.json"
	JUnitFile = "junit.xml"
	HTMLFile  = "conformance.html"
)

// WriteFiles writes the JUnit XML, the HTML report and the sealed JSON
// report into dir and returns their paths. The JSON is the certificate:
// signed with key (nil: a plain digest only, not a certificate), it lists
// the SHA-256 of the JUnit and HTML files, and each of those carries the
// ContentDigest of the report it renders, so all three are covered.
func (r *Report) WriteFiles(dir string, key ed25519.PrivateKey) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r.Seal, r.Files = nil, nil
	if err := r.Check(); err != nil {
		return nil, fmt.Errorf("conformance: refusing to write: %w", err)
	}
	content, err := r.ContentDigest()
	if err != nil {
		return nil, err
	}
	signer := ""
	if key != nil {
		signer = KeyID(key.Public().(ed25519.PublicKey))
	}
	ju, err := r.junit(content, signer)
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	if err := r.html(&html, content, signer); err != nil {
		return nil, err
	}
	r.Files = []FileDigest{{JUnitFile, hexSHA256(ju)}, {HTMLFile, hexSHA256(html.Bytes())}}
	js, err := r.Sign(key)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{JUnitFile, ju}, {HTMLFile, html.Bytes()}, {JSONFile, js}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// VerifyFiles checks the files a verified report lists (Report.Files)
// against their recorded SHA-256 in dir, the report's directory, and that
// no JUnit or HTML file lies there that the report does not list (it would
// pass for covered). A listed file that is absent is returned in missing,
// not an error: the JSON alone is the certificate.
func VerifyFiles(dir string, r *Report) (checked, missing []string, err error) {
	listed := map[string]bool{}
	for _, f := range r.Files {
		if baseName(f.Name) == "" {
			return nil, nil, fmt.Errorf("conformance: %w: the report lists file %q, not a plain file name", ErrTampered, f.Name)
		}
		listed[f.Name] = true
		p := filepath.Join(dir, f.Name)
		sum, err := fileSHA256(p)
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, p)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("conformance: %s: %w", p, err)
		}
		if sum != f.SHA256 {
			return nil, nil, fmt.Errorf("conformance: %w: %s hashes to %s, the report lists %s (edited after the report was sealed)", ErrTampered, p, short(sum), short(f.SHA256))
		}
		checked = append(checked, p)
	}
	for _, name := range []string{JUnitFile, HTMLFile} {
		if listed[name] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return nil, nil, fmt.Errorf("conformance: %w: %s lies beside the report but the report does not list it: it is not covered by the seal", ErrTampered, filepath.Join(dir, name))
		}
	}
	return checked, missing, nil
}

// VerifyBinary checks that the file at path is the binary a verified
// report certifies (its SHA-256 is the recorded one).
func VerifyBinary(path string, r *Report) error {
	sum, err := fileSHA256(path)
	if err != nil {
		return fmt.Errorf("conformance: binary: %w", err)
	}
	if sum != r.Certification.Binary.SHA256 {
		return fmt.Errorf("conformance: %w: %s has sha256 %s, the report certifies %s (sha256 %s)", ErrBinaryMismatch, path, sum, r.Certification.Binary.Path, r.Certification.Binary.SHA256)
	}
	return nil
}

// Summary is a one-paragraph text summary.
func (r *Report) Summary() string {
	c := r.Certification
	var b strings.Builder
	fmt.Fprintf(&b, "conformance %s: backend %s %s (%s, %s), HAL %s, suite %s, %s level\n", verdictWord(c), c.Backend.Name, c.Backend.Version, c.Backend.Load, c.Backend.Device, c.HALVersion, c.SuiteVersion, c.Level)
	fmt.Fprintf(&b, "  %d cases:", c.Totals.Cases)
	for _, s := range Statuses {
		if n := c.Totals.ByStatus[s]; n > 0 {
			fmt.Fprintf(&b, " %d %s,", n, s)
		}
	}
	s := strings.TrimSuffix(b.String(), ",")
	b.Reset()
	b.WriteString(s)
	fmt.Fprintf(&b, " in %.1fs\n", c.DurationMS/1000)
	for _, src := range Sources {
		if m := c.Totals.BySource[src]; m != nil {
			n := 0
			for _, v := range m {
				n += v
			}
			fmt.Fprintf(&b, "  %-9s %5d cases: %d pass, %d fail, %d not delegated\n", src, n, m[Pass], m[Fail]+m[UnexpectedPass], m[NotDelegated])
		}
	}
	if g := r.Gaps; g != nil && len(g.Unsupported)+len(g.ExpectedFailures) > 0 {
		src := g.Source
		if src == "" {
			src = "source not recorded"
		}
		fmt.Fprintf(&b, "  gaps declared for %s (%s): %d unsupported, %d expected failures\n", g.Backend, src, len(g.Unsupported), len(g.ExpectedFailures))
		for _, x := range g.Unsupported {
			fmt.Fprintf(&b, "    unsupported       %s: %s\n", x.Pattern, x.Reason)
		}
		for _, x := range g.ExpectedFailures {
			fmt.Fprintf(&b, "    expected failure  %s: %s\n", x.Pattern, x.Reason)
		}
	}
	return b.String()
}

func verdictWord(c Certification) string {
	switch {
	case c.Certified:
		return "CERTIFIED"
	case c.Passed:
		return "PASSED (partial run: not a certification)"
	}
	return "FAILED"
}
