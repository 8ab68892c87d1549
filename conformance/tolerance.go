package conformance

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
)

//go:embed tolerances.json
var tolerancesJSON []byte

// Bound is one tolerance: an element matches when |got-want| <= Abs, or
// |got-want| <= Rel*|want|, or the two are at most ULP units in the last
// place of the dtype apart. NaN matches NaN and an infinity matches the
// same infinity. With SignedZero, -0 and +0 differ. The zero Bound is exact.
type Bound struct {
	Abs        float64 `json:"abs,omitempty"`
	Rel        float64 `json:"rel,omitempty"`
	ULP        int64   `json:"ulp,omitempty"`
	SignedZero bool    `json:"signed_zero,omitempty"`
}

func (b Bound) String() string {
	var parts []string
	if b.Abs == 0 && b.Rel == 0 && b.ULP == 0 {
		parts = append(parts, "exact")
	}
	if b.Abs != 0 {
		parts = append(parts, "abs "+strconv.FormatFloat(b.Abs, 'g', -1, 64))
	}
	if b.Rel != 0 {
		parts = append(parts, "rel "+strconv.FormatFloat(b.Rel, 'g', -1, 64))
	}
	if b.ULP != 0 {
		parts = append(parts, fmt.Sprintf("ulp %d", b.ULP))
	}
	if b.SignedZero {
		parts = append(parts, "signed zero")
	}
	return strings.Join(parts, ", ")
}

// widen returns the looser of two bounds in every field.
func (b Bound) widen(o Bound) Bound {
	return Bound{Abs: math.Max(b.Abs, o.Abs), Rel: math.Max(b.Rel, o.Rel), ULP: max(b.ULP, o.ULP), SignedZero: b.SignedZero && o.SignedZero}
}

// BoundsByDType maps a dtype name ("float32", or "*" for any) to a bound.
type BoundsByDType map[string]Bound

// Profile is a named relaxation a backend may opt into; it is disclosed
// in every report that uses it. Its bounds only ever widen the policy's.
type Profile struct {
	Description string                   `json:"description"`
	Default     BoundsByDType            `json:"default,omitempty"`
	Ops         map[string]BoundsByDType `json:"ops,omitempty"`
}

// Policy is the tolerance policy: data, versioned, loaded from
// tolerances.json (embedded) or a file given to the CLI.
type Policy struct {
	Version  string                   `json:"version"`
	Doc      string                   `json:"doc,omitempty"`
	Default  BoundsByDType            `json:"default"`
	Ops      map[string]BoundsByDType `json:"ops,omitempty"`
	External BoundsByDType            `json:"external,omitempty"`
	Models   BoundsByDType            `json:"models,omitempty"`
	Profiles map[string]Profile       `json:"profiles,omitempty"`
}

// DefaultPolicy returns the suite's tolerance policy (tolerances.json).
func DefaultPolicy() *Policy {
	p, err := ParsePolicy(tolerancesJSON)
	if err != nil {
		panic("conformance: embedded tolerances.json: " + err.Error()) // caught by any test
	}
	return p
}

// ParsePolicy decodes and checks a policy file.
func ParsePolicy(b []byte) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("conformance: tolerance policy: %w", err)
	}
	if p.Version == "" {
		return nil, fmt.Errorf("conformance: tolerance policy has no version")
	}
	check := func(where string, m BoundsByDType) error {
		for dt, b := range m {
			if dt != "*" {
				if _, ok := graph.ParseDType(dt); !ok {
					return fmt.Errorf("conformance: tolerance policy: %s: unknown dtype %q", where, dt)
				}
			}
			if b.Abs < 0 || b.Rel < 0 || b.ULP < 0 || math.IsNaN(b.Abs) || math.IsNaN(b.Rel) {
				return fmt.Errorf("conformance: tolerance policy: %s[%s]: negative or NaN bound", where, dt)
			}
		}
		return nil
	}
	if err := check("default", p.Default); err != nil {
		return nil, err
	}
	for op, m := range p.Ops {
		if err := check("ops."+op, m); err != nil {
			return nil, err
		}
	}
	for name, pr := range p.Profiles {
		if pr.Description == "" {
			return nil, fmt.Errorf("conformance: tolerance profile %q has no description", name)
		}
		if err := check("profiles."+name+".default", pr.Default); err != nil {
			return nil, err
		}
		for op, m := range pr.Ops {
			if err := check("profiles."+name+".ops."+op, m); err != nil {
				return nil, err
			}
		}
	}
	return &p, nil
}

// ProfileNames lists the named relaxed profiles.
func (p *Policy) ProfileNames() []string {
	var out []string
	for n := range p.Profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lookup(m BoundsByDType, dt string) (Bound, bool) {
	if b, ok := m[dt]; ok {
		return b, true
	}
	b, ok := m["*"]
	return b, ok
}

// For returns the bound for an op's output of dtype dt under profile
// ("" = none). Unknown profiles are refused earlier (CheckProfile).
func (p *Policy) For(op string, dt graph.DType, profile string) Bound {
	name := dt.String()
	b, ok := lookup(p.Ops[op], name)
	if !ok {
		b, _ = lookup(p.Default, name)
	}
	if pr, ok := p.Profiles[profile]; ok {
		rb, ok := lookup(pr.Ops[op], name)
		if !ok {
			rb, ok = lookup(pr.Default, name)
		}
		if ok {
			b = b.widen(rb)
		}
	}
	return b
}

// forSection returns a bound from the external or models section.
func (p *Policy) forSection(m BoundsByDType, op string, dt graph.DType, profile string) Bound {
	if b, ok := lookup(m, dt.String()); ok {
		return b.widen(p.For(op, dt, profile))
	}
	return p.For(op, dt, profile)
}

// CheckProfile reports an unknown profile name.
func (p *Policy) CheckProfile(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := p.Profiles[name]; !ok {
		return fmt.Errorf("conformance: unknown tolerance profile %q (known: %s)", name, strings.Join(p.ProfileNames(), ", "))
	}
	return nil
}

// ulpDistance counts representable values of dt between a and b (both
// finite). It is exact for float16/bfloat16/float32/float64.
func ulpDistance(dt graph.DType, a, b float64) int64 {
	switch dt {
	case graph.Float64:
		return ordered64(math.Float64bits(a)) - ordered64(math.Float64bits(b))
	case graph.Float16:
		return int64(ordered16(uint16(graph.F16FromFloat64(a)))) - int64(ordered16(uint16(graph.F16FromFloat64(b))))
	case graph.BFloat16:
		return int64(ordered16(uint16(graph.BF16FromFloat32(float32(a))))) - int64(ordered16(uint16(graph.BF16FromFloat32(float32(b)))))
	default:
		return int64(ordered32(math.Float32bits(float32(a)))) - int64(ordered32(math.Float32bits(float32(b))))
	}
}

// ordered maps float bits onto a line where adjacent floats are adjacent
// integers (and -0 == +0).
func ordered64(u uint64) int64 {
	if u>>63 != 0 {
		return -int64(u &^ (1 << 63))
	}
	return int64(u)
}

func ordered32(u uint32) int64 {
	if u>>31 != 0 {
		return -int64(u &^ (1 << 31))
	}
	return int64(u)
}

func ordered16(u uint16) int64 {
	if u>>15 != 0 {
		return -int64(u &^ (1 << 15))
	}
	return int64(u)
}

// floatMatch applies b to one element pair of dtype dt.
func floatMatch(dt graph.DType, got, want float64, b Bound) bool {
	gn, wn := math.IsNaN(got), math.IsNaN(want)
	if gn || wn {
		return gn && wn
	}
	if math.IsInf(got, 0) || math.IsInf(want, 0) {
		return got == want
	}
	if got == 0 && want == 0 {
		return !b.SignedZero || math.Signbit(got) == math.Signbit(want)
	}
	if got == want {
		return true
	}
	d := math.Abs(got - want)
	if d <= b.Abs || d <= b.Rel*math.Abs(want) {
		return true
	}
	if b.ULP > 0 {
		u := ulpDistance(dt, got, want)
		if u < 0 {
			u = -u
		}
		return u <= b.ULP
	}
	return false
}
