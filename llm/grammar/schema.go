package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Limits on a schema, refused before anything grows with them.
const (
	maxSchemaDepth = 64
	maxSchemaNodes = 1 << 16 // JSON values in the schema document
	maxNodes       = 4096    // compiled nodes
	maxProps       = 256     // properties of one object
	maxEnum        = 1024    // enum values of one schema
	maxLitBytes    = 1 << 16 // their canonical texts together
	maxCount       = 100000  // minLength, maxLength, minItems, maxItems
	maxAffix       = 256     // Options.Prefix and Options.Suffix
)

// UnsupportedError names a schema keyword (or combination) that the
// compiler does not implement; it is refused, never ignored.
type UnsupportedError struct {
	// Keyword is the keyword, Path where it stands (JSON pointer, "" at
	// the root), Reason why it is refused.
	Keyword, Path, Reason string
}

func (e *UnsupportedError) Error() string {
	at := e.Path
	if at == "" {
		at = "the root"
	}
	s := fmt.Sprintf("JSON schema keyword %q at %s is not supported", e.Keyword, at)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// jv is a JSON value of the schema document, objects in their key order.
type jv struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jv
	s    string // a string's value, a number's text
	b    bool
}

func (v *jv) get(k string) *jv {
	for i, key := range v.keys {
		if key == k {
			return v.vals[i]
		}
	}
	return nil
}

func parseDoc(data []byte) (*jv, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	count := 0
	v, err := readValue(dec, 0, &count)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the schema has data after its JSON value")
	}
	return v, nil
}

func readValue(dec *json.Decoder, depth int, count *int) (*jv, error) {
	if *count++; *count > maxSchemaNodes {
		return nil, fmt.Errorf("the schema has more than %d JSON values", maxSchemaNodes)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxSchemaDepth {
			return nil, fmt.Errorf("the schema nests deeper than %d", maxSchemaDepth)
		}
		v := &jv{kind: 'a'}
		if t == '{' {
			v.kind = 'o'
		}
		for dec.More() {
			if v.kind == 'o' {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("the schema is not JSON: %w", err)
				}
				k, _ := kt.(string)
				if v.get(k) != nil {
					return nil, fmt.Errorf("the schema has the key %q twice in one object", k)
				}
				v.keys = append(v.keys, k)
			}
			e, err := readValue(dec, depth+1, count)
			if err != nil {
				return nil, err
			}
			v.vals = append(v.vals, e)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, fmt.Errorf("the schema is not JSON: %w", err)
		}
		return v, nil
	case string:
		return &jv{kind: 's', s: t}, nil
	case json.Number:
		return &jv{kind: 'n', s: t.String()}, nil
	case bool:
		return &jv{kind: 'b', b: t}, nil
	case nil:
		return &jv{kind: 'z'}, nil
	}
	return nil, errors.New("the schema is not JSON")
}

// canon is v's compact JSON text: keys in their order, strings as
// encoding/json writes them (no HTML escaping), numbers as given.
func canon(v *jv, b *bytes.Buffer) {
	switch v.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			quote(k, b)
			b.WriteByte(':')
			canon(v.vals[i], b)
		}
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, e := range v.vals {
			if i > 0 {
				b.WriteByte(',')
			}
			canon(e, b)
		}
		b.WriteByte(']')
	case 's':
		quote(v.s, b)
	case 'n':
		b.WriteString(v.s)
	case 'b':
		b.WriteString(strconv.FormatBool(v.b))
	case 'z':
		b.WriteString("null")
	}
}

func quote(s string, b *bytes.Buffer) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// typeOf is a JSON value's schema type ("integer" for whole numbers).
func typeOf(v *jv) string {
	switch v.kind {
	case 'o':
		return "object"
	case 'a':
		return "array"
	case 's':
		return "string"
	case 'b':
		return "boolean"
	case 'z':
		return "null"
	}
	if !strings.ContainsAny(v.s, ".eE") {
		return "integer"
	}
	return "number"
}

// annotations are keywords with no effect on validity.
var annotations = map[string]bool{"title": true, "description": true, "$schema": true, "$id": true, "$comment": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$defs": true, "definitions": true}

// keywords the compiler implements, by the type they constrain ("" for
// any type).
var keywords = map[string]string{"type": "", "enum": "", "const": "", "anyOf": "", "oneOf": "", "allOf": "", "$ref": "",
	"properties": "object", "required": "object", "additionalProperties": "object",
	"items": "array", "minItems": "array", "maxItems": "array",
	"minLength": "string", "maxLength": "string", "pattern": "string",
	"minimum": "number", "maximum": "number", "exclusiveMinimum": "number", "exclusiveMaximum": "number", "multipleOf": "number"}

// reasons for keywords often met that are refused.
var refusedWhy = map[string]string{
	"format":            "string formats are not compiled into the grammar",
	"minimum":           "numeric ranges are not compiled into the grammar",
	"maximum":           "numeric ranges are not compiled into the grammar",
	"exclusiveMinimum":  "numeric ranges are not compiled into the grammar",
	"exclusiveMaximum":  "numeric ranges are not compiled into the grammar",
	"not":               "negation is not compiled into the grammar",
	"prefixItems":       "tuples are not supported",
	"uniqueItems":       "unique items cannot be guaranteed by the grammar",
	"patternProperties": "pattern keys are not supported",
}

type compiler struct {
	doc  *jv
	g    *Grammar
	refs map[string]int32
	lits int // literal bytes so far
	dfas int // pattern DFA states so far
	// reWork: the NFA states the patterns' constructions visited
	reWork int
	any    int32
	str    int32
}

// Options adjust a compiled grammar.
type Options struct {
	// Prefix and Suffix are exact text the output holds before and
	// after the JSON value (for example a model's tool-call tags);
	// whitespace is allowed before each.
	Prefix, Suffix string
}

// CompileSchema compiles a JSON schema (the common subset: type, object
// properties/required/additionalProperties, items/minItems/maxItems,
// minLength/maxLength, pattern (regex.go), enum, const, anyOf, oneOf of
// alternatives of pairwise different types, a one-element allOf, $ref to
// the document's $defs or definitions) into a grammar whose every
// complete text validates against it. Any other keyword is refused with
// an *UnsupportedError; a schema no value satisfies is refused too.
func CompileSchema(schema []byte, o *Options) (*Grammar, error) {
	doc, err := parseDoc(schema)
	if err != nil {
		return nil, err
	}
	c := &compiler{doc: doc, g: &Grammar{}, refs: map[string]int32{}, any: -1, str: -1}
	if err := c.affixes(o); err != nil {
		return nil, err
	}
	root, err := c.compile(doc, "")
	if err != nil {
		return nil, err
	}
	c.g.root = root
	c.anyValue() // the generic key string
	return c.g, c.g.finish()
}

// Call is a function a tool-call grammar may call: its name and the JSON
// schema of its arguments (nil: any object).
type Call struct {
	Name       string
	Parameters []byte
}

// CompileCalls compiles the grammar of one call of one of calls, written
// as the JSON object {nameKey: NAME, argsKey: ARGUMENTS} (name first).
// An error in a call's schema is refused as CompileSchema refuses it.
func CompileCalls(calls []Call, nameKey, argsKey string, o *Options) (*Grammar, error) {
	if len(calls) == 0 {
		return nil, errors.New("grammar: no call")
	}
	c := &compiler{g: &Grammar{}, any: -1, str: -1}
	if err := c.affixes(o); err != nil {
		return nil, err
	}
	var alts []int32
	for _, call := range calls {
		var params int32
		c.doc, c.refs = &jv{kind: 'o'}, map[string]int32{}
		if call.Parameters != nil {
			doc, err := parseDoc(call.Parameters)
			if err != nil {
				return nil, err
			}
			c.doc = doc
		}
		var err error
		if call.Parameters != nil {
			params, err = c.compile(c.doc, "")
		} else {
			params, err = c.typed(c.doc, "object", "") // any object
		}
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		quote(call.Name, &b)
		name, err := c.add(node{kind: kLiteral, lit: newLitTrie([]string{b.String()})})
		if err != nil {
			return nil, err
		}
		var nk, ak bytes.Buffer
		quote(nameKey, &nk)
		quote(argsKey, &ak)
		obj, err := c.add(node{kind: kObject, addl: -1, props: []prop{{key: nk.Bytes(), value: name, required: true}, {key: ak.Bytes(), value: params, required: true}}})
		if err != nil {
			return nil, err
		}
		alts = append(alts, obj)
	}
	c.g.root = alts[0]
	if len(alts) > 1 {
		root, err := c.add(node{kind: kAnyOf, alts: alts})
		if err != nil {
			return nil, err
		}
		c.g.root = root
	}
	c.anyValue()
	return c.g, c.g.finish()
}

// JSONObject is the grammar of any JSON object (response_format
// json_object).
func JSONObject(o *Options) (*Grammar, error) {
	c := &compiler{g: &Grammar{}, refs: map[string]int32{}, any: -1, str: -1}
	if err := c.affixes(o); err != nil {
		return nil, err
	}
	c.anyValue()
	c.g.root = c.g.nodes[c.any].alts[0]
	return c.g, c.g.finish()
}

func (c *compiler) affixes(o *Options) error {
	if o == nil {
		return nil
	}
	pre, suf := strings.TrimLeft(o.Prefix, wsChars), strings.TrimLeft(o.Suffix, wsChars)
	if len(pre) > maxAffix || len(suf) > maxAffix {
		return fmt.Errorf("grammar: prefix and suffix are limited to %d bytes", maxAffix)
	}
	c.g.prefix, c.g.suffix = []byte(pre), []byte(suf)
	return nil
}

func (c *compiler) add(n node) (int32, error) {
	if len(c.g.nodes) >= maxNodes {
		return -1, fmt.Errorf("the schema compiles to more than %d nodes", maxNodes)
	}
	c.g.nodes = append(c.g.nodes, n)
	return int32(len(c.g.nodes) - 1), nil
}

// anyValue builds the nodes of any JSON value once: any = anyOf(object
// of any values, array of any values, string, number, true/false/null).
func (c *compiler) anyValue() int32 {
	if c.any >= 0 {
		return c.any
	}
	ns := &c.g.nodes
	c.any = int32(len(*ns))
	*ns = append(*ns, node{kind: kAnyOf})
	obj := int32(len(*ns))
	*ns = append(*ns, node{kind: kObject, addl: c.any})
	arr := int32(len(*ns))
	*ns = append(*ns, node{kind: kArray, items: c.any, maxN: -1})
	c.str = int32(len(*ns))
	*ns = append(*ns, node{kind: kString, maxN: -1})
	num := int32(len(*ns))
	*ns = append(*ns, node{kind: kNumber})
	lit := int32(len(*ns))
	*ns = append(*ns, node{kind: kLiteral, lit: newLitTrie([]string{"true", "false", "null"})})
	(*ns)[c.any].alts = []int32{obj, arr, c.str, num, lit}
	c.g.keyStr = c.str
	return c.any
}

func unsupported(k, path, why string) error {
	return &UnsupportedError{Keyword: k, Path: path, Reason: why}
}

func ptr(path, k string) string {
	return path + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func (c *compiler) compile(s *jv, path string) (int32, error) {
	switch s.kind {
	case 'b':
		if s.b {
			return c.anyValue(), nil
		}
		return c.add(node{kind: kAnyOf}) // no alternative: no value
	case 'o':
	default:
		return -1, fmt.Errorf("the schema at %q is not an object or a boolean", path)
	}
	// every keyword is known, an annotation, or refused
	for _, k := range s.keys {
		if _, ok := keywords[k]; ok || annotations[k] {
			continue
		}
		if v := s.get(k); k == "uniqueItems" && v.kind == 'b' && !v.b {
			continue // false asks for nothing
		}
		return -1, unsupported(k, path, refusedWhy[k])
	}
	others := func(allowed ...string) string {
		for _, k := range s.keys {
			if !annotations[k] && !contains(allowed, k) && k != "uniqueItems" {
				return k
			}
		}
		return ""
	}
	if ref := s.get("$ref"); ref != nil {
		if k := others("$ref"); k != "" {
			return -1, unsupported(k, path, "keywords beside $ref are not supported")
		}
		if ref.kind != 's' {
			return -1, fmt.Errorf("$ref at %q is not a string", path)
		}
		return c.ref(ref.s, path)
	}
	if all := s.get("allOf"); all != nil {
		if k := others("allOf"); k != "" {
			return -1, unsupported(k, path, "keywords beside allOf are not supported")
		}
		if all.kind != 'a' || len(all.vals) != 1 {
			return -1, unsupported("allOf", path, "only an allOf of one schema is supported")
		}
		return c.compile(all.vals[0], ptr(path, "allOf")+"/0")
	}
	if oneOf := s.get("oneOf"); oneOf != nil {
		if k := others("oneOf"); k != "" {
			return -1, unsupported(k, path, "keywords beside oneOf are not supported")
		}
		if oneOf.kind != 'a' || len(oneOf.vals) == 0 {
			return -1, fmt.Errorf("oneOf at %q is not a non-empty array", path)
		}
		if err := disjointTypes(oneOf.vals); err != nil {
			return -1, unsupported("oneOf", path, err.Error())
		}
		// no value is valid under two of them: oneOf is their anyOf
		return c.alternatives(oneOf.vals, ptr(path, "oneOf"))
	}
	if anyOf := s.get("anyOf"); anyOf != nil {
		if k := others("anyOf"); k != "" {
			return -1, unsupported(k, path, "keywords beside anyOf are not supported")
		}
		if anyOf.kind != 'a' || len(anyOf.vals) == 0 {
			return -1, fmt.Errorf("anyOf at %q is not a non-empty array", path)
		}
		return c.alternatives(anyOf.vals, ptr(path, "anyOf"))
	}
	var types []string
	if t := s.get("type"); t != nil {
		switch t.kind {
		case 's':
			types = []string{t.s}
		case 'a':
			for _, e := range t.vals {
				if e.kind != 's' {
					return -1, fmt.Errorf("type at %q is not a string or an array of strings", path)
				}
				types = append(types, e.s)
			}
		default:
			return -1, fmt.Errorf("type at %q is not a string or an array of strings", path)
		}
		for _, t := range types {
			switch t {
			case "object", "array", "string", "number", "integer", "boolean", "null":
			default:
				return -1, fmt.Errorf("type %q at %q is not a JSON schema type", t, path)
			}
		}
		if len(types) == 0 {
			return c.add(node{kind: kAnyOf})
		}
	}
	if e, k := s.get("enum"), "enum"; e != nil || s.get("const") != nil {
		if e == nil {
			e, k = &jv{kind: 'a', vals: []*jv{s.get("const")}}, "const"
		} else if s.get("const") != nil {
			return -1, unsupported("const", path, "const beside enum is not supported")
		}
		if x := others("enum", "const", "type"); x != "" {
			return -1, unsupported(x, path, "keywords beside "+k+" (but type) are not supported")
		}
		if e.kind != 'a' || len(e.vals) == 0 || len(e.vals) > maxEnum {
			return -1, fmt.Errorf("enum at %q must be an array of 1 to %d values", path, maxEnum)
		}
		var texts []string
		for _, v := range e.vals {
			if len(types) > 0 && !typeFits(typeOf(v), types) {
				continue // a value the type excludes is not valid
			}
			var b bytes.Buffer
			canon(v, &b)
			if c.lits += b.Len(); c.lits > maxLitBytes {
				return -1, fmt.Errorf("the schema's enum and const values are over %d bytes", maxLitBytes)
			}
			texts = append(texts, b.String())
		}
		if len(texts) == 0 {
			return c.add(node{kind: kAnyOf})
		}
		return c.add(node{kind: kLiteral, lit: newLitTrie(texts)})
	}
	if types == nil {
		// the type the keywords imply; none: any value
		for _, k := range s.keys {
			if t := keywords[k]; t != "" {
				types = []string{t}
				break
			}
		}
		if types == nil {
			return c.anyValue(), nil
		}
	}
	if len(types) == 1 {
		return c.typed(s, types[0], path)
	}
	id, err := c.add(node{kind: kAnyOf})
	if err != nil {
		return -1, err
	}
	var alts []int32
	for _, t := range types {
		x, err := c.typed(s, t, path)
		if err != nil {
			return -1, err
		}
		alts = append(alts, x)
	}
	c.g.nodes[id].alts = alts
	return id, nil
}

// alternatives compiles schemas any one of which a value must satisfy.
func (c *compiler) alternatives(vals []*jv, path string) (int32, error) {
	id, err := c.add(node{kind: kAnyOf})
	if err != nil {
		return -1, err
	}
	alts := make([]int32, 0, len(vals))
	for i, a := range vals {
		x, err := c.compile(a, path+"/"+strconv.Itoa(i))
		if err != nil {
			return -1, err
		}
		alts = append(alts, x)
	}
	c.g.nodes[id].alts = alts
	return id, nil
}

// disjointTypes accepts the alternatives of a oneOf when each states its
// "type" and no two share one (integer counts as a number): then a value
// valid under one is invalid under every other, whatever their other
// keywords, so "exactly one" is "any one".
func disjointTypes(alts []*jv) error {
	owner := map[string]int{}
	for i, a := range alts {
		var t *jv
		if a.kind == 'o' {
			t = a.get("type")
		}
		var ts []string
		switch {
		case t == nil:
			return fmt.Errorf("oneOf alternative %d states no type: only alternatives of pairwise different types are supported (exactly one cannot be guaranteed otherwise; use anyOf)", i)
		case t.kind == 's':
			ts = []string{t.s}
		case t.kind == 'a':
			for _, e := range t.vals {
				if e.kind != 's' {
					return fmt.Errorf("oneOf alternative %d: type is not a string or an array of strings", i)
				}
				ts = append(ts, e.s)
			}
		default:
			return fmt.Errorf("oneOf alternative %d: type is not a string or an array of strings", i)
		}
		for _, x := range ts {
			if x == "integer" {
				x = "number"
			}
			if j, ok := owner[x]; ok && j != i {
				return fmt.Errorf("oneOf alternatives %d and %d both take %ss: only alternatives of pairwise different types are supported (use anyOf)", j, i, x)
			}
			owner[x] = i
		}
	}
	return nil
}

func contains(s []string, k string) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}

func typeFits(t string, types []string) bool {
	return contains(types, t) || t == "integer" && contains(types, "number")
}

// count reads a non-negative whole-number keyword; -1 when absent.
func count(s *jv, k, path string) (int32, error) {
	v := s.get(k)
	if v == nil {
		return -1, nil
	}
	f, err := strconv.ParseFloat(v.s, 64)
	if v.kind != 'n' || err != nil || f < 0 || f != float64(int64(f)) {
		return -1, fmt.Errorf("%s at %q must be a non-negative integer", k, path)
	}
	if f > maxCount {
		return -1, unsupported(k, path, fmt.Sprintf("values above %d are not supported", maxCount))
	}
	return int32(f), nil
}

func (c *compiler) typed(s *jv, t, path string) (int32, error) {
	switch t {
	case "boolean":
		return c.add(node{kind: kLiteral, lit: newLitTrie([]string{"true", "false"})})
	case "null":
		return c.add(node{kind: kLiteral, lit: newLitTrie([]string{"null"})})
	case "number", "integer":
		n := node{kind: kNumber, integer: t == "integer", lo: -maxBounded, hi: maxBounded}
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			v := s.get(k)
			if v == nil {
				continue
			}
			if v.kind != 'n' {
				return -1, unsupported(k, path, "only a number is supported (draft 4's boolean exclusive bounds are not)")
			}
			x, err := strconv.ParseFloat(v.s, 64)
			if err != nil {
				return -1, fmt.Errorf("%s at %q is not a number", k, path)
			}
			// a bounded value is written as an integer in range
			n.bounded, n.integer = true, true
			var b float64
			switch k {
			case "minimum":
				b = math.Ceil(x)
			case "exclusiveMinimum":
				b = math.Floor(x) + 1
			case "maximum":
				b = math.Floor(x)
			default:
				b = math.Ceil(x) - 1
			}
			b = max(-maxBounded-1, min(maxBounded+1, b))
			if strings.HasSuffix(k, "inimum") {
				n.lo = max(n.lo, int64(b))
			} else {
				n.hi = min(n.hi, int64(b))
			}
		}
		if v := s.get("multipleOf"); v != nil {
			x, err := strconv.ParseFloat(v.s, 64)
			if v.kind != 'n' || err != nil || x <= 0 {
				return -1, fmt.Errorf("multipleOf at %q must be a number above 0", path)
			}
			if x != math.Trunc(x) || x > maxBounded {
				return -1, unsupported("multipleOf", path, fmt.Sprintf("only a whole multipleOf up to %d is supported", maxBounded))
			}
			// written as an integer in range (±maxBounded without one)
			n.bounded, n.integer, n.mult = true, true, int64(x)
		}
		if n.lo > n.hi {
			return c.add(node{kind: kAnyOf}) // an empty range: no value
		}
		return c.add(n)
	case "string":
		lo, err := count(s, "minLength", path)
		if err != nil {
			return -1, err
		}
		hi, err := count(s, "maxLength", path)
		if err != nil {
			return -1, err
		}
		if pat := s.get("pattern"); pat != nil {
			if pat.kind != 's' {
				return -1, fmt.Errorf("pattern at %q is not a string", path)
			}
			if lo > 0 || hi >= 0 {
				return -1, unsupported("pattern", path, "a pattern beside minLength or maxLength is not supported")
			}
			re, err := compilePattern(pat.s, &c.reWork)
			if err != nil {
				return -1, unsupported("pattern", path, err.Error())
			}
			if c.dfas += len(re.dist); c.dfas > maxDFAStates {
				return -1, unsupported("pattern", path, fmt.Sprintf("the schema's patterns need over %d automaton states in all", maxDFAStates))
			}
			return c.add(node{kind: kString, maxN: -1, re: re})
		}
		return c.add(node{kind: kString, minN: max(lo, 0), maxN: hi})
	case "array":
		if it := s.get("items"); it != nil && it.kind == 'a' {
			return -1, unsupported("items", path, "an array of item schemas (a tuple) is not supported")
		}
		lo, err := count(s, "minItems", path)
		if err != nil {
			return -1, err
		}
		hi, err := count(s, "maxItems", path)
		if err != nil {
			return -1, err
		}
		id, err := c.add(node{kind: kArray, minN: max(lo, 0), maxN: hi})
		if err != nil {
			return -1, err
		}
		items := c.anyValue()
		if it := s.get("items"); it != nil {
			if items, err = c.compile(it, ptr(path, "items")); err != nil {
				return -1, err
			}
		}
		c.g.nodes[id].items = items
		return id, nil
	}
	// object
	props, req, addl := s.get("properties"), s.get("required"), s.get("additionalProperties")
	if props != nil && props.kind != 'o' {
		return -1, fmt.Errorf("properties at %q is not an object", path)
	}
	required := map[string]bool{}
	if req != nil {
		if req.kind != 'a' {
			return -1, fmt.Errorf("required at %q is not an array", path)
		}
		for _, r := range req.vals {
			if r.kind != 's' {
				return -1, fmt.Errorf("required at %q holds a non-string", path)
			}
			if props == nil || props.get(r.s) == nil {
				return -1, unsupported("required", path, fmt.Sprintf("the required property %q is not among properties", r.s))
			}
			required[r.s] = true
		}
	}
	id, err := c.add(node{kind: kObject, addl: -1})
	if err != nil {
		return -1, err
	}
	if props != nil && len(props.keys) > 0 {
		// the listed properties only, in their order: additional
		// properties are allowed by the schema, never required
		if len(props.keys) > maxProps {
			return -1, unsupported("properties", path, fmt.Sprintf("more than %d properties", maxProps))
		}
		ps := make([]prop, 0, len(props.keys))
		for i, k := range props.keys {
			v, err := c.compile(props.vals[i], ptr(ptr(path, "properties"), k))
			if err != nil {
				return -1, err
			}
			var b bytes.Buffer
			quote(k, &b)
			if c.lits += b.Len(); c.lits > maxLitBytes {
				return -1, fmt.Errorf("the schema's property names are over %d bytes", maxLitBytes)
			}
			ps = append(ps, prop{key: b.Bytes(), value: v, required: required[k]})
		}
		c.g.nodes[id].props = ps
		return id, nil
	}
	switch {
	case addl == nil || addl.kind == 'b' && addl.b:
		c.g.nodes[id].addl = c.anyValue()
	case addl.kind == 'b':
		// false: only {}
	default:
		v, err := c.compile(addl, ptr(path, "additionalProperties"))
		if err != nil {
			return -1, err
		}
		c.g.nodes[id].addl = v
	}
	c.anyValue() // the key string
	return id, nil
}

// ref compiles the schema a local reference points to (once: a
// recursive schema refers back to the node being built).
func (c *compiler) ref(ref, path string) (int32, error) {
	if id, ok := c.refs[ref]; ok {
		return id, nil
	}
	if !strings.HasPrefix(ref, "#") {
		return -1, unsupported("$ref", path, fmt.Sprintf("only references within the schema (#...) are supported, not %q", ref))
	}
	target := c.doc
	if p := ref[1:]; p != "" {
		if !strings.HasPrefix(p, "/") {
			return -1, unsupported("$ref", path, fmt.Sprintf("anchors (%q) are not supported", ref))
		}
		for _, part := range strings.Split(p[1:], "/") {
			part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
			switch {
			case target.kind == 'o':
				target = target.get(part)
			case target.kind == 'a':
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(target.vals) {
					target = nil
				} else {
					target = target.vals[i]
				}
			default:
				target = nil
			}
			if target == nil {
				return -1, fmt.Errorf("$ref %q at %q points to nothing", ref, path)
			}
		}
	}
	// an alias node, filled when the target is compiled
	id, err := c.add(node{kind: kAnyOf})
	if err != nil {
		return -1, err
	}
	c.refs[ref] = id
	t, err := c.compile(target, ref[1:])
	if err != nil {
		return -1, err
	}
	c.g.nodes[id].alts = []int32{t}
	return id, nil
}
