package conformance

import "sort"

// Status is a case's outcome.
type Status string

const (
	// Pass: the backend took the case and matched the reference.
	Pass Status = "pass"
	// Fail: wrong values, wrong shape, an error, a crash or a hang.
	Fail Status = "fail"
	// NotDelegated: the backend declined the case's nodes (an honest
	// "unsupported" verdict). Never counted as passed.
	NotDelegated Status = "not-delegated"
	// Unsupported: the backend's gap file declares the case permanently
	// unsupported; it was not run.
	Unsupported Status = "unsupported"
	// ExpectedFailure: failed, as the backend's gap file says it will.
	ExpectedFailure Status = "expected-failure"
	// UnexpectedPass: the gap file expects a failure but the case passed;
	// the entry is stale and fails the run until it is removed.
	UnexpectedPass Status = "unexpected-pass"
	// Skipped: the case does not apply (material absent, no declared limit,
	// outside the reference's own supported set); the reason says which.
	Skipped Status = "skipped"
)

// Statuses in report order.
var Statuses = []Status{Pass, Fail, UnexpectedPass, ExpectedFailure, NotDelegated, Unsupported, Skipped}

// TensorDesc describes an input in a report.
type TensorDesc struct {
	Name  string `json:"name"`
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
}

// GapRef is the gap entry a result matched.
type GapRef struct {
	Kind    string `json:"kind"` // "unsupported" or "expected-failure"
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
}

// Result is one case's outcome as recorded in reports.
type Result struct {
	ID      string `json:"id"`
	Source  Source `json:"source"`
	Op      string `json:"op,omitempty"`
	DType   string `json:"dtype,omitempty"`
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"`
	// Inputs are the case's runtime inputs (op, model and external cases).
	Inputs []TensorDesc `json:"inputs,omitempty"`
	// Mismatches are the first differing elements of a failed comparison.
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	// Tolerance applied to float outputs, e.g. "abs 1e-06, rel 1e-05, ulp 4".
	Tolerance string `json:"tolerance,omitempty"`
	// Nodes and Delegated count the model's nodes and those the backend took.
	Nodes     int     `json:"nodes,omitempty"`
	Delegated int     `json:"delegated,omitempty"`
	Gap       *GapRef `json:"gap,omitempty"`
	// DurationMS is wall time; it is excluded from report equivalence.
	DurationMS float64 `json:"duration_ms"`
}

// Totals count results by status and source.
type Totals struct {
	Cases    int                       `json:"cases"`
	ByStatus map[Status]int            `json:"by_status"`
	BySource map[Source]map[Status]int `json:"by_source"`
}

func totalsOf(rs []Result) Totals {
	t := Totals{ByStatus: map[Status]int{}, BySource: map[Source]map[Status]int{}}
	for _, r := range rs {
		t.Cases++
		t.ByStatus[r.Status]++
		if t.BySource[r.Source] == nil {
			t.BySource[r.Source] = map[Status]int{}
		}
		t.BySource[r.Source][r.Status]++
	}
	return t
}

// OK reports whether no case failed and no gap entry is stale.
func (t Totals) OK() bool { return t.ByStatus[Fail] == 0 && t.ByStatus[UnexpectedPass] == 0 }

func sourceRank(s Source) int {
	for i, x := range Sources {
		if x == s {
			return i
		}
	}
	return len(Sources)
}

func sortResults(rs []Result) {
	sort.SliceStable(rs, func(i, j int) bool {
		if a, b := sourceRank(rs[i].Source), sourceRank(rs[j].Source); a != b {
			return a < b
		}
		return rs[i].ID < rs[j].ID
	})
}
