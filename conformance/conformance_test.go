package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

func simHarness(opts sim.Options, filter string) conformance.Harness {
	h := conformance.Harness{Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(sim.New(opts), hal.LoadLinked) }}
	if filter != "" {
		h.Filter = regexp.MustCompile(filter)
	}
	h.Gaps = &conformance.Gaps{Backend: "sim"}
	return h
}

func run(t *testing.T, h conformance.Harness) *conformance.Report {
	t.Helper()
	rep, err := conformance.Execute(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func result(t *testing.T, rep *conformance.Report, id string) conformance.Result {
	t.Helper()
	for _, r := range rep.Results {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no result for %s", id)
	return conformance.Result{}
}

// Each injected fault of the simulation backend is caught by a named case,
// and the cases that should not see it still pass.
func TestFaultInjectionIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     sim.Options
		caught   string // the named case that must fail
		because  string // substring of its message
		unharmed string // a case that must still pass
	}{
		{"wrong-values-when-broadcasting", sim.Options{Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}},
			"op/Add/float32/bcast-row", "elements differ", "op/Add/float32/same"},
		{"swallow-nan", sim.Options{Ops: []string{"Max"}, Faults: sim.Faults{SwallowNaN: true}},
			"op/Max/float32/special", "elements differ", "op/Max/float32/same"},
		{"wrong-shape", sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{WrongShape: true}},
			"op/Relu/float32/rank3", "has shape [2 12], subgraph declares [2,3,4]", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := strings.Split(tc.caught, "/")[1]
			rep := run(t, simHarness(tc.opts, "^op/"+op+"/float32/"))
			r := result(t, rep, tc.caught)
			if r.Status != conformance.Fail || !strings.Contains(r.Message, tc.because) {
				t.Fatalf("%s: %s %q, want a failure saying %q", tc.caught, r.Status, r.Message, tc.because)
			}
			if tc.unharmed != "" {
				if u := result(t, rep, tc.unharmed); u.Status != conformance.Pass {
					t.Errorf("%s: %s %s, want pass (the fault is specific)", tc.unharmed, u.Status, u.Message)
				}
			}
			if len(r.Mismatches) == 0 && tc.name != "wrong-shape" {
				t.Errorf("%s: no differing elements recorded", tc.caught)
			}
			if rep.Certification.Passed {
				t.Error("a report with a failure says passed")
			}
		})
	}
}

// A backend that declines everything is "not delegated", never passed.
func TestDeclinedIsNotDelegated(t *testing.T) {
	rep := run(t, simHarness(sim.Options{Ops: []string{"Mul"}}, "^op/Add/float32/same$|^model/demo$"))
	for _, r := range rep.Results {
		if r.Status != conformance.NotDelegated {
			t.Errorf("%s: %s, want not-delegated", r.ID, r.Status)
		}
	}
	if rep.Certification.Totals.ByStatus[conformance.Pass] != 0 {
		t.Error("declined cases counted as passed")
	}
}

// A dishonest backend (claims, then refuses to compile) fails.
func TestDishonestSupportsFails(t *testing.T) {
	rep := run(t, simHarness(sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{RefuseCompile: true}}, "^op/Relu/float32/rank3$|^contract/supports-honest$"))
	for _, r := range rep.Results {
		if r.Status != conformance.Fail {
			t.Errorf("%s: %s %s, want fail", r.ID, r.Status, r.Message)
		}
	}
}

// Gap entries: unsupported cases are not run, expected failures that fail
// are recorded as such, and a stale entry (the case passes) is reported.
func TestGaps(t *testing.T) {
	h := simHarness(sim.Options{Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^op/Add/float32/(same|bcast-row|bcast-outer)$")
	g, err := conformance.ParseGaps([]byte(`{"backend":"sim","unsupported":[{"pattern":"bcast-outer","reason":"no outer broadcasting"}],
		"expected_failures":[{"pattern":"bcast-row","reason":"known bug"},{"pattern":"/same$","reason":"stale"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	h.Gaps = g
	rep := run(t, h)
	want := map[string]conformance.Status{"op/Add/float32/bcast-outer": conformance.Unsupported, "op/Add/float32/bcast-row": conformance.ExpectedFailure, "op/Add/float32/same": conformance.UnexpectedPass}
	for id, st := range want {
		if r := result(t, rep, id); r.Status != st || r.Gap == nil {
			t.Errorf("%s: %s (gap %v), want %s", id, r.Status, r.Gap, st)
		}
	}
	if rep.Certification.Passed {
		t.Error("a stale gap entry must fail the run")
	}
	if _, err := conformance.ParseGaps([]byte(`{"backend":"x","unsupported":[{"pattern":"a"}]}`)); err == nil {
		t.Error("a gap without a reason was accepted")
	}
}

// 4 shards merged give the same report as one full run.
func TestShardsMergeToFullRun(t *testing.T) {
	opts := sim.Options{Ops: []string{"Add", "Relu", "Conv", "Max", "Softmax"}, MaxTensorBytes: 4 << 20}
	filter := "^(op/(Add|Relu|Max|Softmax|Conv)/|contract/|model/demo)"
	full := run(t, simHarness(opts, filter))
	if !full.Certification.Complete || len(full.Results) < 100 {
		t.Fatalf("full run: complete=%v, %d results", full.Certification.Complete, len(full.Results))
	}
	var shards []*conformance.Report
	n := 0
	for i := 0; i < 4; i++ {
		h := simHarness(opts, filter)
		h.Shard = conformance.Shard{Index: i, Count: 4}
		rep := run(t, h)
		if rep.Certification.Complete {
			t.Errorf("shard %d claims to be complete", i)
		}
		if rep.Certification.CaseSetHash != full.Certification.CaseSetHash {
			t.Fatalf("shard %d has another case-set hash", i)
		}
		n += len(rep.Results)
		// through the sealed file, as a lab would
		b, err := rep.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		back, err := conformance.Verify(b, nil)
		if err != nil {
			t.Fatal(err)
		}
		shards = append(shards, back.Report)
	}
	if n != len(full.Results) {
		t.Fatalf("shards hold %d cases, the full run %d", n, len(full.Results))
	}
	merged, err := conformance.Merge([]*conformance.Report{shards[2], shards[0], shards[3], shards[1]})
	if err != nil {
		t.Fatal(err)
	}
	if err := conformance.Equivalent(merged, full); err != nil {
		t.Fatalf("merged shards differ from the full run: %v", err)
	}
	if _, err := conformance.Merge([]*conformance.Report{shards[0], shards[0]}); err == nil {
		t.Error("merging a shard twice was accepted")
	}
	partial, err := conformance.Merge(shards[:3])
	if err != nil {
		t.Fatal(err)
	}
	if partial.Certification.Complete || partial.Certification.Certified {
		t.Error("three of four shards claim to be complete")
	}
}

// The integrity digest detects any edit after sealing (a forger who
// recomputes it is caught only by a lab key: cert_test.go).
func TestSealDetectsEdits(t *testing.T) {
	rep := run(t, simHarness(sim.Options{Ops: []string{"Add"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^op/Add/float32/(same|bcast-row)$"))
	b, err := rep.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.Verify(b, nil); err != nil {
		t.Fatalf("fresh report: %v", err)
	}
	edits := map[string]func(string) string{
		"fail→pass":       func(s string) string { return strings.Replace(s, `"status": "fail"`, `"status": "pass"`, 1) },
		"backend version": func(s string) string { return strings.Replace(s, `"version": "1.0.0"`, `"version": "1.0.1"`, 1) },
		"added field":     func(s string) string { return strings.Replace(s, `"schema":`, `"note": "ok", "schema":`, 1) },
		"drop seal":       func(s string) string { return regexp.MustCompile(`(?s),\s*"seal": \{.*?\}`).ReplaceAllString(s, "") },
	}
	for name, edit := range edits {
		e := edit(string(b))
		if e == string(b) {
			t.Fatalf("%s: edit did not apply", name)
		}
		if _, err := conformance.Verify([]byte(e), nil); !errors.Is(err, conformance.ErrTampered) {
			t.Errorf("%s: Verify = %v, want ErrTampered", name, err)
		}
	}
	// re-indenting is not an edit of the content
	var v any
	_ = json.Unmarshal(b, &v)
	compact, _ := json.Marshal(v)
	if _, err := conformance.Verify(compact, nil); err != nil {
		t.Errorf("re-encoded report: %v", err)
	}
}

// The JUnit XML is read back with encoding/xml against the JUnit schema's
// structure (no well-kept Go JUnit parser exists on the module proxy:
// joshdk/go-junit has one release, from 2021).
type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Time     string `xml:"time,attr"`
		Props    []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Body    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestReportsJUnitAndHTML(t *testing.T) {
	h := simHarness(sim.Options{Ops: []string{"Add", "Conv", "Relu"}, MaxTensorBytes: 1 << 20, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^(op/(Add|Relu|Mul)/|contract/|model/demo$)")
	rep := run(t, h)
	dir := os.Getenv("CONFORMANCE_TEST_REPORT_DIR") // to look at the HTML
	if dir == "" {
		dir = t.TempDir()
	}
	if _, err := rep.WriteFiles(dir, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, conformance.JUnitFile))
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	var js jSuites
	if err := dec.Decode(&js); err != nil {
		t.Fatalf("JUnit XML does not parse: %v", err)
	}
	tot := rep.Certification.Totals
	fails := tot.ByStatus[conformance.Fail] + tot.ByStatus[conformance.UnexpectedPass]
	if js.Tests != tot.Cases || js.Failures != fails || js.Failures == 0 {
		t.Errorf("JUnit totals %d tests %d failures, report %d cases %d failures", js.Tests, js.Failures, tot.Cases, fails)
	}
	seen := 0
	for _, s := range js.Suites {
		n, f, sk := 0, 0, 0
		for _, c := range s.Cases {
			n++
			if c.Name == "" || c.Classname == "" || c.Time == "" {
				t.Errorf("testcase without name/classname/time in %s", s.Name)
			}
			if c.Failure != nil {
				f++
				if c.Name == "op/Add/float32/bcast-row" && !strings.Contains(c.Failure.Body, "got") {
					t.Errorf("failure body lacks the differing elements: %q", c.Failure.Body)
				}
			}
			if c.Skipped != nil {
				sk++
			}
		}
		if n != s.Tests || f != s.Failures || sk != s.Skipped {
			t.Errorf("suite %s: attributes %d/%d/%d, content %d/%d/%d", s.Name, s.Tests, s.Failures, s.Skipped, n, f, sk)
		}
		if len(s.Props) == 0 {
			t.Errorf("suite %s has no properties", s.Name)
		}
		seen += n
	}
	if seen != tot.Cases {
		t.Errorf("JUnit holds %d testcases, report %d", seen, tot.Cases)
	}
	html, err := os.ReadFile(filepath.Join(dir, conformance.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"op/Add/float32/bcast-row", "in0: float32[2 3]", "<table class=\"matrix\">", `class="fail"`, `class="nd"`, rep.Certification.CaseSetHash} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte("http://")) || bytes.Contains(html, []byte("https://")) {
		t.Error("HTML is not self-contained")
	}
}

// A case is reproducible by its ID: the same ID builds the same case.
func TestCasesAreReproducible(t *testing.T) {
	a, _, err := conformance.Cases(conformance.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := conformance.Cases(conformance.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) || len(a) < 1000 {
		t.Fatalf("%d vs %d cases", len(a), len(b))
	}
	perSource := map[conformance.Source]int{}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Fatalf("case %d: %s vs %s", i, a[i].ID, b[i].ID)
		}
		perSource[a[i].Source]++
	}
	t.Logf("quick cases per source: %v", perSource)
	c, err := conformance.CaseByID("op/Add/float32/bcast-row", "")
	if err != nil || c.Op != "Add" {
		t.Fatalf("CaseByID: %v %+v", err, c)
	}
	full, _, err := conformance.Cases(conformance.Config{Level: conformance.Full})
	if err != nil || len(full) <= len(a) {
		t.Fatalf("full level: %d cases (%v)", len(full), err)
	}
}

// Special values reach every float dtype; tolerances are data.
func TestTolerancePolicy(t *testing.T) {
	p := conformance.DefaultPolicy()
	if b := p.For("Reshape", graph.Float32, ""); b.Abs != 0 || b.Rel != 0 || b.ULP != 0 || !b.SignedZero {
		t.Errorf("Reshape float32 = %v, want exact with signed zero", b)
	}
	base := p.For("MatMul", graph.Float32, "")
	relaxed := p.For("MatMul", graph.Float32, "float16-compute")
	if relaxed.Abs <= base.Abs || relaxed.Rel <= base.Rel {
		t.Errorf("profile does not relax MatMul: %v vs %v", relaxed, base)
	}
	if err := p.CheckProfile("nope"); err == nil {
		t.Error("unknown profile accepted")
	}
	for _, bad := range []string{`{"version":"1","default":{"float33":{}}}`, `{"default":{}}`, `{"version":"1","default":{"float32":{"abs":-1}}}`, `{"version":"1","default":{},"extra":1}`} {
		if _, err := conformance.ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("policy %s accepted", bad)
		}
	}
}

// flaky is a backend whose executions report Unavailable once, like a
// plugin process that died: the suite fails that case, reopens the backend
// and goes on.
type flaky struct {
	*sim.Backend
	fail *atomic.Bool
	pid  int // the stand-in plugin process
}

func (f flaky) PID() int { return f.pid }

func (f flaky) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	e, err := f.Backend.Compile(ctx, sg, o)
	if err != nil {
		return nil, err
	}
	return flakyExe{e, f.fail}, nil
}

type flakyExe struct {
	hal.Executable
	fail *atomic.Bool
}

func (f flakyExe) Execute(ctx context.Context, in, out []*graph.Tensor) error {
	if f.fail.CompareAndSwap(true, false) {
		return hal.Errorf(hal.CodeUnavailable, "plugin process exited (simulated)")
	}
	return f.Executable.Execute(ctx, in, out)
}

func TestCrashedBackendIsReopened(t *testing.T) {
	var opens atomic.Int32
	fail := &atomic.Bool{}
	fail.Store(true)
	plugin := filepath.Join(t.TempDir(), "plugin")
	pid := startPlugin(t, plugin, "")
	h := conformance.Harness{Open: func(ctx context.Context) (*hal.Device, error) {
		opens.Add(1)
		return hal.NewDevice(flaky{sim.New(sim.Options{Ops: []string{"Add"}}), fail, pid}, hal.LoadProcess)
	}, Gaps: &conformance.Gaps{}}
	h.Filter = regexp.MustCompile("^op/Add/float32/(bcast-row|same|scalars)$")
	rep := run(t, h)
	st := map[conformance.Status]int{}
	for _, r := range rep.Results {
		st[r.Status]++
	}
	if st[conformance.Fail] != 1 || st[conformance.Pass] != 2 {
		t.Errorf("statuses %v, want 1 fail then 2 passes", st)
	}
	if opens.Load() < 2 {
		t.Errorf("backend opened %d times, want a reopen after Unavailable", opens.Load())
	}
	// bound at the first open and again, unchanged, at the reopen
	if b := rep.Certification.Binary; b.Source != conformance.BinaryProcessImage || b.SHA256 != sha256File(t, plugin) {
		t.Errorf("a process backend's binary: %+v", b)
	}
}

// stuck ignores its context: Execute of an Add over broadcast inputs
// hangs far past any deadline.
type stuck struct{ *sim.Backend }

func (s stuck) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	e, err := s.Backend.Compile(ctx, sg, o)
	if err != nil {
		return nil, err
	}
	return stuckExe{e}, nil
}

type stuckExe struct{ hal.Executable }

func (s stuckExe) Execute(ctx context.Context, in, out []*graph.Tensor) error {
	if len(in) == 2 && !graph.SameShape(in[0].Shape, in[1].Shape) {
		time.Sleep(3 * time.Second)
	}
	return s.Executable.Execute(ctx, in, out)
}

func TestHungCaseFailsAndRunGoesOn(t *testing.T) {
	defer conformance.SetHangGrace(100 * time.Millisecond)()
	h := conformance.Harness{Open: func(ctx context.Context) (*hal.Device, error) {
		return hal.NewDevice(stuck{sim.New(sim.Options{Ops: []string{"Add"}})}, hal.LoadLinked)
	}, Gaps: &conformance.Gaps{}}
	h.Filter = regexp.MustCompile("^op/Add/float32/(bcast-row|same)$")
	h.Timeout = 200 * time.Millisecond
	t0 := time.Now()
	rep := run(t, h)
	if r := result(t, rep, "op/Add/float32/bcast-row"); r.Status != conformance.Fail || !strings.Contains(r.Message, "hung") {
		t.Errorf("bcast-row: %s %s, want a hang failure", r.Status, r.Message)
	}
	if r := result(t, rep, "op/Add/float32/same"); r.Status != conformance.Pass {
		t.Errorf("same: %s %s, want pass after the hang", r.Status, r.Message)
	}
	if d := time.Since(t0); d > 2500*time.Millisecond {
		t.Errorf("the run waited %v for a hung case", d)
	}
}

// The JUnit XML read by a standard consumer: test-results-parser (the npm
// package CI dashboards such as testbeats use), installed by
// .ci/install.d/junit.sh into SWITCHYARD_JUNIT_PARSER_DIR. It skips where
// the parser is not installed, unless SWITCHYARD_REQUIRE_SHARED=1 (CI).
func TestJUnitReadByStandardConsumer(t *testing.T) {
	dir := os.Getenv("SWITCHYARD_JUNIT_PARSER_DIR")
	node, nodeErr := exec.LookPath("node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "test-results-parser")); dir == "" || err != nil || nodeErr != nil {
		msg := "the JUnit consumer (node + test-results-parser in SWITCHYARD_JUNIT_PARSER_DIR) is not installed; see .ci/install.d/junit.sh"
		if os.Getenv("SWITCHYARD_REQUIRE_SHARED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	h := simHarness(sim.Options{Ops: []string{"Add", "Relu"}, Faults: sim.Faults{WrongValues: true, WrongValuesOp: "Add", WrongValuesWhenBroadcasting: true}}, "^op/(Add|Relu)/")
	rep := run(t, h)
	out := t.TempDir()
	if _, err := rep.WriteFiles(out, nil); err != nil {
		t.Fatal(err)
	}
	script := `const {parse} = require("test-results-parser");
const r = parse({type: "junit", files: [process.argv[1]]});
console.log(JSON.stringify({total: r.total, passed: r.passed, failed: r.failed, skipped: r.skipped}));`
	cmd := exec.Command(node, "-e", script, filepath.Join(out, conformance.JUnitFile))
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("test-results-parser: %v", err)
	}
	var got struct{ Total, Passed, Failed, Skipped int }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	tot := rep.Certification.Totals
	fails := tot.ByStatus[conformance.Fail] + tot.ByStatus[conformance.UnexpectedPass]
	if got.Total != tot.Cases || got.Failed != fails || fails == 0 || got.Passed != tot.ByStatus[conformance.Pass] {
		t.Fatalf("consumer read %+v; report has %d cases, %d pass, %d failures", got, tot.Cases, tot.ByStatus[conformance.Pass], fails)
	}
	t.Logf("test-results-parser read %+v", got)
}
