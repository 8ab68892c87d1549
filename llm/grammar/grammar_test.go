package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// validator compiles schema with an independent JSON schema library.
func validator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkJSON decodes text (one JSON value, nothing after it) and
// validates it.
func checkJSON(s *jsonschema.Schema, text string) error {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the value")
	}
	// the library wants its own number type
	v2, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(v2)
}

// testVocab is every single byte, some longer tokens a JSON-writing
// model would have, and an end token (the last id).
func testVocab() ([]string, int) {
	var texts []string
	for b := range 256 {
		texts = append(texts, string([]byte{byte(b)}))
	}
	texts = append(texts, `{"`, `":`, `", "`, `"}`, `true`, `false`, `null`, `name`, `"name"`, `: "`, `, `, `},{`, `[{"`, `"]`,
		`12`, `3.14`, `e+`, `\n`, `\u00e9`, "é", "日本", "\xe6\x97", `  `, "\n  ", `"a"`, `"b":`, `red`, `"red"`, `0.`, `-1`, `""`, `[]`, `{}`, "")
	texts = append(texts, "<end>")
	return texts, len(texts) - 1
}

// walk samples a text from g with random allowed tokens within maxNew
// tokens; it fails the test if no token is allowed or the budget is
// overrun.
func walk(t testing.TB, g *Grammar, ix *Index, texts []string, end int, maxNew int, rng *rand.Rand) string {
	t.Helper()
	m := g.NewMatcher()
	allow := make([]uint64, (ix.Size()+63)/64)
	var out bytes.Buffer
	var ids []int
	for left := maxNew; ; left-- {
		if left <= 0 {
			t.Fatalf("no end within %d tokens: %q", maxNew, out.String())
		}
		if n := m.Mask(ix, left, allow); n == 0 {
			t.Fatalf("nothing allowed after %q (left %d, rest %d)\n%s", out.String(), left, m.Rest(), m)
		}
		for ids = ids[:0]; len(ids) == 0; {
			// mostly single bytes, sometimes the longer tokens
			id := rng.IntN(len(texts))
			if rng.IntN(4) == 0 {
				id = 256 + rng.IntN(len(texts)-256)
			}
			if allow[id>>6]&(1<<(id&63)) != 0 {
				ids = append(ids, id)
			}
		}
		id := ids[0]
		if id == end {
			if !m.CanEnd() {
				t.Fatalf("end allowed before the text is complete: %q", out.String())
			}
			return out.String()
		}
		out.WriteString(texts[id])
		if !m.Advance([]byte(texts[id])) {
			t.Fatalf("masked-in token %q left the grammar after %q", texts[id], out.String())
		}
	}
}

var schemas = []string{
	`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"ok":{"type":"boolean"}},"required":["name","age"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":4}`,
	`{"enum":["red","green","blue",1,null,{"a":[1,2]}]}`,
	`{"type":["string","null"],"maxLength":3,"minLength":1}`,
	`{"anyOf":[{"type":"object","properties":{"a":{"const":1}},"required":["a"]},{"type":"object","properties":{"a":{"const":"x"},"b":{"type":"null"}},"required":["a","b"]}]}`,
	`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"]}},"$ref":"#/$defs/node"}`,
	`{"type":"object","properties":{"ab":{"type":"string"},"a":{"type":"string"},"abc":{"type":"number"}},"required":["abc"]}`,
	`{"type":"object","additionalProperties":{"type":"integer"}}`,
	`{"type":"object"}`,
	`{}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string","enum":["x","y"]},"minItems":1}},"required":["tags"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"allOf":[{"type":"boolean"}]},"b":{"type":"array","items":{"type":"integer"},"minItems":3}},"required":["a","b"],"additionalProperties":false,"title":"t","description":"d"}`,
	`true`,
	`{"type":"object","properties":{"a":{"type":"integer","minimum":10,"maximum":12},"b":{"type":"integer","exclusiveMinimum":-5,"exclusiveMaximum":3},"c":{"type":"number","minimum":1.5},"d":{"type":"integer","maximum":-100},"e":{"type":"integer","minimum":0,"maximum":0}},"required":["a","b","c","d","e"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"integer","minimum":-20,"maximum":-3},"minItems":3}`,
	`{"type":"object","properties":{"id":{"type":"string","pattern":"^[a-z]{2,4}-\\d{3}$"},"code":{"type":"string","pattern":"x(ab|cd)*y"},"file":{"pattern":"^\\w+\\.(json|txt)$"},"v":{"type":"string","pattern":"^[^aeiou ]*$|^a.c$"}},"required":["id","code","file","v"],"additionalProperties":false}`,
	`{"type":"object","properties":{"v":{"oneOf":[{"type":"string","maxLength":3},{"type":["integer","null"],"minimum":2},{"type":"array","items":{"type":"boolean"},"maxItems":2}]}},"required":["v"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"type":"integer","multipleOf":7},"b":{"type":"number","multipleOf":5,"minimum":-23,"maximum":-1},"c":{"type":"integer","multipleOf":1000,"exclusiveMinimum":0},"d":{"type":"array","items":{"multipleOf":3,"maximum":4},"minItems":2}},"required":["a","b","c","d"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"string","pattern":"^(?:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})$"},"minItems":1}`,
}

func TestSchemasRandomWalk(t *testing.T) {
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	rng := rand.New(rand.NewPCG(1, 2))
	for _, src := range schemas {
		g, err := CompileSchema([]byte(src), nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		v := validator(t, src)
		rest := g.NewMatcher().Rest()
		for i := range 200 {
			// tight budgets too: the shortest completion must always fit
			maxNew := rest + 1 + rng.IntN(3)
			if i%2 == 0 {
				maxNew += rng.IntN(200)
			}
			out := walk(t, g, ix, texts, end, maxNew, rng)
			if err := checkJSON(v, out); err != nil {
				t.Fatalf("%s: %q does not validate: %v", src, out, err)
			}
		}
	}
}

func TestJSONObjectAndAffixes(t *testing.T) {
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	rng := rand.New(rand.NewPCG(3, 4))
	g, err := JSONObject(&Options{Prefix: "<tool_call>\n", Suffix: "\n</tool_call>"})
	if err != nil {
		t.Fatal(err)
	}
	for range 200 {
		out := walk(t, g, ix, texts, end, 27+rng.IntN(200), rng)
		out = strings.TrimSpace(out)
		body, ok := strings.CutPrefix(out, "<tool_call>")
		body, ok2 := strings.CutSuffix(body, "</tool_call>")
		var v map[string]any
		if !ok || !ok2 || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("%q", out)
		}
	}
}

func TestAcceptsAndRejects(t *testing.T) {
	src := `{"type":"object","properties":{"s":{"type":"string"},"n":{"type":"number"},"i":{"type":"integer"},"e":{"enum":[1,10]}},"additionalProperties":false}`
	g, err := CompileSchema([]byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		ok   bool
	}{
		{`{}`, true},
		{` { "s" : "a\"\\\u00e9日" , "n":-0.5e+10,"i":-12,"e":10}`, true},
		{"{\n  \"s\": \"\",\n\t\"n\": 1\n}", true},
		{"{\n\n}", false},
		{"{\r\n}", false},
		{`{"n":1E5}`, true},
		{`{"e":1}`, true},
		{`{"i":1.5}`, false},
		{`{"n":01}`, false},
		{`{"n":1.}`, false},
		{`{"s":"a` + "\x01" + `"}`, false},
		{`{"s":"\x"}`, false},
		{"{\"s\":\"\xc0\x80\"}", false},
		{"{\"s\":\"\xed\xa0\x80\"}", false},
		{`{"e":100}`, false},
		{`{"x":1}`, false},
		{`{"n":1,"s":"a"}`, false}, // properties in schema order
		{`{"s":"a",}`, false},
		{`{"s":"a"} `, false},
		{`{"n":1e123}`, false},
	} {
		m := g.NewMatcher()
		ok := m.Advance([]byte(c.text)) && m.CanEnd()
		if ok != c.ok {
			t.Errorf("%q: accepted %v, want %v", c.text, ok, c.ok)
		}
	}
	g, err = CompileSchema([]byte(`{"type":"integer","minimum":-7,"maximum":15}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		text string
		ok   bool
	}{{"-7", true}, {"15", true}, {"0", true}, {"-0", true}, {"9", true}, {"-8", false}, {"16", false}, {"150", false}, {"01", false}, {"1.0", false}, {"-", false}} {
		m := g.NewMatcher()
		ok := m.Advance([]byte(c.text)) && m.CanEnd()
		if ok != c.ok {
			t.Errorf("%q: accepted %v, want %v", c.text, ok, c.ok)
		}
	}
}

func TestUnsupportedKeywords(t *testing.T) {
	for _, c := range []struct{ schema, keyword, path string }{
		{`{"type":"string","pattern":"(?=a)"}`, "pattern", ""},
		{`{"type":"string","pattern":"a\\1"}`, "pattern", ""},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"a^b"}}}`, "pattern", "/properties/a"},
		{`{"type":"string","pattern":"a","maxLength":3}`, "pattern", ""},
		{`{"type":"string","pattern":"(a{1000}){1000}"}`, "pattern", ""},
		{`{"type":"string","pattern":"é"}`, "pattern", ""},
		{`{"type":"object","properties":{"a":{"type":"string","format":"date-time"}}}`, "format", "/properties/a"},
		{`{"type":"object","properties":{"a/b":{"type":"integer","multipleOf":2.5}}}`, "multipleOf", "/properties/a~1b"},
		{`{"type":"number","multipleOf":1e10}`, "multipleOf", ""},
		{`{"type":"integer","minimum":0,"exclusiveMinimum":true}`, "exclusiveMinimum", ""},
		{`{"oneOf":[{"type":"integer"},{"type":"number"}]}`, "oneOf", ""},
		{`{"type":"object","properties":{"a":{"oneOf":[{"type":"string"},{"minLength":1}]}}}`, "oneOf", "/properties/a"},
		{`{"oneOf":[{"type":["string","null"]},{"type":"null"}]}`, "oneOf", ""},
		{`{"oneOf":[{"type":"string"}],"type":"string"}`, "type", ""},
		{`{"oneOf":[{"type":"string","pattern":"(?!x)"}]}`, "pattern", "/oneOf/0"},
		{`{"type":"array","items":[{"type":"string"}]}`, "items", ""},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems", ""},
		{`{"$ref":"https://example.com/s.json"}`, "$ref", ""},
		{`{"allOf":[{"type":"string"},{"maxLength":2}]}`, "allOf", ""},
		{`{"type":"object","required":["x"]}`, "required", ""},
		{`{"foo":1}`, "foo", ""},
	} {
		_, err := CompileSchema([]byte(c.schema), nil)
		var u *UnsupportedError
		if !errors.As(err, &u) || u.Keyword != c.keyword || u.Path != c.path {
			t.Errorf("%s: %v, want keyword %q at %q", c.schema, err, c.keyword, c.path)
		}
	}
	for _, s := range []string{`false`, `{"type":"array","minItems":3,"maxItems":2}`, `{"enum":[]}`, `{"type":"string","enum":[1]}`,
		`{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`,
		`{"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]}`, `[`, `{"type":"nothing"}`, `{"a":1,"a":2}`, `{"type":"integer","minimum":5,"maximum":4}`, `{"type":"integer","minimum":1e12}`,
		`{"type":"string","pattern":"^\\n$"}`, `{"type":"integer","multipleOf":10,"minimum":1,"maximum":9}`, `{"type":"integer","multipleOf":0}`, `{"type":"string","pattern":"^[\"\\\\]+$"}`, `{"type":"string","pattern":1}`} {
		if _, err := CompileSchema([]byte(s), nil); err == nil {
			t.Errorf("%s compiled", s)
		}
	}
	// uniqueItems false asks for nothing
	if _, err := CompileSchema([]byte(`{"type":"array","uniqueItems":false}`), nil); err != nil {
		t.Error(err)
	}
}

// TestEndForced: once the value is complete and nothing may follow, the
// end token is the only one allowed.
func TestEndForced(t *testing.T) {
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	g, err := CompileSchema([]byte(`{"type":"object"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := g.NewMatcher()
	m.Advance([]byte(`{"a":1}`))
	allow := make([]uint64, (ix.Size()+63)/64)
	if n := m.Mask(ix, 100, allow); n != 1 || allow[end>>6]&(1<<(end&63)) == 0 {
		t.Fatalf("%d allowed", n)
	}
	// a number at the root may go on or end
	g, _ = CompileSchema([]byte(`{"type":"integer"}`), nil)
	m = g.NewMatcher()
	m.Advance([]byte(`12`))
	if n := m.Mask(ix, 100, allow); n < 2 || allow[end>>6]&(1<<(end&63)) == 0 || allow['3'>>6]&(1<<('3'&63)) == 0 {
		t.Fatalf("%d allowed", n)
	}
	// ... but not when the budget is spent
	if n := m.Mask(ix, 1, allow); n != 1 {
		t.Fatalf("%d allowed with one token left", n)
	}
}

// TestPlainShortcut: inside a string, the mask with plain tokens set at
// once equals the mask from walking every token.
func TestPlainShortcut(t *testing.T) {
	texts, end := testVocab()
	fast := NewIndex(texts, []int{end})
	slow := NewIndex(texts, []int{end})
	slow.slow = true
	g, err := CompileSchema([]byte(`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":40}},"required":["s"]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]uint64, (len(texts)+63)/64), make([]uint64, (len(texts)+63)/64)
	for _, prefix := range []string{`{"s":"`, `{"s":"ab`, `{"s":"ab日本`, `{"s":"` + strings.Repeat("x", 37), `{"s":"` + strings.Repeat("x", 39), `{"s":"` + strings.Repeat("x", 40)} {
		m := g.NewMatcher()
		if !m.Advance([]byte(prefix)) {
			t.Fatal(prefix)
		}
		for _, left := range []int{3, 6, 100} {
			na, nb := m.Mask(fast, left, a), m.Mask(slow, left, b)
			if na != nb || !slices.Equal(a, b) {
				t.Fatalf("%q left %d: %d tokens with the shortcut, %d without", prefix, left, na, nb)
			}
		}
	}
}

func TestCompileCalls(t *testing.T) {
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	rng := rand.New(rand.NewPCG(7, 8))
	calls := []Call{
		{Name: "get_weather", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"],"$defs":{"x":{"type":"null"}}}`)},
		{Name: "now"},
		{Name: "tree", Parameters: []byte(`{"$defs":{"n":{"type":"object","properties":{"k":{"type":"array","items":{"$ref":"#/$defs/n"},"maxItems":1}}}},"$ref":"#/$defs/n"}`)},
	}
	g, err := CompileCalls(calls, "name", "arguments", &Options{Prefix: "<tool_call>\n", Suffix: "\n</tool_call>"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 300 {
		out := strings.TrimSpace(walk(t, g, ix, texts, end, 60+rng.IntN(100), rng))
		body, ok := strings.CutPrefix(out, "<tool_call>")
		body, ok2 := strings.CutSuffix(body, "</tool_call>")
		var call struct {
			Name      string
			Arguments map[string]any
		}
		if !ok || !ok2 || json.Unmarshal([]byte(body), &call) != nil || call.Arguments == nil {
			t.Fatalf("%q", out)
		}
		if call.Name == "get_weather" {
			if _, ok := call.Arguments["city"].(string); !ok {
				t.Fatalf("%q", out)
			}
		}
		seen[call.Name] = true
	}
	if len(seen) != 3 {
		t.Fatalf("calls seen: %v", seen)
	}
	if _, err := CompileCalls([]Call{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"a":{"format":"date"}}}`)}}, "name", "arguments", nil); err == nil {
		t.Fatal("format compiled")
	}
}

// TestPatternExact: over the characters the grammar writes in a pattern
// string, a pattern's DFA accepts exactly the strings Go's regexp (RE2,
// which agrees with ECMA-262 on these patterns) finds a match in: random
// strings, and strings sampled from the DFA itself.
func TestPatternExact(t *testing.T) {
	alphabet := []byte("ab-_.xyz019 AZ/]}|(*")
	for _, pat := range []string{`^[a-z]{2,4}-\d{3}$`, `x(ab|cd)*y`, `^\w+\.(json|txt)$`, `^[^aeiou ]*$|^a.c$`, `a+?b{2}`, `^$`, `b$`, `^(a|)z?$`,
		`[\-.]\S\s`, `\W\D`, `^(?:a|b)+[^\]]$`, `^.{3}$`, `0|1{2,}`, `^a{0}b$`, `[A-Z0-9_]{2}`, `^\/\}\|\(\*$`} {
		d, err := compilePattern(pat, nil)
		if err != nil {
			t.Fatalf("%s: %v", pat, err)
		}
		re := regexp.MustCompile(pat)
		accepts := func(s string) bool {
			st := d.start
			for i := range len(s) {
				if st = d.next[int(st)*256+int(s[i])]; st < 0 {
					return false
				}
			}
			return d.dist[st] == 0
		}
		rng := rand.New(rand.NewPCG(3, uint64(len(pat))))
		for range 3000 {
			b := make([]byte, rng.IntN(9))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			if got, want := accepts(string(b)), re.Match(b); got != want {
				t.Fatalf("%s on %q: DFA %v, regexp %v", pat, b, got, want)
			}
		}
		// walks through the DFA end where regexp matches
		for range 300 {
			st, var_ := d.start, []byte{}
			for d.dist[st] > 0 || rng.IntN(3) > 0 && len(var_) < 30 {
				var next []int
				for c := range 256 {
					// past 30 bytes, only towards the end
					if t := d.next[int(st)*256+c]; t >= 0 && (len(var_) < 30 || d.dist[t] < d.dist[st]) {
						next = append(next, c)
					}
				}
				if len(next) == 0 {
					break
				}
				c := next[rng.IntN(len(next))]
				var_ = append(var_, byte(c))
				st = d.next[int(st)*256+c]
			}
			if d.dist[st] == 0 && !re.Match(var_) {
				t.Fatalf("%s: the DFA accepts %q, regexp does not match it", pat, var_)
			}
		}
	}
}

// TestMultipleOf: every integer written under multipleOf (with and
// without a range) is a multiple in range, and the walks reach negative,
// zero and positive ones.
func TestMultipleOf(t *testing.T) {
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		schema string
		k      int64
		lo, hi int64
	}{
		{`{"type":"integer","multipleOf":7}`, 7, -maxBounded, maxBounded},
		{`{"type":"number","multipleOf":12,"minimum":-100,"exclusiveMaximum":50}`, 12, -100, 49},
		{`{"multipleOf":1000,"minimum":999}`, 1000, 999, maxBounded},
	} {
		g, err := CompileSchema([]byte(c.schema), nil)
		if err != nil {
			t.Fatal(err)
		}
		signs := map[int]bool{}
		for range 300 {
			out := strings.TrimSpace(walk(t, g, ix, texts, end, int(g.NewMatcher().Rest())+1+rng.IntN(12), rng))
			v, err := strconv.ParseInt(out, 10, 64)
			if err != nil || v%c.k != 0 || v < c.lo || v > c.hi {
				t.Fatalf("%s: %q", c.schema, out)
			}
			switch {
			case v < 0:
				signs[-1] = true
			case v > 0:
				signs[1] = true
			default:
				signs[0] = true
			}
		}
		t.Logf("%s: signs seen %v", c.schema, signs)
		if len(signs) < 2 && c.lo < 0 {
			t.Fatalf("%s: only %v", c.schema, signs)
		}
	}
}
