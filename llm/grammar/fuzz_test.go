package grammar

import (
	"math/rand/v2"
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
