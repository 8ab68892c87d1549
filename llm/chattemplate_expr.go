package llm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
)

// The Jinja engine is lenient where Python is not: 'a' + none renders
// "a", 'x' in none is false. Jinja2 raises a TypeError for both (and
// Hugging Face's apply_chat_template with it), so a conversation a model
// family's template does not take (content parts where it wants text, a
// null content) renders here as there: as an error, not as a prompt the
// model was never trained on. The expressions of {{ }}, if, elif, set and
// for are parsed with Jinja2's grammar and their +, ~, in and not in
// rewritten to calls of Python's semantics, as are subscripts x[k] (the
// engine takes 'abc'['k'] for 'abc'[0]); the rest of the text is kept
// byte for byte. An expression that does not parse is left as it is.

const (
	addName    = pyPrefix + "add"
	concatName = pyPrefix + "concat"
	inName     = pyPrefix + "in"
	itemName   = pyPrefix + "getitem"
	iterName   = pyPrefix + "iter"
)

// exprTok is a token of a Jinja expression: its bytes [start, end) and
// kind: 'n' name, 's' string, '0' number, or the operator itself.
type exprTok struct {
	start, end int
	kind       string
}

// lexExpr splits a tag body into tokens, or fails.
func lexExpr(s string) ([]exprTok, bool) {
	var toks []exprTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, exprTok{i, j, "n"})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			toks = append(toks, exprTok{i, j, "0"})
			i = j
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, false
			}
			toks = append(toks, exprTok{i, j + 1, "s"})
			i = j + 1
		default:
			op := ""
			for _, o := range []string{"//", "**", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				if !strings.ContainsRune("+-*/%~<>=()[]{},.:|", rune(c)) {
					return nil, false
				}
				op = s[i : i+1]
			}
			toks = append(toks, exprTok{i, i + len(op), op})
			i += len(op)
		}
	}
	return toks, true
}

// exprNode is a parsed expression: its bytes, the sub-expressions inside
// it, and, for the operators rewritten, which one.
type exprNode struct {
	start, end int
	kids       []*exprNode
	op         string // "+", "~", "in", "not in", "[]" (x[k], no slice) when rewritten
}

type exprParser struct {
	src  string
	toks []exprTok
	pos  int
	bad  bool
}

func (p *exprParser) peek() exprTok {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return exprTok{len(p.src), len(p.src), ""}
}

// is reports whether the next token is the operator or name s.
func (p *exprParser) is(s string) bool {
	t := p.peek()
	if t.kind == "n" {
		return p.src[t.start:t.end] == s
	}
	return t.kind == s
}

func (p *exprParser) next() exprTok {
	t := p.peek()
	if p.pos < len(p.toks) {
		p.pos++
	} else {
		p.bad = true
	}
	return t
}

func (p *exprParser) expect(s string) {
	if !p.is(s) {
		p.bad = true
		return
	}
	p.next()
}

func span(kids ...*exprNode) *exprNode {
	return &exprNode{start: kids[0].start, end: kids[len(kids)-1].end, kids: kids}
}

// tuple: expression (',' expression)* [','], as Jinja2's parse_tuple.
func (p *exprParser) tuple(condexpr bool) *exprNode {
	first := p.pos
	var kids []*exprNode
	for !p.bad {
		if len(kids) > 0 && !p.startsExpr() {
			break
		}
		if condexpr {
			kids = append(kids, p.condexpr())
		} else {
			kids = append(kids, p.or())
		}
		if !p.is(",") {
			break
		}
		p.next()
	}
	if len(kids) == 0 || p.bad {
		p.bad = true
		return &exprNode{}
	}
	n := span(kids...)
	if p.pos > first && p.toks[p.pos-1].kind == "," {
		n.end = p.toks[p.pos-1].end
	}
	return n
}

// startsExpr reports whether the next token can begin an expression.
func (p *exprParser) startsExpr() bool {
	t := p.peek()
	switch t.kind {
	case "n":
		switch p.src[t.start:t.end] {
		case "if", "else", "and", "or", "in", "is", "recursive":
			return false
		}
		return true
	case "s", "0", "(", "[", "{", "-", "+":
		return true
	}
	return false
}

func (p *exprParser) condexpr() *exprNode {
	n := p.or()
	for p.is("if") && !p.bad {
		p.next()
		cond := p.or()
		kids := []*exprNode{n, cond}
		if p.is("else") {
			p.next()
			kids = append(kids, p.condexpr())
		}
		n = span(kids...)
	}
	return n
}

func (p *exprParser) or() *exprNode {
	n := p.and()
	for p.is("or") && !p.bad {
		p.next()
		n = span(n, p.and())
	}
	return n
}

func (p *exprParser) and() *exprNode {
	n := p.not()
	for p.is("and") && !p.bad {
		p.next()
		n = span(n, p.not())
	}
	return n
}

func (p *exprParser) not() *exprNode {
	if p.is("not") {
		t := p.next()
		n := p.not()
		return &exprNode{start: t.start, end: n.end, kids: []*exprNode{n}}
	}
	return p.compare()
}

func (p *exprParser) compare() *exprNode {
	n := p.math1()
	ops := 0
	var kids = []*exprNode{n}
	op := ""
	for !p.bad {
		switch {
		case p.is("==") || p.is("!=") || p.is("<") || p.is(">") || p.is("<=") || p.is(">="):
			p.next()
			op = "cmp"
		case p.is("in"):
			p.next()
			op = "in"
		case p.is("not") && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == "n" &&
			p.src[p.toks[p.pos+1].start:p.toks[p.pos+1].end] == "in":
			p.next()
			p.next()
			op = "not in"
		default:
			if ops == 0 {
				return n
			}
			c := span(kids...)
			if ops == 1 && (op == "in" || op == "not in") {
				c.op = op
			}
			return c
		}
		ops++
		kids = append(kids, p.math1())
	}
	return n
}

func (p *exprParser) math1() *exprNode {
	n := p.concat()
	for (p.is("+") || p.is("-")) && !p.bad {
		op := p.next().kind
		n = span(n, p.concat())
		if op == "+" {
			n.op = "+"
		}
	}
	return n
}

func (p *exprParser) concat() *exprNode {
	n := p.math2()
	for p.is("~") && !p.bad {
		p.next()
		n = span(n, p.math2())
		n.op = "~"
	}
	return n
}

func (p *exprParser) math2() *exprNode {
	n := p.pow()
	for (p.is("*") || p.is("/") || p.is("//") || p.is("%")) && !p.bad {
		p.next()
		n = span(n, p.pow())
	}
	return n
}

func (p *exprParser) pow() *exprNode {
	n := p.unary(true)
	for p.is("**") && !p.bad {
		p.next()
		n = span(n, p.unary(true))
	}
	return n
}

func (p *exprParser) unary(withFilter bool) *exprNode {
	var n *exprNode
	if p.is("-") || p.is("+") {
		t := p.next()
		x := p.unary(false)
		n = &exprNode{start: t.start, end: x.end, kids: []*exprNode{x}}
	} else {
		n = p.primary()
	}
	n = p.postfix(n)
	if withFilter {
		n = p.filters(n)
	}
	return n
}

func (p *exprParser) primary() *exprNode {
	t := p.next()
	switch t.kind {
	case "n", "0":
		return &exprNode{start: t.start, end: t.end}
	case "s":
		end := t.end
		for p.peek().kind == "s" { // adjacent strings join
			end = p.next().end
		}
		return &exprNode{start: t.start, end: end}
	case "(":
		if p.is(")") {
			return &exprNode{start: t.start, end: p.next().end}
		}
		x := p.tuple(true)
		e := p.peek()
		p.expect(")")
		return &exprNode{start: t.start, end: e.end, kids: []*exprNode{x}}
	case "[":
		n := &exprNode{start: t.start}
		for !p.is("]") && !p.bad {
			n.kids = append(n.kids, p.condexpr())
			if !p.is(",") {
				break
			}
			p.next()
		}
		e := p.peek()
		p.expect("]")
		n.end = e.end
		return n
	case "{":
		n := &exprNode{start: t.start}
		for !p.is("}") && !p.bad {
			n.kids = append(n.kids, p.condexpr())
			p.expect(":")
			n.kids = append(n.kids, p.condexpr())
			if !p.is(",") {
				break
			}
			p.next()
		}
		e := p.peek()
		p.expect("}")
		n.end = e.end
		return n
	}
	p.bad = true
	return &exprNode{start: t.start, end: t.end}
}

func (p *exprParser) postfix(n *exprNode) *exprNode {
	for !p.bad {
		switch {
		case p.is("."):
			p.next()
			t := p.next()
			if t.kind != "n" && t.kind != "0" {
				p.bad = true
			}
			if name := p.src[t.start:t.end]; dictMethods[name] && p.is("(") {
				c, plain := p.callArgs(n)
				if plain {
					c.op = "." + name
				} else {
					c.kids[0] = &exprNode{start: n.start, end: t.end, kids: []*exprNode{n}}
				}
				n = c
				continue
			}
			n = &exprNode{start: n.start, end: t.end, kids: []*exprNode{n}}
		case p.is("["):
			p.next()
			kids := []*exprNode{n}
			slice := false
			for !p.is("]") && !p.bad {
				if p.is(":") {
					p.next()
					slice = true
					continue
				}
				kids = append(kids, p.condexpr())
				if p.is(",") {
					p.next()
					slice = true // a tuple key: no template has one
				}
			}
			e := p.peek()
			p.expect("]")
			n = &exprNode{start: n.start, end: e.end, kids: kids}
			if !slice && len(kids) == 2 {
				n.op = "[]"
			}
		case p.is("("):
			n = p.call(n)
		default:
			return n
		}
	}
	return n
}

// call parses call arguments after n: positional, name=value, *a, **k.
func (p *exprParser) call(n *exprNode) *exprNode {
	c, _ := p.callArgs(n)
	return c
}

// callArgs is call, also reporting whether every argument is positional.
func (p *exprParser) callArgs(n *exprNode) (*exprNode, bool) {
	p.expect("(")
	kids := []*exprNode{n}
	plain := true
	for !p.is(")") && !p.bad {
		if p.is("*") || p.is("**") {
			p.next()
			plain = false
		} else if p.peek().kind == "n" && p.pos+1 < len(p.toks) && p.toks[p.pos+1].kind == "=" {
			p.next()
			p.next()
			plain = false
		}
		kids = append(kids, p.condexpr())
		if !p.is(",") {
			break
		}
		p.next()
	}
	e := p.peek()
	p.expect(")")
	return &exprNode{start: n.start, end: e.end, kids: kids}, plain
}

// filters parses | filter and is test chains, as Jinja2's parse_filter_expr.
func (p *exprParser) filters(n *exprNode) *exprNode {
	for !p.bad {
		switch {
		case p.is("|"):
			p.next()
			t := p.next()
			if t.kind != "n" {
				p.bad = true
				return n
			}
			end := t.end
			for p.is(".") {
				p.next()
				end = p.next().end
			}
			n = &exprNode{start: n.start, end: end, kids: []*exprNode{n}}
			if p.is("(") {
				n = p.call(n)
			}
		case p.is("is"):
			p.next()
			if p.is("not") {
				p.next()
			}
			t := p.next()
			if t.kind != "n" {
				p.bad = true
				return n
			}
			end := t.end
			for p.is(".") {
				p.next()
				end = p.next().end
			}
			n = &exprNode{start: n.start, end: end, kids: []*exprNode{n}}
			next := p.peek()
			switch {
			case next.kind == "(":
				n = p.call(n)
			case (next.kind == "n" || next.kind == "s" || next.kind == "0" || next.kind == "[" || next.kind == "{") &&
				!p.is("else") && !p.is("or") && !p.is("and"):
				arg := p.postfix(p.primary())
				n = &exprNode{start: n.start, end: arg.end, kids: []*exprNode{n, arg}}
			}
		default:
			return n
		}
	}
	return n
}

// emit writes n's text with its rewritten operators.
func (n *exprNode) emit(src string, sb *strings.Builder) {
	if strings.HasPrefix(n.op, ".") {
		sb.WriteString(pyPrefix + "m_" + n.op[1:] + "(")
		for i, k := range n.kids {
			if i > 0 {
				sb.WriteString(", ")
			}
			k.emit(src, sb)
		}
		sb.WriteString(")")
		return
	}
	switch n.op {
	case "[]":
		sb.WriteString(itemName + "(")
		n.kids[0].emit(src, sb)
		sb.WriteString(", ")
		n.kids[1].emit(src, sb)
		sb.WriteString(")")
		return
	case "+", "~", "in", "not in":
		name := map[string]string{"+": addName, "~": concatName, "in": inName, "not in": inName}[n.op]
		if n.op == "not in" {
			sb.WriteString("(not ")
		}
		sb.WriteString(name + "(")
		n.kids[0].emit(src, sb)
		sb.WriteString(", ")
		n.kids[1].emit(src, sb)
		sb.WriteString(")")
		if n.op == "not in" {
			sb.WriteString(")")
		}
		return
	}
	at := n.start
	for _, k := range n.kids {
		sb.WriteString(src[at:k.start])
		k.emit(src, sb)
		at = k.end
	}
	sb.WriteString(src[at:n.end])
}

func (n *exprNode) rewrites() bool {
	if n.op != "" {
		return true
	}
	for _, k := range n.kids {
		if k.rewrites() {
			return true
		}
	}
	return false
}

// dictMethods are the dict methods templates call: Jinja2 finds x.items
// as the method even when the dict has an "items" key (a JSON schema of
// an array has one), where the engine would take the key.
var dictMethods = map[string]bool{"items": true, "keys": true, "values": true, "get": true}

// dictMethod is the callable for x.name(args) with Python's dict method.
func dictMethod(name string) func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) == 0 {
			return jinja.Undefined(), errors.New(name + ": no object")
		}
		recv, args := args[0], args[1:]
		if !recv.IsDict() {
			return jinja.Undefined(), fmt.Errorf("UndefinedError: '%s object' has no attribute '%s'", pyTypeName(recv), name)
		}
		d := recv.AsDict()
		keys := d.OrderedKeys()
		switch name {
		case "get":
			if len(args) < 1 || len(args) > 2 {
				return jinja.Undefined(), fmt.Errorf("TypeError: get expected 1 or 2 arguments, got %d", len(args))
			}
			if args[0].IsString() {
				if v, ok := d.Get(args[0].AsString()); ok {
					return v, nil
				}
			}
			if len(args) == 2 {
				return args[1], nil
			}
			return jinja.None(), nil
		}
		if len(args) != 0 {
			return jinja.Undefined(), fmt.Errorf("TypeError: %s takes no arguments (%d given)", name, len(args))
		}
		items := make([]jinja.Value, 0, len(keys))
		for _, k := range keys {
			v, _ := d.Get(k)
			switch name {
			case "items":
				items = append(items, jinja.NewList([]jinja.Value{jinja.NewString(k), v}))
			case "keys":
				items = append(items, jinja.NewString(k))
			default:
				items = append(items, v)
			}
		}
		return jinja.NewList(items), nil
	}
}

// rewriteExpr rewrites s[from:] as one expression (a tuple when tuple,
// with a trailing "if cond" when forIf), keeping s[:from]. It returns s
// unchanged when that text is not such an expression.
func rewriteExpr(s string, from int, tuple, forIf bool) string {
	toks, ok := lexExpr(s[from:])
	if !ok || len(toks) == 0 {
		return s
	}
	p := &exprParser{src: s[from:], toks: toks}
	var nodes []*exprNode
	if forIf {
		nodes = append(nodes, p.tuple(false))
		if p.is("if") {
			p.next()
			nodes = append(nodes, p.condexpr())
		}
		if p.is("recursive") {
			p.next()
		}
	} else if tuple {
		nodes = append(nodes, p.tuple(true))
	} else {
		nodes = append(nodes, p.condexpr())
	}
	if p.bad || p.pos != len(toks) {
		return s
	}
	changed := forIf // a for loop's iterable is checked
	for _, n := range nodes {
		changed = changed || n.rewrites()
	}
	if !changed {
		return s
	}
	var sb strings.Builder
	sb.WriteString(s[:from])
	at := 0
	for i, n := range nodes {
		sb.WriteString(p.src[at:n.start])
		if forIf && i == 0 {
			sb.WriteString(iterName + "((") // the iterable may be a tuple without parentheses
			n.emit(p.src, &sb)
			sb.WriteString("))")
		} else {
			n.emit(p.src, &sb)
		}
		at = n.end
	}
	sb.WriteString(p.src[at:])
	return sb.String()
}

// rewriteStatement rewrites the expressions of an if, elif, set or for
// tag's body (whitespace-control marks included).
func rewriteStatement(body string) string {
	toks, ok := lexExpr(strings.Trim(body, "-+"))
	if !ok || len(toks) < 2 || toks[0].kind != "n" {
		return body
	}
	off := len(body) - len(strings.TrimLeft(body, "-+"))
	inner := strings.Trim(body, "-+")
	word := inner[toks[0].start:toks[0].end]
	var out string
	switch word {
	case "if", "elif":
		out = rewriteExpr(inner, toks[0].end, false, false)
	case "set":
		// set target = expr (a block set has no '=')
		for i, t := range toks {
			if t.kind == "=" {
				out = rewriteExpr(inner, t.end, true, false)
				break
			}
			if i > 0 && t.kind == "|" {
				break
			}
		}
	case "for":
		for _, t := range toks[1:] {
			if t.kind == "n" && inner[t.start:t.end] == "in" {
				out = rewriteExpr(inner, t.end, false, true)
				break
			}
		}
	}
	if out == "" || out == inner {
		return body
	}
	return body[:off] + out + body[off+len(inner):]
}

// pyTypeName is Python's type name of a value, for error messages.
func pyTypeName(v jinja.Value) string {
	switch {
	case v.IsNone():
		return "NoneType"
	case v.IsBool():
		return "bool"
	case v.IsInt():
		return "int"
	case v.IsFloat():
		return "float"
	case v.IsString():
		return "str"
	case v.IsList():
		return "list"
	case v.IsDict():
		return "dict"
	case v.IsUndefined():
		return "Undefined"
	}
	return "function"
}

func pyNumber(v jinja.Value) (float64, bool, bool) { // value, is a number, is a float
	switch {
	case v.IsBool():
		if v.AsBool() {
			return 1, true, false
		}
		return 0, true, false
	case v.IsInt():
		return float64(v.AsInt()), true, false
	case v.IsFloat():
		return v.AsFloat(), true, true
	}
	return 0, false, false
}

// pyAdd is Python's a + b on template values.
func pyAdd(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("add takes two values")
	}
	a, b := args[0], args[1]
	if a.IsUndefined() || b.IsUndefined() {
		return jinja.Undefined(), errors.New("UndefinedError: an undefined value in +")
	}
	switch {
	case a.IsString() && b.IsString():
		return jinja.NewString(a.AsString() + b.AsString()), nil
	case a.IsList() && b.IsList():
		items := make([]jinja.Value, 0, a.AsList().Len()+b.AsList().Len())
		items = append(append(items, a.AsList().Items...), b.AsList().Items...)
		return jinja.NewList(items), nil
	}
	x, xn, xf := pyNumber(a)
	y, yn, yf := pyNumber(b)
	if xn && yn {
		if xf || yf {
			return jinja.NewFloat(x + y), nil
		}
		ai, bi := int64(x), int64(y)
		if a.IsInt() {
			ai = a.AsInt()
		}
		if b.IsInt() {
			bi = b.AsInt()
		}
		return jinja.NewInt(ai + bi), nil
	}
	if a.IsString() || a.IsList() {
		return jinja.Undefined(), fmt.Errorf("TypeError: can only concatenate %s (not %q) to %s", pyTypeName(a), pyTypeName(b), pyTypeName(a))
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: unsupported operand type(s) for +: '%s' and '%s'", pyTypeName(a), pyTypeName(b))
}

// pyConcat is Jinja2's a ~ b: str(a) + str(b).
func pyConcat(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("concat takes two values")
	}
	a, err := pyStr(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	b, err := pyStr(args[1])
	return jinja.NewString(a + b), err
}

// pyGetitem is Jinja2's x[k] (Environment.getitem): a string indexed by
// an int (a bool is one) gives that character, a list by an int that
// item, a dict by a key its value; any other subscript, and an index out
// of range or a missing key, gives Undefined, which raises only where it
// is used (+, iterating, ...). Subscripting Undefined raises, as
// Jinja2's Undefined does. (Jinja2 also falls back to an attribute of
// that name, d['items'] being the method where d has no such key; no
// template relies on it.)
func pyGetitem(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("getitem takes two values")
	}
	x, k := args[0], args[1]
	index := func(n int) (int, bool) {
		var i int64
		switch {
		case k.IsInt():
			i = k.AsInt()
		case k.IsBool():
			if k.AsBool() {
				i = 1
			}
		default:
			return 0, false
		}
		if i < 0 {
			i += int64(n)
		}
		return int(i), i >= 0 && i < int64(n)
	}
	switch {
	case x.IsUndefined():
		return jinja.Undefined(), fmt.Errorf("UndefinedError: an undefined value subscripted with %s", pyTypeName(k))
	case x.IsString():
		r := []rune(x.AsString())
		if i, ok := index(len(r)); ok {
			return jinja.NewString(string(r[i])), nil
		}
	case x.IsList():
		l := x.AsList()
		if i, ok := index(l.Len()); ok {
			return l.Get(i), nil
		}
	case x.IsDict():
		// the engine keeps a dict's keys as strings ({1: 'a'} included)
		var key string
		switch {
		case k.IsString():
			key = k.AsString()
		case k.IsInt():
			key = fmt.Sprint(k.AsInt())
		default:
			return jinja.Undefined(), nil
		}
		if v, ok := x.AsDict().Get(key); ok {
			return v, nil
		}
	}
	return jinja.Undefined(), nil
}

// pyIn is Python's a in b.
func pyIn(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 2 {
		return jinja.Undefined(), errors.New("in takes two values")
	}
	a, b := args[0], args[1]
	switch {
	case b.IsString():
		if !a.IsString() {
			return jinja.Undefined(), fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", pyTypeName(a))
		}
		return jinja.NewBool(strings.Contains(b.AsString(), a.AsString())), nil
	case b.IsList():
		for _, x := range b.AsList().Items {
			if pyEqual(x, a) {
				return jinja.NewBool(true), nil
			}
		}
		return jinja.NewBool(false), nil
	case b.IsDict():
		return jinja.NewBool(a.IsString() && b.AsDict().Has(a.AsString())), nil
	case b.IsUndefined():
		return jinja.NewBool(false), nil // Jinja2's Undefined iterates as empty
	}
	return jinja.Undefined(), fmt.Errorf("TypeError: argument of type '%s' is not iterable", pyTypeName(b))
}

// pyEqual is Python's == on template values.
func pyEqual(a, b jinja.Value) bool {
	x, xn, _ := pyNumber(a)
	y, yn, _ := pyNumber(b)
	switch {
	case xn || yn:
		return xn && yn && x == y
	case a.IsList() && b.IsList():
		if a.AsList().Len() != b.AsList().Len() {
			return false
		}
		for i := range a.AsList().Items {
			if !pyEqual(a.AsList().Items[i], b.AsList().Items[i]) {
				return false
			}
		}
		return true
	case a.IsDict() && b.IsDict():
		da, db := a.AsDict(), b.AsDict()
		if da.Len() != db.Len() {
			return false
		}
		for _, k := range da.Keys {
			x, _ := da.Get(k)
			y, ok := db.Get(k)
			if !ok || !pyEqual(x, y) {
				return false
			}
		}
		return true
	}
	return a.Equals(b)
}
