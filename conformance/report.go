package conformance

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/hal"
)

// SchemaVersion names the report's JSON schema. Readers refuse other
// versions; fields are only ever added within a version.
const SchemaVersion = "switchyard.conformance.report/v1"

// KeyEnv names the environment variable holding a lab's sealing key. When
// set, reports are sealed with HMAC-SHA256 under it (verifying needs the
// same key); otherwise with a plain SHA-256 digest, which detects edits
// made after the fact but not a forger who recomputes the digest.
const KeyEnv = "SWITCHYARD_CONFORMANCE_KEY"

// Report is a conformance run's result: the certification record, the
// tolerance profile and gaps it ran under, and every case's result.
type Report struct {
	Schema        string        `json:"schema"`
	Certification Certification `json:"certification"`
	Tolerances    Disclosure    `json:"tolerances"`
	Gaps          *Gaps         `json:"gaps"`
	Coverage      Coverage      `json:"coverage"`
	Results       []Result      `json:"results"`
	Seal          *Seal         `json:"seal,omitempty"`
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
	// needs a complete, unfiltered run.
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

// BinaryRecord identifies the code that was tested.
type BinaryRecord struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Note says what was hashed: the plugin or library itself, or, for a
	// linked backend, the executable it was linked into.
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

// Seal makes edits after the fact detectable.
type Seal struct {
	Algorithm string `json:"algorithm"` // "sha256" or "hmac-sha256"
	Digest    string `json:"digest"`
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func newReport(opened, tested *hal.Device, h Harness, policy *Policy, gaps *Gaps) *Report {
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
	bin := h.Binary
	c.Binary.Note = "the plugin binary or library the backend was loaded from"
	switch {
	case bin == "" && opened.Kind() == hal.LoadLinked:
		bin, _ = os.Executable()
		c.Binary.Note = "linked: the backend is compiled into this executable, which was hashed"
	case bin == "":
		c.Binary.Note = "the backend was loaded as a " + string(opened.Kind()) + " but its file was not given (Harness.Binary, --binary): no checksum recorded"
	}
	c.Binary.Path = bin
	if bin != "" {
		if sum, err := fileSHA256(bin); err == nil {
			c.Binary.SHA256 = sum
		} else {
			c.Binary.Note += " (hashing failed: " + err.Error() + ")"
		}
	}
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
	c.Passed = c.Totals.OK()
	c.Certified = c.Passed && c.Complete && c.Filter == "" && len(c.Sources) == 0
	r.Seal = nil
}

// canonical is the report's JSON with the seal removed, re-encoded with
// sorted keys and numbers kept verbatim, so any edit of any field (even
// one this version does not know) changes it.
func canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("conformance: report is not a JSON object: %w", err)
	}
	delete(v, "seal")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func digest(canon []byte, key []byte) Seal {
	if len(key) > 0 {
		m := hmac.New(sha256.New, key)
		m.Write(canon)
		return Seal{Algorithm: "hmac-sha256", Digest: hex.EncodeToString(m.Sum(nil))}
	}
	s := sha256.Sum256(canon)
	return Seal{Algorithm: "sha256", Digest: hex.EncodeToString(s[:])}
}

// Marshal seals the report (with KeyEnv's key when set) and returns its
// indented JSON.
func (r *Report) Marshal() ([]byte, error) {
	r.Seal = nil
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	canon, err := canonical(raw)
	if err != nil {
		return nil, err
	}
	s := digest(canon, []byte(os.Getenv(KeyEnv)))
	r.Seal = &s
	return json.MarshalIndent(r, "", " ")
}

// ErrTampered is returned (wrapped) by Verify for a report whose content
// does not match its seal.
var ErrTampered = errors.New("report was edited after it was sealed")

// Verify checks a report file's seal and schema and returns the report.
func Verify(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("conformance: not a report: %w", err)
	}
	if r.Schema != SchemaVersion {
		return nil, fmt.Errorf("conformance: report schema %q, this build reads %q", r.Schema, SchemaVersion)
	}
	if r.Seal == nil {
		return nil, fmt.Errorf("conformance: %w: the report has no seal", ErrTampered)
	}
	canon, err := canonical(data)
	if err != nil {
		return nil, err
	}
	var key []byte
	switch r.Seal.Algorithm {
	case "sha256":
	case "hmac-sha256":
		key = []byte(os.Getenv(KeyEnv))
		if len(key) == 0 {
			return nil, fmt.Errorf("conformance: the report is sealed with a lab key; set %s to verify it", KeyEnv)
		}
	default:
		return nil, fmt.Errorf("conformance: unknown seal algorithm %q", r.Seal.Algorithm)
	}
	want := digest(canon, key)
	if !hmac.Equal([]byte(want.Digest), []byte(r.Seal.Digest)) {
		return nil, fmt.Errorf("conformance: %w (digest %s, content hashes to %s)", ErrTampered, short(r.Seal.Digest), short(want.Digest))
	}
	// the totals must agree with the results they summarise
	t := totalsOf(r.Results)
	if t.Cases != r.Certification.Totals.Cases {
		return nil, fmt.Errorf("conformance: %w: totals say %d cases, results hold %d", ErrTampered, r.Certification.Totals.Cases, t.Cases)
	}
	return &r, nil
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "…"
	}
	return s
}

// Merge combines the reports of the shards of one run into the report of
// the whole run. Every input must be sealed, from the same backend, binary,
// suite, case set and profile, with distinct shards of the same count.
func Merge(reports []*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, errors.New("conformance: nothing to merge")
	}
	first := reports[0]
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
		c.Seal = nil
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

// WriteFiles writes the sealed JSON report, the JUnit XML and the HTML
// report into dir and returns their paths.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := r.Marshal()
	if err != nil {
		return nil, err
	}
	ju, err := r.JUnit()
	if err != nil {
		return nil, err
	}
	var html bytes.Buffer
	if err := r.HTML(&html); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{JSONFile, js}, {JUnitFile, ju}, {HTMLFile, html.Bytes()}} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, 0o644); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
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
