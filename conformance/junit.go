package conformance

import (
	"encoding/xml"
	"fmt"
	"strings"
)

// The JUnit XML structure (the Ant/Jenkins JUnit schema that CI systems
// consume): testsuites > testsuite (one per source) > testcase, with
// failure and skipped children.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func secs(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

// JUnit renders the report as JUnit XML: one testsuite per source, one
// testcase per case. Failures and unexpected passes are <failure>;
// not-delegated, unsupported, expected-failure and skipped cases are
// <skipped> with the reason (so none of them reads as passed). Every suite
// carries the report's ContentDigest (property report_sha256) and says
// where the certificate is; WriteFiles lists the file's own SHA-256 in the
// signed JSON.
func (r *Report) JUnit() ([]byte, error) {
	content, err := r.ContentDigest()
	if err != nil {
		return nil, err
	}
	return r.junit(content, "")
}

// certificateNote says, in the JUnit and HTML files, what covers them.
func certificateNote(signer string) string {
	if signer == "" {
		return JSONFile + " beside this file lists its sha256 under a plain digest only: NOT a certificate (unsigned)"
	}
	return JSONFile + " beside this file, signed by lab key " + signer + ", lists its sha256; check both with: switchyard conformance verify-report --lab-key LAB.pub DIR"
}

func (r *Report) junit(content, signer string) ([]byte, error) {
	c := r.Certification
	top := junitSuites{Name: "switchyard conformance: " + c.Backend.Name, Time: secs(c.DurationMS)}
	props := []junitProperty{
		{"backend", c.Backend.Name}, {"backend_version", c.Backend.Version}, {"load", c.Backend.Load},
		{"binary_sha256", c.Binary.SHA256}, {"hal_version", c.HALVersion}, {"suite_version", c.SuiteVersion},
		{"case_set_hash", c.CaseSetHash}, {"tolerance_policy", r.Tolerances.PolicyVersion}, {"tolerance_profile", r.Tolerances.Profile},
		{"report_schema", SchemaVersion}, {"report_sha256", content}, {"certificate", certificateNote(signer)},
	}
	bySource := map[Source]*junitSuite{}
	var order []Source
	for _, res := range r.Results {
		s := bySource[res.Source]
		if s == nil {
			s = &junitSuite{Name: string(res.Source), Timestamp: strings.TrimSuffix(c.Date, "Z"), Hostname: c.Device.Host, Properties: props}
			bySource[res.Source] = s
			order = append(order, res.Source)
		}
		class := "conformance." + string(res.Source)
		if res.Op != "" {
			class += "." + res.Op
		}
		jc := junitCase{Name: res.ID, Classname: class, Time: secs(res.DurationMS)}
		switch res.Status {
		case Fail, UnexpectedPass:
			jc.Failure = &junitFailure{Message: firstLine(res.Message), Type: string(res.Status), Body: failureText(res)}
			s.Failures++
		case Pass:
			if res.Message != "" {
				jc.SystemOut = res.Message
			}
		default:
			msg := string(res.Status) + ": " + res.Message
			jc.Skipped = &junitSkipped{Message: msg}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
	}
	var total float64
	for _, src := range order {
		s := bySource[src]
		var t float64
		for _, res := range r.Results {
			if res.Source == src {
				t += res.DurationMS
			}
		}
		total += t
		s.Time = secs(t)
		top.Suites = append(top.Suites, *s)
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Skipped += s.Skipped
	}
	out, err := xml.MarshalIndent(top, "", " ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func failureText(res Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "case %s\n%s\n", res.ID, res.Message)
	for _, in := range res.Inputs {
		fmt.Fprintf(&b, "input %s: %s%v\n", in.Name, in.DType, in.Shape)
	}
	if res.Tolerance != "" {
		fmt.Fprintf(&b, "tolerance: %s\n", res.Tolerance)
	}
	for _, m := range res.Mismatches {
		fmt.Fprintf(&b, "%s%v: got %s, want %s", m.Output, m.Index, m.Got, m.Want)
		if m.ULP > 0 {
			fmt.Fprintf(&b, " (%d ulp)", m.ULP)
		}
		b.WriteString("\n")
	}
	if res.Gap != nil {
		fmt.Fprintf(&b, "gap %s %q: %s\n", res.Gap.Kind, res.Gap.Pattern, res.Gap.Reason)
	}
	return b.String()
}
