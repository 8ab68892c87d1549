package grammar

import (
	"strings"
	"testing"
	"time"
)

// TestPatternCostBounded: hostile patterns are refused or compiled
// within the construction's work bound, never a blow-up.
func TestPatternCostBounded(t *testing.T) {
	for _, src := range []string{
		strings.Repeat("(a|b)*", 200),
		"(a|b)*a" + strings.Repeat("[ab]", 30), // 2^30 DFA states: refused
		".{0,1000}x.{0,1000}",
		"((((a{1,1000}){1,1000}){1,1000}){1,1000})",
		strings.Repeat("(", 60) + "a" + strings.Repeat(")", 60),
		`{"type":"array","items":` + strings.Repeat(`{"type":"string","pattern":"x.{0,500}y"}`, 1) + `}`,
	} {
		t0 := time.Now()
		_, err := compilePattern(src, nil)
		t.Logf("%.40q: %v in %v", src, err, time.Since(t0))
	}
	// many patterns in one schema share one bound
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"p` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":{"type":"string","pattern":"^(x.{0,60}y|z){2}$"}`)
	}
	b.WriteString(`}}`)
	t0 := time.Now()
	_, err := CompileSchema([]byte(b.String()), nil)
	t.Logf("200 patterns: %v in %v", err, time.Since(t0))
	if err == nil {
		t.Fatal("200 patterns of ~250 states each compiled: over the schema's bound")
	}
}
