package conformance

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

//go:embed gaps/*.json
var gapFiles embed.FS

// Gap is one declared gap: case IDs matching Pattern (a Go regexp,
// anchored by the author as needed) and why.
type Gap struct {
	Pattern string `json:"pattern"`
	Reason  string `json:"reason"`
	re      *regexp.Regexp
}

// Gaps is a backend's declaration, as data: cases it permanently does not
// support (not run; reported as "unsupported") and temporary expected
// failures (run; a failure is "expected-failure", a pass is reported as
// "unexpected-pass" so stale entries go away).
type Gaps struct {
	Backend          string `json:"backend"`
	Unsupported      []Gap  `json:"unsupported,omitempty"`
	ExpectedFailures []Gap  `json:"expected_failures,omitempty"`
}

// ParseGaps decodes and compiles a gap declaration.
func ParseGaps(b []byte) (*Gaps, error) {
	var g Gaps
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("conformance: gaps: %w", err)
	}
	for _, list := range [][]Gap{g.Unsupported, g.ExpectedFailures} {
		for i := range list {
			if strings.TrimSpace(list[i].Reason) == "" {
				return nil, fmt.Errorf("conformance: gaps for %q: pattern %q has no reason", g.Backend, list[i].Pattern)
			}
			re, err := regexp.Compile(list[i].Pattern)
			if err != nil {
				return nil, fmt.Errorf("conformance: gaps for %q: %w", g.Backend, err)
			}
			list[i].re = re
		}
	}
	return &g, nil
}

// BuiltinGaps returns the gap file shipped in conformance/gaps/NAME.json,
// or an empty declaration when there is none.
func BuiltinGaps(name string) (*Gaps, error) {
	b, err := gapFiles.ReadFile("gaps/" + name + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return &Gaps{Backend: name}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseGaps(b)
}

// match returns the first unsupported or expected-failure entry for id.
func (g *Gaps) match(id string) (kind string, gap *Gap) {
	if g == nil {
		return "", nil
	}
	for i := range g.Unsupported {
		if g.Unsupported[i].re.MatchString(id) {
			return "unsupported", &g.Unsupported[i]
		}
	}
	for i := range g.ExpectedFailures {
		if g.ExpectedFailures[i].re.MatchString(id) {
			return "expected-failure", &g.ExpectedFailures[i]
		}
	}
	return "", nil
}
