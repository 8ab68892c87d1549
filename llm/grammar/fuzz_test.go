package grammar

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzCompileSchema: the compiler never panics on any bytes; a schema it
// accepts yields texts (random tokens under the mask, within a budget
// just above the shortest completion) that end complete and, when the
// independent library compiles the schema too, validate against it.
func FuzzCompileSchema(f *testing.F) {
	for i, s := range schemas {
		f.Add([]byte(s), uint64(i))
	}
	texts, end := testVocab()
	ix := NewIndex(texts, []int{end})
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		g, err := CompileSchema(schema, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		rest := g.NewMatcher().Rest()
		if rest < 0 || rest > 4000 {
			return // valid, but too long to walk here
		}
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		out := walk(t, g, ix, texts, end, rest+1+rng.IntN(64), rng)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
		if err != nil {
			t.Fatalf("accepted a schema that is not JSON: %v", err)
		}
		c := jsonschema.NewCompiler()
		if c.AddResource("s.json", doc) != nil {
			return
		}
		v, err := c.Compile("s.json")
		if err != nil {
			return // the library refuses it (for example an unknown format)
		}
		if err := checkJSON(v, out); err != nil {
			t.Fatalf("%s: %q: %v", schema, out, err)
		}
	})
}

// FuzzCompilePattern: the pattern compiler never panics on any text, and a
// pattern it accepts that Go's regexp compiles too accepts exactly the
// strings regexp finds a match in, over the characters the grammar
// writes (random strings, and the strings sampled from the DFA).
func FuzzCompilePattern(f *testing.F) {
	for _, s := range []string{`^[a-z]{2,4}-\d{3}$`, `x(ab|cd)*y`, `^\w+\.(json|txt)$`, `[^aeiou ]*$|^a.c$`, `a+?b{2}`,
		`^(?:[0-9a-f]{8}-[0-9a-f]{4})$`, `(a|b)*a[ab]{3}`, `[\-.]\S\s`, `^$`, `(?=x)`, `a{2,1}`, `[z-a]`, `\1`, `((a)`} {
		f.Add(s, uint64(len(s)))
	}
	f.Fuzz(func(t *testing.T, src string, seed uint64) {
		d, err := compilePattern(src, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		re, err := regexp.Compile(src)
		if err != nil {
			return // a dialect difference: regexp refuses it
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		var alphabet []byte
		for c := range 256 {
			if writable(c) && (strings.IndexByte(src, byte(c)) >= 0 || rng.IntN(8) == 0) {
				alphabet = append(alphabet, byte(c))
			}
		}
		if len(alphabet) == 0 {
			alphabet = []byte("a")
		}
		for range 200 {
			b := make([]byte, rng.IntN(12))
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			st := d.start
			for _, c := range b {
				if st = d.next[int(st)*256+int(c)]; st < 0 {
					break
				}
			}
			if got, want := st >= 0 && d.dist[st] == 0, re.Match(b); got != want {
				t.Fatalf("%q on %q: DFA %v, regexp %v", src, b, got, want)
			}
		}
	})
}
