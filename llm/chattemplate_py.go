package llm

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/ardanlabs/jinja"
)

// Where the Jinja engine's own printing differs from Python's, the
// template is rewritten to call ours: every {{ }} prints its value as
// Python's str() does (None as "None", floats as repr, lists and dicts
// as their repr with Python's quoting and escapes), and the filters
// tojson, trim and string are Hugging Face's and Jinja2's. The rewriting
// reads the template's tags as Jinja2's lexer does (string literals may
// hold "}}" or "|"); raw blocks and comments are left alone.

// pyNames are the names the rewritten template calls.
const (
	printName = "__switchyard_print"
	pyPrefix  = "__switchyard_"
)

// pyFilters are the filters replaced by ours (the name is prefixed).
var pyFilters = map[string]bool{"tojson": true, "trim": true, "string": true, "length": true, "count": true}

// rewriteTemplate returns the template with the printing and filters
// replaced. Text it cannot read as tags (an unclosed one) is kept as it
// is, for the engine to report.
func rewriteTemplate(src string) string {
	var sb strings.Builder
	sb.Grow(len(src) + len(src)/8)
	at := 0
	for at < len(src) {
		j := strings.IndexByte(src[at:], '{')
		if j < 0 || at+j+1 >= len(src) {
			break
		}
		start := at + j
		kind := src[start+1]
		switch kind {
		case '#':
			k := strings.Index(src[start+2:], "#}")
			if k < 0 {
				sb.WriteString(src[at:])
				return sb.String()
			}
			end := start + 2 + k + 2
			sb.WriteString(src[at:end])
			at = end
			continue
		case '{', '%':
		default:
			sb.WriteString(src[at : start+1])
			at = start + 1
			continue
		}
		closing := "}}"
		if kind == '%' {
			closing = "%}"
		}
		k := tagEnd(src[start+2:], closing)
		if k < 0 {
			sb.WriteString(src[at:])
			return sb.String()
		}
		end := start + 2 + k + 2
		body := src[start+2 : start+2+k]
		sb.WriteString(src[at:start])
		at = end
		if kind == '%' {
			stmt := strings.TrimSpace(strings.Trim(body, "-+"))
			if stmt == "raw" {
				// copy up to and including the endraw tag
				e := rawEnd(src[end:])
				if e < 0 {
					sb.WriteString(src[start:])
					return sb.String()
				}
				sb.WriteString(src[start : end+e])
				at = end + e
				continue
			}
			sb.WriteString("{%")
			sb.WriteString(renameFilters(rewriteStatement(body)))
			sb.WriteString("%}")
			continue
		}
		lead, inner, trail := "", body, ""
		if inner != "" && (inner[0] == '-' || inner[0] == '+') {
			lead, inner = inner[:1], inner[1:]
		}
		if n := len(inner); n > 0 && (inner[n-1] == '-' || inner[n-1] == '+') {
			inner, trail = inner[:n-1], inner[n-1:]
		}
		if strings.TrimSpace(inner) == "" {
			sb.WriteString(src[start:end])
			continue
		}
		sb.WriteString("{{" + lead + " (" + renameFilters(rewriteExpr(inner, 0, true, false)) + ")|" + printName + " " + trail + "}}")
	}
	sb.WriteString(src[at:])
	return sb.String()
}

// tagEnd is the index of closing in s outside string literals, or -1.
func tagEnd(s, closing string) int {
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case strings.HasPrefix(s[i:], closing):
			return i
		}
	}
	return -1
}

// rawEnd is the index just past the {% endraw %} tag in s, or -1.
func rawEnd(s string) int {
	for at := 0; ; {
		j := strings.Index(s[at:], "{%")
		if j < 0 {
			return -1
		}
		k := strings.Index(s[at+j+2:], "%}")
		if k < 0 {
			return -1
		}
		body := s[at+j+2 : at+j+2+k]
		if strings.TrimSpace(strings.Trim(body, "-+")) == "endraw" {
			return at + j + 2 + k + 2
		}
		at += j + 2
	}
}

// renameFilters prefixes the names of the filters we replace, outside
// string literals.
func renameFilters(s string) string {
	var sb strings.Builder
	var quote byte
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '|':
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
				j++
			}
			k := j
			for k < len(s) && (s[k] == '_' || s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z' || s[k] >= '0' && s[k] <= '9') {
				k++
			}
			if pyFilters[s[j:k]] {
				sb.WriteString(s[last:j])
				sb.WriteString(pyPrefix)
				last = j
			}
			i = k - 1
		}
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// pyGlobals are the callables the rewritten template needs.
func pyGlobals(data map[string]jinja.Value) {
	data[printName] = jinja.NewCallable("print", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), errors.New("print takes one value")
		}
		s, err := pyStr(args[0])
		return jinja.NewString(s), err
	})
	data[pyPrefix+"tojson"] = jinja.NewCallable("tojson", pyToJSON)
	data[pyPrefix+"string"] = jinja.NewCallable("string", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 {
			return jinja.Undefined(), errors.New("string takes no arguments")
		}
		s, err := pyStr(args[0])
		return jinja.NewString(s), err
	})
	data[pyPrefix+"trim"] = jinja.NewCallable("trim", pyTrim)
	data[pyPrefix+"length"] = jinja.NewCallable("length", pyLen)
	data[pyPrefix+"count"] = jinja.NewCallable("count", pyLen)
	data[iterName] = jinja.NewCallable("iter", pyIter)
	data[addName] = jinja.NewCallable("add", pyAdd)
	data[concatName] = jinja.NewCallable("concat", pyConcat)
	data[inName] = jinja.NewCallable("in", pyIn)
	data[itemName] = jinja.NewCallable("getitem", pyGetitem)
	for name := range dictMethods {
		data[pyPrefix+"m_"+name] = jinja.NewCallable(name, dictMethod(name))
	}
}

// pyTrim is Jinja2's trim: str(value).strip(chars).
func pyTrim(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 || len(args) > 2 {
		return jinja.Undefined(), errors.New("trim takes at most one argument")
	}
	s, err := pyStr(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	chars, ok := jinja.Undefined(), false
	if len(args) == 2 {
		chars, ok = args[1], true
	} else if v, has := kw["chars"]; has {
		chars, ok = v, true
	}
	if ok && !chars.IsNone() && !chars.IsUndefined() {
		if !chars.IsString() {
			return jinja.Undefined(), errors.New("trim: chars must be a string")
		}
		return jinja.NewString(strings.Trim(s, chars.AsString())), nil
	}
	return jinja.NewString(strings.TrimFunc(s, pyIsSpace)), nil
}

// pyIsSpace is Python's str.isspace for one character.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// pyStr is Python's str() of a value as Jinja2 prints it (an undefined
// value prints nothing).
func pyStr(v jinja.Value) (string, error) {
	switch {
	case v.IsUndefined():
		return "", nil
	case v.IsString():
		return v.AsString(), nil
	}
	var sb strings.Builder
	err := pyRepr(&sb, v, 0)
	return sb.String(), err
}

// pyRepr writes Python's repr() of a value.
func pyRepr(sb *strings.Builder, v jinja.Value, depth int) error {
	if depth > 256 {
		return errors.New("value nested too deep to print")
	}
	switch {
	case v.IsUndefined():
		// Jinja2 prints an undefined value inside a container as its
		// empty string, which Python's repr quotes
		sb.WriteString("''")
	case v.IsNone():
		sb.WriteString("None")
	case v.IsBool():
		if v.AsBool() {
			sb.WriteString("True")
		} else {
			sb.WriteString("False")
		}
	case v.IsInt():
		sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		switch {
		case math.IsNaN(f):
			sb.WriteString("nan")
		case math.IsInf(f, 1):
			sb.WriteString("inf")
		case math.IsInf(f, -1):
			sb.WriteString("-inf")
		default:
			sb.WriteString(pyFloat(f))
		}
	case v.IsString():
		pyQuote(sb, v.AsString())
	case v.IsList():
		sb.WriteByte('[')
		for i, x := range v.AsList().Items {
			if i > 0 {
				sb.WriteString(", ")
			}
			if err := pyRepr(sb, x, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		sb.WriteByte('{')
		for i, k := range d.OrderedKeys() {
			if i > 0 {
				sb.WriteString(", ")
			}
			pyQuote(sb, k)
			sb.WriteString(": ")
			x, _ := d.Get(k)
			if err := pyRepr(sb, x, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte('}')
	default:
		sb.WriteString(v.String())
	}
	return nil
}

// pyQuote writes Python's repr() of a string: single quotes unless the
// text holds a single quote and no double one; backslash escapes for
// the quote, backslash, \t \n \r and characters Python does not print.
func pyQuote(sb *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	sb.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == unicode.ReplacementChar || !unicode.IsPrint(r) && r != ' ':
			// invalid UTF-8 reads as U+FFFD, which Python (given the
			// bytes decoded) prints; other non-printing characters are escaped
			if r == unicode.ReplacementChar {
				sb.WriteRune(r)
				continue
			}
			switch {
			case r < 0x100:
				fmt.Fprintf(sb, `\x%02x`, r)
			case r < 0x10000:
				fmt.Fprintf(sb, `\u%04x`, r)
			default:
				fmt.Fprintf(sb, `\U%08x`, r)
			}
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte(q)
}

// pyLen is Jinja2's length filter: Python's len(), 0 for an undefined value.
func pyLen(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("length takes no arguments")
	}
	v := args[0]
	switch {
	case v.IsString():
		return jinja.NewInt(int64(len([]rune(v.AsString())))), nil
	case v.IsList():
		return jinja.NewInt(int64(v.AsList().Len())), nil
	case v.IsDict():
		return jinja.NewInt(int64(v.AsDict().Len())), nil
	case v.IsUndefined():
		return jinja.NewInt(0), nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: object of type '%s' has no len()", pyTypeName(v))
}

// pyIter passes on what a for loop may iterate (a string, list or dict;
// an undefined value iterates as empty) and refuses the rest as Python does.
func pyIter(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("iter takes one value")
	}
	v := args[0]
	if v.IsString() || v.IsList() || v.IsDict() || v.IsUndefined() {
		return v, nil
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: '%s' object is not iterable", pyTypeName(v))
}
