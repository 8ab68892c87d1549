package conformance

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the reference every backend is held to, and the runtime's fallback
	"github.com/switchyard-hal/switchyard/runtime"
)

// SuiteVersion is the version of the case set and its semantics. It
// changes whenever a case's meaning changes; reports record it.
const SuiteVersion = "1.1.0"

// Harness is what a backend's test gives the suite: how to open the
// backend, and what it declares about itself. A backend's conformance
// test is a Harness plus one Run call.
type Harness struct {
	// Open returns a freshly opened device for the backend under test. It
	// is called at the start, for contract cases that need a device of
	// their own (Close twice), and again after the backend reported
	// Unavailable (a crashed plugin process). Required.
	Open func(ctx context.Context) (*hal.Device, error)
	// Gaps are the backend's declared gaps. Nil takes the vendor's: the
	// "gaps" of the manifest named by Manifest, else the backend's own
	// (GapDeclarer); else conformance/gaps/<name>.json, kept for in-tree
	// backends (none when there is no such file).
	Gaps *Gaps
	// Manifest is the plugin manifest the backend was installed with,
	// whose "gaps" its vendor ships (empty for none).
	Manifest string
	// Profile names a relaxed tolerance profile of the policy the backend
	// opts into ("" = none). It is disclosed in the report.
	Profile string
	// Policy overrides the tolerance policy (nil = tolerances.json).
	Policy *Policy
	// Binary is the file Open has its loader load (a plugin binary, a
	// shared library): the fallback the harness hashes where the loaded
	// image cannot be read, and otherwise a cross-check. The record always
	// comes from what was loaded (see BinaryReporter); a Binary whose
	// content differs refuses the run. Empty for a linked backend.
	Binary string
	// BinarySHA256 is the checksum the loader verified the file against
	// before loading it (a manifest's sha256), if any: the bound binary
	// must have it.
	BinarySHA256 string
	// AssertBinary is a file someone claims is the backend under test (the
	// CLI's --binary). It is never what gets recorded: the run is refused
	// unless its content is the loaded binary's.
	AssertBinary string
	// LoseDevice, when set, makes a device Open returned lose its device
	// now, as a driver reset or a crashed plugin process would: its
	// pending fences fail with Unavailable and later calls are refused
	// with Unavailable. The contract/devmem/device-lost case needs it and
	// is skipped without it.
	LoseDevice func(ctx context.Context, d *hal.Device) error
	Config
}

// Shard selects the cases with shardOf(ID, Count) == Index.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard parses "I/N" (0 <= I < N).
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.Index, &sh.Count); err != nil || sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count || fmt.Sprintf("%d/%d", sh.Index, sh.Count) != s {
		return Shard{}, fmt.Errorf("conformance: shard %q: want I/N with 0 <= I < N", s)
	}
	return sh, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Config selects and paces cases.
type Config struct {
	// Level is Quick (default) or Full.
	Level Level
	// Filter keeps only cases whose ID matches (nil = all).
	Filter *regexp.Regexp
	// Shard runs one deterministic slice of the cases (zero = all).
	Shard Shard
	// Timeout bounds each case (default 60s). A case still running after
	// its deadline plus a grace period is failed as hung and the run goes on.
	Timeout time.Duration
	// Sources restricts the sources (nil = all).
	Sources []Source
	// SharedRoot is ../shared (models and ONNX node tests); "" = absent.
	SharedRoot string
	// Progress, when set, is called after each case.
	Progress func(done, total int, r *Result)
}

func (c Config) wants(s Source) bool {
	if len(c.Sources) == 0 {
		return true
	}
	for _, x := range c.Sources {
		if x == s {
			return true
		}
	}
	return false
}

// Cases lists the cases a configuration selects before sharding (the set
// the case-set hash covers), and the schema ops without generated cases.
func Cases(cfg Config) (cases []Case, uncovered []string, err error) {
	level := cfg.Level
	if level == "" {
		level = Quick
	}
	if level != Quick && level != Full {
		return nil, nil, fmt.Errorf("conformance: unknown level %q (quick or full)", level)
	}
	var all []Case
	if cfg.wants(SourceOp) {
		cs, unc, err := opCases(level)
		if err != nil {
			return nil, nil, err
		}
		all, uncovered = append(all, cs...), unc
	}
	if cfg.wants(SourceContract) {
		all = append(all, contractCases()...)
	}
	if cfg.wants(SourceModel) {
		all = append(all, modelCases(cfg.SharedRoot)...)
	}
	if cfg.wants(SourceExternal) {
		all = append(all, externalCases(cfg.SharedRoot, level)...)
	}
	for _, c := range all {
		if cfg.Filter == nil || cfg.Filter.MatchString(c.ID) {
			cases = append(cases, c)
		}
	}
	sort.SliceStable(cases, func(i, j int) bool {
		if a, b := sourceRank(cases[i].Source), sourceRank(cases[j].Source); a != b {
			return a < b
		}
		return cases[i].ID < cases[j].ID
	})
	for i := 1; i < len(cases); i++ {
		if cases[i].ID == cases[i-1].ID {
			return nil, nil, fmt.Errorf("conformance: duplicate case ID %q", cases[i].ID)
		}
	}
	return cases, uncovered, nil
}

// CaseByID finds one case (any level) so it can be reproduced alone.
func CaseByID(id, sharedRoot string) (Case, error) {
	for _, level := range []Level{Quick, Full} {
		cs, _, err := Cases(Config{Level: level, SharedRoot: sharedRoot, Filter: regexp.MustCompile("^" + regexp.QuoteMeta(id) + "$")})
		if err != nil {
			return Case{}, err
		}
		if len(cs) == 1 {
			return cs[0], nil
		}
	}
	return Case{}, fmt.Errorf("conformance: no case %q", id)
}

// aliasName is the name the cpu backend is tested under: the runtime
// treats a device named "cpu" as its own reference kernels and would not
// call the backend through the HAL at all.
const aliasName = "cpu-under-test"

type aliased struct {
	hal.Backend
	name string
}

func (a aliased) Info() hal.Info { i := a.Backend.Info(); i.Name = a.name; return i }

// underTest wraps an opened device the way the runtime will reach it.
func underTest(d *hal.Device) (*hal.Device, error) {
	if d.Name() != runtime.CPU {
		return d, nil
	}
	return hal.NewDevice(aliased{Backend: d.Backend(), name: aliasName}, d.Kind())
}

// runner executes cases against one backend.
type runner struct {
	h      Harness
	policy *Policy
	gaps   *Gaps

	mu     sync.Mutex
	dev    *hal.Device // as opened by the harness
	test   *hal.Device // as the runtime reaches it
	reopen bool
	caps   hal.Capabilities
	bin    *BinaryRecord // bound at the first open
	binErr error         // the binary changed during the run

	sweepOnce sync.Once
	swept     *sweep // the integrity sweep over claimed single-op cases
}

// bind binds the binary of a freshly opened device: the first time it is
// recorded, later (after a reopen) it must be the same. Callers hold r.mu.
func (r *runner) bind(d *hal.Device) error {
	if r.bin != nil && d.Kind() == hal.LoadLinked {
		return nil // the running executable cannot change
	}
	rec, err := bindBinary(d, &r.h)
	if err != nil {
		if r.bin != nil {
			r.binErr = err
		}
		return err
	}
	if r.bin == nil {
		r.bin = &rec
		return nil
	}
	if rec.SHA256 != r.bin.SHA256 {
		r.binErr = fmt.Errorf("conformance: %w: the backend's binary changed during the run (sha256 %s from %s at the start, %s from %s after reopening): no report", ErrBinaryMismatch, r.bin.SHA256, r.bin.Path, rec.SHA256, rec.Path)
		return r.binErr
	}
	return nil
}

func (r *runner) device(ctx context.Context) (*hal.Device, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.test != nil && !r.reopen {
		return r.test, nil
	}
	if r.dev != nil {
		_ = r.dev.Close()
	}
	r.dev, r.test, r.reopen = nil, nil, false
	d, err := r.h.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("conformance: opening the backend: %w", err)
	}
	if err := r.bind(d); err != nil {
		_ = d.Close()
		return nil, err
	}
	t, err := underTest(d)
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	caps, err := t.Capabilities(ctx)
	if err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("conformance: backend capabilities: %w", err)
	}
	r.dev, r.test, r.caps = d, t, caps
	return t, nil
}

func (r *runner) markGone(err error) {
	if errors.Is(err, hal.ErrUnavailable) || errors.Is(err, hal.ErrFailedPrecondition) {
		r.mu.Lock()
		r.reopen = true
		r.mu.Unlock()
	}
}

func (r *runner) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dev != nil {
		_ = r.dev.Close()
	}
}

// hangGrace is how long past its deadline a case may take before it is
// failed as hung (a variable for the suite's own tests).
var hangGrace = 5 * time.Second

// runCase runs one case under its timeout, applies the gaps and never lets
// a panic or a hang stop the run.
func (r *runner) runCase(ctx context.Context, c Case) (res Result) {
	start := time.Now()
	defer func() { res.DurationMS = float64(time.Since(start).Microseconds()) / 1000 }()
	base := Result{ID: c.ID, Source: c.Source, Op: c.Op, DType: c.DType}
	kind, gap := r.gaps.match(c.ID)
	if kind == "unsupported" {
		base.Status, base.Message = Unsupported, gap.Reason
		base.Gap = &GapRef{Kind: kind, Pattern: gap.Pattern, Reason: gap.Reason}
		return base
	}
	timeout := r.h.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		var out Result
		defer func() {
			if p := recover(); p != nil {
				out = base
				out.Status, out.Message = Fail, fmt.Sprintf("panic escaped the public path: %v", p)
			}
			done <- out
		}()
		out = r.execute(cctx, c, base)
	}()
	grace := hangGrace + timeout/10
	select {
	case res = <-done:
	case <-time.After(timeout + grace):
		res = base
		res.Status, res.Message = Fail, fmt.Sprintf("hung: no result %v after the case's %v deadline (the backend ignores cancellation); the run goes on", grace, timeout)
		r.mu.Lock()
		r.reopen = true
		r.mu.Unlock()
	}
	if kind == "expected-failure" {
		res.Gap = &GapRef{Kind: kind, Pattern: gap.Pattern, Reason: gap.Reason}
		switch res.Status {
		case Fail:
			res.Status = ExpectedFailure
		case Pass:
			res.Status, res.Message = UnexpectedPass, "passed, but the gap file expects a failure: remove the stale entry "+strconvQuote(gap.Pattern)
		}
	}
	return res
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

func (r *runner) execute(ctx context.Context, c Case, res Result) Result {
	dev, err := r.device(ctx)
	if err != nil {
		res.Status, res.Message = Fail, err.Error()
		return res
	}
	if c.contract != nil {
		o := c.contract(ctx, &contractEnv{r: r, dev: dev, caps: r.caps})
		res.Status, res.Message = o.status, o.msg
		return res
	}
	mc, err := c.build()
	if err != nil {
		res.Status, res.Message = Fail, "building the case: "+err.Error()
		if c.Source == SourceExternal {
			// the importer cannot read the material (float8/int4 tensors,
			// sequences): neither can the reference, so nothing to compare
			res.Status, res.Message = Skipped, "the ONNX importer cannot read the test material: "+err.Error()
		}
		return res
	}
	return r.runModelCase(ctx, dev, c, mc, res)
}

func load(ctx context.Context, mc *modelCase, opts *runtime.Options) (*runtime.Model, error) {
	if mc.path != "" {
		return runtime.Load(ctx, mc.path, opts)
	}
	return runtime.LoadBytes(ctx, mc.model, opts)
}

func (r *runner) runModelCase(ctx context.Context, dev *hal.Device, c Case, mc *modelCase, res Result) Result {
	for _, name := range mc.order {
		t := mc.inputs[name]
		res.Inputs = append(res.Inputs, TensorDesc{Name: name, DType: t.DType.String(), Shape: append([]int{}, t.Shape...)})
	}
	// the reference: the same model on the cpu kernels alone
	ref, err := load(ctx, mc, nil)
	if err != nil {
		var ue *runtime.UnsupportedError
		if c.Source != SourceOp && (errors.As(err, &ue) || errors.Is(err, onnx.ErrUnsupportedType)) {
			res.Status, res.Message = Skipped, "outside the reference kernels' supported set: "+err.Error()
			return res
		}
		res.Status, res.Message = Fail, "the reference cannot load the case (a suite bug): "+err.Error()
		return res
	}
	defer ref.Close()
	outs := ref.Outputs()
	want := mc.expected
	refOut, err := ref.Run(ctx, mc.inputs)
	if err != nil {
		if c.Source != SourceOp && errors.Is(err, kernels.ErrUnsupported) {
			res.Status, res.Message = Skipped, "outside the reference kernels' supported set: "+err.Error()
			return res
		}
		if want == nil {
			res.Status, res.Message = Fail, "the reference cannot run the case (a suite bug): "+err.Error()
			return res
		}
	}
	if want == nil {
		for _, o := range outs {
			want = append(want, refOut[o.Name])
		}
	} else if len(want) != len(outs) {
		res.Status, res.Message = Fail, fmt.Sprintf("%d expected outputs for %d model outputs", len(want), len(outs))
		return res
	}
	// the backend, through the same public path as an app
	m, err := load(ctx, mc, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{Strict: mc.strict, IgnoreCosts: true}}) // the backend under test takes what it claims
	if err != nil {
		var ue *partitioner.UnplacedError
		if errors.As(err, &ue) {
			res.Status, res.Message = NotDelegated, declines(ue.Nodes, dev.Name())
			return res
		}
		r.markGone(err)
		res.Status, res.Message = Fail, "the backend claimed the case's nodes but loading failed (Supports must be honest): "+err.Error()
		return res
	}
	defer m.Close()
	res.Nodes = len(m.Plan().Nodes)
	var declined []partitioner.NodePlacement
	for _, np := range m.Plan().Nodes {
		if np.Backend == dev.Name() {
			res.Delegated++
		} else {
			declined = append(declined, np)
		}
	}
	if res.Delegated == 0 {
		res.Status, res.Message = NotDelegated, declines(declined, dev.Name())
		return res
	}
	got, err := m.Run(ctx, mc.inputs)
	if err != nil {
		r.markGone(err)
		res.Status, res.Message = Fail, "run: "+err.Error()
		return res
	}
	var problems []string
	for i, o := range m.Outputs() {
		w := want[i]
		if w == nil {
			continue
		}
		var b Bound
		switch {
		case c.Source == SourceOp:
			b = r.policy.For(mc.tolOp, w.DType, r.h.Profile)
		case c.Source == SourceExternal:
			b = r.policy.forSection(r.policy.External, mc.tolOp, w.DType, r.h.Profile)
		default:
			b = r.policy.forSection(r.policy.Models, mc.tolOp, w.DType, r.h.Profile)
		}
		if w.DType.IsFloat() && res.Tolerance == "" {
			res.Tolerance = b.String()
		}
		cmp := compareTensors(o.Name, got[o.Name], w, b)
		if cmp.problem != "" {
			problems = append(problems, cmp.problem)
			res.Mismatches = append(res.Mismatches, cmp.mismatches...)
		}
	}
	if len(problems) > 0 {
		res.Status, res.Message = Fail, strings.Join(problems, "; ")
		return res
	}
	res.Status = Pass
	if res.Delegated < res.Nodes {
		res.Message = fmt.Sprintf("%d of %d nodes delegated; the rest ran on the reference kernels", res.Delegated, res.Nodes)
	}
	return res
}

func declines(nodes []partitioner.NodePlacement, backend string) string {
	var parts []string
	for _, n := range nodes {
		for _, d := range n.Declined {
			if d.Backend == backend {
				parts = append(parts, fmt.Sprintf("%s: %s", n.OpType, d.Reason))
			}
		}
		if len(parts) >= 3 {
			break
		}
	}
	if len(parts) == 0 {
		return "the backend took no node"
	}
	return "declined by the backend: " + strings.Join(parts, "; ")
}

// Execute runs the suite against a backend and returns the report. The
// error is for problems of the run itself (bad configuration, a backend
// that cannot be opened); case failures are in the report.
func Execute(ctx context.Context, h Harness) (*Report, error) {
	if h.Open == nil {
		return nil, errors.New("conformance: Harness.Open is nil")
	}
	policy := h.Policy
	if policy == nil {
		policy = DefaultPolicy()
	}
	if err := policy.CheckProfile(h.Profile); err != nil {
		return nil, err
	}
	if h.Shard.Count == 0 {
		h.Shard = Shard{Index: 0, Count: 1}
	}
	if h.Shard.Index < 0 || h.Shard.Index >= h.Shard.Count {
		return nil, fmt.Errorf("conformance: invalid shard %v", h.Shard)
	}
	if h.Level == "" {
		h.Level = Quick
	}
	r := &runner{h: h, policy: policy}
	defer r.close()
	start := time.Now()
	dev, err := r.device(ctx)
	if err != nil {
		return nil, err
	}
	if r.gaps, err = gapsFor(&h, r.dev); err != nil {
		return nil, err
	}
	cases, uncovered, err := Cases(h.Config)
	if err != nil {
		return nil, err
	}
	var ids []string
	var mine []Case
	for _, c := range cases {
		ids = append(ids, c.ID)
		if shardOf(c.ID, h.Shard.Count) == h.Shard.Index {
			mine = append(mine, c)
		}
	}
	rep := newReport(r.dev, dev, h, *r.bin, policy, r.gaps)
	rep.Certification.CaseSetHash = caseSetHash(ids)
	rep.Certification.CaseSetSize = len(ids)
	rep.Coverage.UncoveredOps = uncovered
	if h.Shard.Count > 1 {
		rep.Certification.Shards = []Shard{h.Shard}
	}
	for i, c := range mine {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.bindErr(); err != nil {
			return nil, err
		}
		res := r.runCase(ctx, c)
		rep.Results = append(rep.Results, res)
		if h.Progress != nil {
			h.Progress(i+1, len(mine), &rep.Results[len(rep.Results)-1])
		}
	}
	if err := r.recheck(); err != nil {
		return nil, err
	}
	sortResults(rep.Results)
	rep.finish(time.Since(start))
	return rep, nil
}

func (r *runner) bindErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.binErr
}

// recheck binds the current device's binary once more at the end of the
// run (a plugin process the loader restarted on its own was executed
// again). A process that is not running now was verified by its loader
// when it was started; that is left to the loader.
func (r *runner) recheck() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.binErr != nil {
		return r.binErr
	}
	if r.dev == nil || r.reopen || r.dev.Kind() == hal.LoadLinked {
		return nil
	}
	rec, err := bindBinary(r.dev, &r.h)
	if err != nil {
		if p, ok := r.dev.Backend().(interface{ PID() int }); ok && p.PID() <= 0 {
			return nil
		}
		return fmt.Errorf("conformance: binding the binary again at the end of the run: %w", err)
	}
	if rec.SHA256 != r.bin.SHA256 {
		return fmt.Errorf("conformance: %w: the backend's binary changed during the run (sha256 %s from %s at the start, %s from %s at the end): no report", ErrBinaryMismatch, r.bin.SHA256, r.bin.Path, rec.SHA256, rec.Path)
	}
	return nil
}
