package conformance

import (
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"regexp"
	"sort"
	"strings"
)

// The verdict a report states is recomputed from its per-case results and
// its gap declarations, so a report cannot say more than its results do:
// not by editing the counts, not by relabelling a failure as an expected
// one without a gap entry that says so, not by calling a partial or
// unbound run certified.

// verdict gives Passed and Certified from the rest of the record.
func verdict(c *Certification) (passed, certified bool) {
	passed = c.Totals.OK()
	certified = passed && c.Complete && c.Filter == "" && len(c.Sources) == 0 && validSHA256(c.Binary.SHA256)
	return passed, certified
}

func validSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32 && s == strings.ToLower(s)
}

func knownStatus(s Status) bool {
	for _, x := range Statuses {
		if x == s {
			return true
		}
	}
	return false
}

func knownSource(s Source) bool {
	for _, x := range Sources {
		if x == s {
			return true
		}
	}
	return false
}

// compiledGaps compiles a report's gap declaration (as read from JSON, its
// patterns are not compiled yet).
func compiledGaps(g *Gaps) (*Gaps, error) {
	if g == nil {
		return nil, nil
	}
	out := &Gaps{Backend: g.Backend}
	for _, src := range []struct {
		in  []Gap
		out *[]Gap
	}{{g.Unsupported, &out.Unsupported}, {g.ExpectedFailures, &out.ExpectedFailures}} {
		for _, x := range src.in {
			re, err := regexp.Compile(x.Pattern)
			if err != nil {
				return nil, fmt.Errorf("gap pattern %q: %v", x.Pattern, err)
			}
			*src.out = append(*src.out, Gap{Pattern: x.Pattern, Reason: x.Reason, re: re})
		}
	}
	return out, nil
}

// checkGap says whether a result's status and gap reference are what the
// declared gaps give for its ID (runner.runCase's rules).
func checkGap(res Result, g *Gaps) error {
	kind, gap := g.match(res.ID)
	if kind == "" {
		if res.Gap != nil {
			return fmt.Errorf("case %s cites gap %q, which the declaration does not hold for it", res.ID, res.Gap.Pattern)
		}
		switch res.Status {
		case Unsupported, ExpectedFailure, UnexpectedPass:
			return fmt.Errorf("case %s is %s, but no declared gap covers it", res.ID, res.Status)
		}
		return nil
	}
	want := GapRef{Kind: kind, Pattern: gap.Pattern, Reason: gap.Reason}
	if res.Gap == nil || *res.Gap != want {
		return fmt.Errorf("case %s matches declared %s gap %q, the result cites %+v", res.ID, kind, gap.Pattern, res.Gap)
	}
	switch kind {
	case "unsupported":
		if res.Status != Unsupported {
			return fmt.Errorf("case %s is declared unsupported (not run), the result says %s", res.ID, res.Status)
		}
	case "expected-failure":
		switch res.Status {
		case Pass, Fail, Unsupported:
			return fmt.Errorf("case %s has an expected-failure gap, so %s is impossible (a failure is expected-failure, a pass unexpected-pass)", res.ID, res.Status)
		}
	}
	return nil
}

func sameCounts(a, b map[Status]int) bool {
	for k, v := range a {
		if v == 0 {
			return false // a zero entry is never written
		}
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// Check recomputes the totals, completeness and verdict from the per-case
// results and the gap declarations and returns an ErrInconsistent naming
// the first disagreement. Sign refuses, and Verify rejects, a report that
// fails it.
func (r *Report) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("conformance: %w: %s", ErrInconsistent, fmt.Sprintf(format, args...))
	}
	c := &r.Certification
	if !validSHA256(c.Binary.SHA256) {
		return bad("binary sha256 %q is not 64 lowercase hex digits: the tested binary is not bound", c.Binary.SHA256)
	}
	gaps, err := compiledGaps(r.Gaps)
	if err != nil {
		return bad("%v", err)
	}
	// shards: distinct, of one count, and every result in one of them
	count := 0
	inShard := map[int]bool{}
	for _, s := range c.Shards {
		if s.Count < 2 || s.Index < 0 || s.Index >= s.Count {
			return bad("invalid shard %v", s)
		}
		if count != 0 && s.Count != count {
			return bad("shards %v do not split the run one way", c.Shards)
		}
		if inShard[s.Index] {
			return bad("shard %v listed twice", s)
		}
		count = s.Count
		inShard[s.Index] = true
	}
	if count != 0 && len(inShard) == count {
		return bad("every one of the %d shards is listed: a merged whole run lists none", count)
	}
	seen := map[string]bool{}
	for _, res := range r.Results {
		switch {
		case res.ID == "":
			return bad("a result has no case ID")
		case seen[res.ID]:
			return bad("case %s appears twice", res.ID)
		case !knownStatus(res.Status):
			return bad("case %s has unknown status %q", res.ID, res.Status)
		case !knownSource(res.Source):
			return bad("case %s has unknown source %q", res.ID, res.Source)
		case !strings.HasPrefix(res.ID, string(res.Source)+"/"):
			return bad("case %s is recorded under source %q", res.ID, res.Source)
		case count != 0 && !inShard[shardOf(res.ID, count)]:
			return bad("case %s belongs to shard %d/%d, which the report does not hold", res.ID, shardOf(res.ID, count), count)
		}
		seen[res.ID] = true
		if err := checkGap(res, gaps); err != nil {
			return bad("%v", err)
		}
	}
	t := totalsOf(r.Results)
	if t.Cases != c.Totals.Cases {
		return bad("totals say %d cases, the results hold %d", c.Totals.Cases, t.Cases)
	}
	if !sameCounts(c.Totals.ByStatus, t.ByStatus) {
		return bad("totals by status %s, the results give %s", countsString(c.Totals.ByStatus), countsString(t.ByStatus))
	}
	srcs := map[Source]bool{}
	for s := range t.BySource {
		srcs[s] = true
	}
	for s := range c.Totals.BySource {
		srcs[s] = true
	}
	for s := range srcs {
		if !sameCounts(c.Totals.BySource[s], t.BySource[s]) {
			return bad("totals for source %s %s, the results give %s", s, countsString(c.Totals.BySource[s]), countsString(t.BySource[s]))
		}
	}
	if len(r.Results) > c.CaseSetSize {
		return bad("%d results for a case set of %d", len(r.Results), c.CaseSetSize)
	}
	if complete := len(r.Results) == c.CaseSetSize; c.Complete != complete {
		return bad("complete is %v, but the report holds %d of %d cases", c.Complete, len(r.Results), c.CaseSetSize)
	}
	passed, certified := verdict(c)
	if c.Passed != passed {
		return bad("passed is %v, the results give %v (%d fail, %d unexpected-pass)", c.Passed, passed, t.ByStatus[Fail], t.ByStatus[UnexpectedPass])
	}
	if c.Certified != certified {
		return bad("certified is %v, the record gives %v (passed %v, complete %v, filter %q, sources %v, binary sha256 %q)", c.Certified, certified, passed, c.Complete, c.Filter, c.Sources, c.Binary.SHA256)
	}
	for _, f := range r.Files {
		if !validSHA256(f.SHA256) || f.Name == "" || f.Name != baseName(f.Name) {
			return bad("file entry %+v is not a plain file name and a sha256", f)
		}
	}
	return nil
}

func baseName(s string) string {
	if s == "." || s == ".." || strings.ContainsAny(s, `/\`) {
		return ""
	}
	return s
}

func countsString(m map[Status]int) string {
	keys := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		keys = append(keys, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(keys, " ") + "}"
}

func sortedKeys(m map[Status]int) []Status {
	ks := make([]Status, 0, len(m))
	for k := range maps.Keys(m) {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// readBounded reads all of r, refusing more than limit bytes.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}
