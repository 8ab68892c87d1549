package conformance

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
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
	// Source says where the declaration came from (set by the suite, not
	// read from a gap file): GapsBuiltin, GapsVendorManifest,
	// GapsVendorPackage or GapsHarness, with the file where there is one.
	// Reports record it, so a certificate says whose gaps it was granted
	// under.
	Source string `json:"source,omitempty"`
}

// Where a gap declaration came from (Gaps.Source).
const (
	// GapsBuiltin: conformance/gaps/<name>.json, kept for in-tree backends.
	GapsBuiltin = "builtin"
	// GapsVendorManifest: the "gaps" of the plugin's manifest, shipped by
	// its vendor.
	GapsVendorManifest = "vendor-manifest"
	// GapsVendorPackage: the backend's own declaration (GapDeclarer), from
	// the vendor's Go package.
	GapsVendorPackage = "vendor-package"
	// GapsHarness: given to the run (Harness.Gaps, the CLI's --gaps).
	GapsHarness = "harness"
)

// GapDeclarer is implemented by backends that ship their own gap
// declaration (a vendor's Go package): ConformanceGaps returns Gaps JSON.
// The suite uses it when the harness gives none; a backend that also has
// a file in conformance/gaps is refused, so no declaration silently wins.
type GapDeclarer interface {
	ConformanceGaps() []byte
}

// ParseGaps decodes and compiles a gap declaration.
func ParseGaps(b []byte) (*Gaps, error) {
	var g Gaps
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("conformance: gaps: %w", err)
	}
	if g.Source != "" {
		return nil, fmt.Errorf("conformance: gaps for %q: \"source\" is set by the suite, not by a gap file", g.Backend)
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
	g, _, err := builtinGaps(name)
	return g, err
}

func builtinGaps(name string) (g *Gaps, found bool, err error) {
	file := "gaps/" + name + ".json"
	b, err := gapFiles.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return &Gaps{Backend: name, Source: GapsBuiltin}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	g, err = ParseGaps(b)
	if err != nil {
		return nil, false, err
	}
	g.Source = GapsBuiltin + " conformance/" + file
	return g, true, nil
}

// VendorGaps parses a gap declaration a vendor ships with its backend (a
// manifest's "gaps", a GapDeclarer's bytes) for the backend named name:
// the declaration must name that backend. source says where it was read
// (GapsVendorManifest or GapsVendorPackage, and the file).
func VendorGaps(b []byte, name, source string) (*Gaps, error) {
	g, err := ParseGaps(b)
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", source, err)
	}
	if g.Backend != name {
		return nil, fmt.Errorf("conformance: %s: the gap declaration is for backend %q, not %q", source, g.Backend, name)
	}
	if g.Source != "" {
		return nil, fmt.Errorf("conformance: %s: a gap declaration may not set its own source", source)
	}
	g.Source = source
	return g, nil
}

// ManifestGaps reads the vendor's gaps from a plugin manifest file (its
// "gaps" object); nil when the manifest declares none.
func ManifestGaps(file string) (*Gaps, error) {
	m, err := manifest.LoadManifest(file)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if len(m.Gaps) == 0 {
		return nil, nil
	}
	return VendorGaps(m.Gaps, m.Name, GapsVendorManifest+" "+file)
}

// gapsFor decides the declaration a run uses: the harness's; else the
// vendor's (the manifest the harness names, or the backend's own
// GapDeclarer); else conformance/gaps/<name>.json. Vendor gaps for a
// backend that also has a builtin file are refused.
func gapsFor(h *Harness, d *hal.Device) (*Gaps, error) {
	name := d.Name()
	if h.Gaps != nil {
		g := *h.Gaps
		if g.Source == "" {
			g.Source = GapsHarness
		}
		return &g, nil
	}
	var vendor *Gaps
	if h.Manifest != "" {
		g, err := ManifestGaps(h.Manifest)
		if err != nil {
			return nil, err
		}
		if g != nil && g.Backend != name {
			return nil, fmt.Errorf("conformance: %s declares gaps for %q, the backend under test is %q", h.Manifest, g.Backend, name)
		}
		vendor = g
	}
	if gd, ok := d.Backend().(GapDeclarer); ok && vendor == nil {
		var b []byte
		if err := safely(func() error { b = gd.ConformanceGaps(); return nil }); err != nil {
			return nil, fmt.Errorf("conformance: the backend's ConformanceGaps: %v", err)
		}
		if len(b) > 0 {
			g, err := VendorGaps(b, name, GapsVendorPackage)
			if err != nil {
				return nil, err
			}
			vendor = g
		}
	}
	builtin, found, err := builtinGaps(name)
	if err != nil {
		return nil, err
	}
	if vendor != nil && found {
		return nil, fmt.Errorf("conformance: backend %q has gaps both in conformance/gaps (in-tree) and from its vendor (%s): an in-tree backend keeps its gaps in the tree", name, vendor.Source)
	}
	if vendor != nil {
		return vendor, nil
	}
	return builtin, nil
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
