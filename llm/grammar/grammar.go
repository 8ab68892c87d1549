// Package grammar constrains a language model's sampling to JSON text: a
// JSON schema (or "any JSON object") is compiled into a pushdown
// automaton over bytes, and at each step every token of the vocabulary
// whose text would take the automaton out of its language is masked, so
// the finished text is JSON that the schema accepts, whatever the model's
// weights.
//
// CompileSchema and JSONObject build a Grammar; a Matcher is one
// generation's state (Advance it by each token's text); an Index is a
// vocabulary arranged as a trie so that Matcher.Mask walks each shared
// prefix once and skips a whole subtree at its first invalid byte. Mask
// also keeps the text finishable within a token budget: a token is
// allowed only if the shortest completion after it still fits in the
// tokens left, so a generation ends with a complete value, not one cut
// off at max_tokens.
//
// Objects are written with their schema's properties in the order
// listed (optional ones may be left out; additional properties are never
// generated), numbers with at most 15 digits before and after the point
// and a two-digit exponent (so every number fits a float64), a number
// with a range (minimum, maximum, exclusive ones) or a whole multipleOf as
// an integer of at most 9 digits in the range and a multiple of it, whitespace
// between tokens in runs of at most 40 spaces or tabs and one newline,
// and a string with a pattern only with printable ASCII characters that
// need no escape (its pattern compiled to a DFA over them: regex.go).
package grammar

import (
	"errors"
)

type kind uint8

const (
	kObject kind = iota
	kArray
	kString
	kNumber
	kLiteral
	kAnyOf
)

const (
	inf       = int64(1) << 40
	maxWS     = 40
	wsNewline = 0x80 // frame.ws: the run has its newline
	wsCount   = 0x7f
	maxInt    = 15 // digits before the point
	maxFrac   = 15
	maxExp    = 2
	maxTops   = 16 // alternative stacks kept (anyOf)
	wsChars   = " \t\n\r"
	noneFound = -1
)

// Grammar is a compiled schema. It is read-only: many Matchers may use
// it at once.
type Grammar struct {
	nodes          []node
	root           int32
	keyStr         int32 // the string node of a generic object's keys
	prefix, suffix []byte
	maxGrow        int64 // bound on the growth of the shortest completion per byte
}

type node struct {
	kind    kind
	integer bool
	// bounded: an integer in [lo, hi] (both within ±maxBounded)
	bounded bool
	lo, hi  int64
	mult    int64 // a bounded integer: a multiple of it (0: any)
	// object: props in order; generic objects (no props) take any key
	// with an addl value (-1: none, only {})
	props   []prop
	addl    int32
	nextReq []int32 // nextReq[i]: the first required property at index >= i, len(props) if none
	// restAfter[a+1]: the shortest completion after property a is
	// written (a = -1: none yet, which is the object's opening state);
	// restComma[a+1]: after a and a comma
	restAfter, restComma []int64
	// array items; array items or string characters, maxN -1: no bound
	items      int32
	minN, maxN int32
	lit        *litTrie
	alts       []int32
	min        int64 // the shortest text of a value (inf: none)
	// re: a string's pattern (frame a: the DFA state)
	re *reDFA
}

type prop struct {
	key      []byte // JSON-quoted
	value    int32
	required bool
}

// frame states
const (
	// root (node -1)
	rPre uint8 = iota
	rValue
	rSuf
	rDone
)

const (
	oOpen uint8 = iota
	oKey
	oColon
	oValue
	oAfter
	oComma
)

const (
	aOpen uint8 = iota
	aAfter
	aComma
)

const (
	sIn uint8 = iota
	sEsc
	sHex
	sU8
)

const (
	nMinus uint8 = iota
	nZero
	nInt
	nDot
	nFrac
	nE
	nESign
	nExp
)

// frame is one level of the automaton's stack. Frames are immutable once
// pushed: a step pushes new frames that share their parents, so a state
// is the index of its top frame and copying it costs nothing.
type frame struct {
	parent  int32 // -1 below the root
	node    int32 // -1: the root
	st      uint8
	ws      uint8 // whitespace bytes in the current run
	a, b, c int32
	// object: a the last property written (-1 none), b the property
	// whose key is being matched or was, c the key bytes matched;
	// array: a the items begun; string: a the characters, b the bytes
	// pending (escape or UTF-8), c the range of the next UTF-8 byte
	// (lo<<8|hi); number: a the digits of the current part; literal: a
	// the trie node; root: a the prefix or suffix bytes matched
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// finish computes the shortest texts and the completion tables and
// refuses a grammar with no value or with a reference loop that consumes
// nothing.
func (g *Grammar) finish() error {
	ns := g.nodes
	for i := range ns {
		ns[i].min = inf
	}
	for range len(ns) + 2 {
		changed := false
		for i := range ns {
			if m := g.minOf(&ns[i]); m < ns[i].min {
				ns[i].min, changed = m, true
			}
		}
		if !changed {
			break
		}
	}
	// anyOf edges consume nothing: a cycle among them would never end
	color := make([]uint8, len(ns))
	var visit func(i int32) bool
	visit = func(i int32) bool {
		if ns[i].kind != kAnyOf {
			return true
		}
		switch color[i] {
		case 1:
			return false
		case 2:
			return true
		}
		color[i] = 1
		for _, a := range ns[i].alts {
			if !visit(a) {
				return false
			}
		}
		color[i] = 2
		return true
	}
	for i := range ns {
		if !visit(int32(i)) {
			return errors.New("grammar: the schema refers to itself without consuming input (a $ref or anyOf loop)")
		}
	}
	if ns[g.root].min >= inf {
		return errors.New("grammar: no JSON value satisfies the schema")
	}
	var maxMin, maxKey, maxLit int64
	for i := range ns {
		n := &ns[i]
		if n.min < inf {
			maxMin = max(maxMin, n.min)
		}
		if n.lit != nil {
			maxLit = max(maxLit, int64(n.lit.maxLen))
		}
		if n.re != nil { // a byte may move a pattern's DFA that much further from the end
			maxMin = max(maxMin, n.re.maxDist+2)
		}
		if n.kind != kObject || len(n.props) == 0 {
			continue
		}
		np := len(n.props)
		n.nextReq = make([]int32, np+1)
		n.nextReq[np] = int32(np)
		for j := np - 1; j >= 0; j-- {
			n.nextReq[j] = n.nextReq[j+1]
			if n.props[j].required {
				n.nextReq[j] = int32(j)
			}
			maxKey = max(maxKey, int64(len(n.props[j].key)))
		}
		// restAfter[a+1]: a comma and each required property after a, then }
		n.restAfter = make([]int64, np+1)
		n.restAfter[np] = 1
		for a := np - 2; a >= -1; a-- {
			r := n.restAfter[a+2]
			if p := n.props[a+1]; p.required {
				r = sat(r + 1 + g.propLen(p))
			}
			n.restAfter[a+1] = r
		}
		n.restComma = make([]int64, np+1)
		for a := -1; a < np; a++ {
			best := inf
			for j := a + 1; j <= g.limit(n, int32(a)); j++ {
				if g.nodes[n.props[j].value].min < inf {
					best = min(best, sat(g.propLen(n.props[j])+n.restAfter[j+1]))
				}
			}
			n.restComma[a+1] = best
		}
	}
	g.maxGrow = maxMin + maxKey + maxLit + 16
	return nil
}

func sat(x int64) int64 { return min(x, inf) }

func (g *Grammar) propLen(p prop) int64 { return sat(int64(len(p.key)) + 1 + g.nodes[p.value].min) }

// limit is the last property that may follow property a: the first
// required one after it, else the last.
func (g *Grammar) limit(n *node, a int32) int {
	r := int(n.nextReq[a+1])
	if r == len(n.props) {
		return r - 1
	}
	return r
}

func (g *Grammar) minOf(n *node) int64 {
	switch n.kind {
	case kObject:
		if len(n.props) == 0 {
			return 2
		}
		m, req := int64(2), int64(0)
		for _, p := range n.props {
			if p.required {
				m = sat(m + g.propLen(p))
				req++
			}
		}
		if req > 1 {
			m = sat(m + req - 1)
		}
		return m
	case kArray:
		if n.maxN >= 0 && n.minN > n.maxN {
			return inf
		}
		if n.minN == 0 {
			return 2
		}
		it := g.nodes[n.items].min
		return sat(2 + int64(n.minN)*it + int64(n.minN) - 1)
	case kString:
		if n.re != nil {
			return sat(2 + n.re.dist[n.re.start])
		}
		if n.maxN >= 0 && n.minN > n.maxN {
			return inf
		}
		return 2 + int64(n.minN)
	case kNumber:
		if !n.bounded {
			return 1
		}
		best := n.digitsToRange(frame{st: nMinus, c: 1})
		for d := range int32(10) {
			best = min(best, n.digitsToRange(frame{st: nInt, a: 1, b: d}))
		}
		return sat(best + 1)
	case kLiteral:
		return int64(n.lit.dist[0])
	}
	m := inf
	for _, a := range n.alts {
		m = min(m, g.nodes[a].min)
	}
	return m
}

// walker steps frames in an arena that grows as frames are pushed.
type walker struct {
	g  *Grammar
	ar []frame
}

func (w *walker) push(f frame) int32 {
	w.ar = append(w.ar, f)
	return int32(len(w.ar) - 1)
}

// start begins a value of node id with its first byte c above parent,
// appending the resulting tops to out.
func (w *walker) start(parent, id int32, c byte, out []int32) []int32 {
	n := &w.g.nodes[id]
	if n.min >= inf {
		return out
	}
	f := frame{parent: parent, node: id}
	switch n.kind {
	case kAnyOf:
		for _, a := range n.alts {
			out = w.start(parent, a, c, out)
		}
	case kObject:
		if c == '{' {
			f.st, f.a = oOpen, -1
			out = append(out, w.push(f))
		}
	case kArray:
		if c == '[' {
			f.st = aOpen
			out = append(out, w.push(f))
		}
	case kString:
		if c == '"' {
			f.st = sIn
			if n.re != nil {
				f.a = n.re.start
			}
			out = append(out, w.push(f))
		}
	case kNumber:
		switch {
		case c == '-':
			f.st, f.c = nMinus, 1
		case c == '0':
			f.st, f.a = nZero, 1
		case c >= '1' && c <= '9':
			f.st, f.a, f.b = nInt, 1, int32(c-'0')
		default:
			return out
		}
		if n.bounded && n.digitsToRange(f) >= inf {
			return out
		}
		out = append(out, w.push(f))
	case kLiteral:
		if k := n.lit.next(0, c); k >= 0 {
			f.a = k
			out = append(out, w.push(f))
		}
	}
	return out
}

// ws steps a whitespace byte that f's state allows: a run holds at most
// maxWS spaces and tabs and one newline (no carriage return).
func (w *walker) ws(f frame, c byte, out []int32) []int32 {
	switch {
	case f.ws&wsCount >= maxWS, c == '\r':
		return out
	case c == '\n':
		if f.ws&wsNewline != 0 {
			return out
		}
		f.ws |= wsNewline
	}
	f.ws++
	return append(out, w.push(f))
}

// step feeds byte c to the state whose top frame is top.
func (w *walker) step(top int32, c byte, out []int32) []int32 {
	f := w.ar[top]
	if f.node < 0 {
		return w.stepRoot(f, c, out)
	}
	n := &w.g.nodes[f.node]
	switch n.kind {
	case kObject:
		return w.stepObject(n, f, c, out)
	case kArray:
		return w.stepArray(n, f, c, out)
	case kString:
		return w.stepString(n, f, c, out)
	case kNumber:
		return w.stepNumber(n, f, c, out)
	case kLiteral:
		if k := n.lit.next(f.a, c); k >= 0 {
			f.a = k
			return append(out, w.push(f))
		}
		if n.lit.term[f.a] {
			return w.step(f.parent, c, out)
		}
	}
	return out
}

func (w *walker) stepRoot(f frame, c byte, out []int32) []int32 {
	g := w.g
	switch f.st {
	case rPre:
		if f.a == 0 && isWS(c) {
			return w.ws(f, c, out)
		}
		if c == g.prefix[f.a] {
			f.a++
			f.ws = 0
			if int(f.a) == len(g.prefix) {
				f.st, f.a = rValue, 0
			}
			return append(out, w.push(f))
		}
	case rValue:
		if isWS(c) {
			return w.ws(f, c, out)
		}
		f.st, f.ws, f.a = rSuf, 0, 0
		if len(g.suffix) == 0 {
			f.st = rDone
		}
		return w.start(w.push(f), g.root, c, out)
	case rSuf:
		if f.a == 0 && isWS(c) {
			return w.ws(f, c, out)
		}
		if c == g.suffix[f.a] {
			f.a++
			f.ws = 0
			if int(f.a) == len(g.suffix) {
				f.st = rDone
			}
			return append(out, w.push(f))
		}
	}
	return out
}

// candidate is the first property from j up to the limit after a whose
// key continues the k bytes matched (those of property like) with c.
func (w *walker) candidate(n *node, a, like, k int32, c byte) int32 {
	key := n.props[like].key[:k]
	for j := like; j <= int32(w.g.limit(n, a)); j++ {
		p := n.props[j]
		if w.g.nodes[p.value].min >= inf || len(p.key) <= int(k) || p.key[k] != c {
			continue
		}
		if j == like || string(p.key[:k]) == string(key) {
			return j
		}
	}
	return noneFound
}

func (w *walker) stepObject(n *node, f frame, c byte, out []int32) []int32 {
	generic := len(n.props) == 0
	switch f.st {
	case oOpen, oComma:
		if isWS(c) {
			return w.ws(f, c, out)
		}
		f.ws = 0
		if c == '}' && f.st == oOpen && (generic || n.nextReq[0] == int32(len(n.props))) {
			return append(out, f.parent)
		}
		if c != '"' {
			return out
		}
		if generic {
			if n.addl < 0 || w.g.nodes[n.addl].min >= inf {
				return out
			}
			f.st = oColon
			p := w.push(f)
			return append(out, w.push(frame{parent: p, node: w.g.keyStr, st: sIn}))
		}
		if int(f.a)+1 >= len(n.props) {
			return out
		}
		j := w.candidate(n, f.a, f.a+1, 0, '"')
		if j < 0 {
			return out
		}
		f.st, f.b, f.c = oKey, j, 1
		return append(out, w.push(f))
	case oKey:
		j := w.candidate(n, f.a, f.b, f.c, c)
		if j < 0 {
			return out
		}
		f.b, f.c = j, f.c+1
		if int(f.c) == len(n.props[j].key) {
			f.st = oColon
		}
		return append(out, w.push(f))
	case oColon:
		if isWS(c) {
			return w.ws(f, c, out)
		}
		if c == ':' {
			f.st, f.ws = oValue, 0
			return append(out, w.push(f))
		}
	case oValue:
		if isWS(c) {
			return w.ws(f, c, out)
		}
		v := n.addl
		if !generic {
			v, f.a = n.props[f.b].value, f.b
		}
		f.st, f.ws = oAfter, 0
		return w.start(w.push(f), v, c, out)
	case oAfter:
		if isWS(c) {
			return w.ws(f, c, out)
		}
		f.ws = 0
		switch c {
		case ',':
			if generic || n.restComma[f.a+1] < inf {
				f.st = oComma
				return append(out, w.push(f))
			}
		case '}':
			if generic || n.nextReq[f.a+1] == int32(len(n.props)) {
				return append(out, f.parent)
			}
		}
	}
	return out
}

func (w *walker) stepArray(n *node, f frame, c byte, out []int32) []int32 {
	if isWS(c) {
		return w.ws(f, c, out)
	}
	f.ws = 0
	switch f.st {
	case aOpen, aComma:
		if c == ']' && f.st == aOpen && n.minN == 0 {
			return append(out, f.parent)
		}
		if n.maxN >= 0 && f.a >= n.maxN {
			return out
		}
		f.st = aAfter
		f.a++
		return w.start(w.push(f), n.items, c, out)
	case aAfter:
		if c == ',' && (n.maxN < 0 || f.a < n.maxN) && w.g.nodes[n.items].min < inf {
			f.st = aComma
			return append(out, w.push(f))
		}
		if c == ']' && f.a >= n.minN {
			return append(out, f.parent)
		}
	}
	return out
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func (w *walker) stepString(n *node, f frame, c byte, out []int32) []int32 {
	if re := n.re; re != nil { // only writable bytes, unescaped: the DFA's
		if c == '"' {
			if re.dist[f.a] == 0 {
				return append(out, f.parent)
			}
			return out
		}
		if t := re.next[int(f.a)*256+int(c)]; t >= 0 {
			f.a = t
			return append(out, w.push(f))
		}
		return out
	}
	room := n.maxN < 0 || f.a < n.maxN
	switch f.st {
	case sIn:
		switch {
		case c == '"':
			if f.a >= n.minN {
				return append(out, f.parent)
			}
			return out
		case c < 0x20 || !room:
			return out
		case c == '\\':
			f.st, f.a = sEsc, f.a+1
		case c < 0x80:
			f.a++
		case c >= 0xC2 && c <= 0xDF:
			f.st, f.a, f.b, f.c = sU8, f.a+1, 1, 0x80BF
		case c >= 0xE0 && c <= 0xEF:
			f.st, f.a, f.b, f.c = sU8, f.a+1, 2, 0x80BF
			if c == 0xE0 {
				f.c = 0xA0BF
			} else if c == 0xED {
				f.c = 0x809F
			}
		case c >= 0xF0 && c <= 0xF4:
			f.st, f.a, f.b, f.c = sU8, f.a+1, 3, 0x80BF
			if c == 0xF0 {
				f.c = 0x90BF
			} else if c == 0xF4 {
				f.c = 0x808F
			}
		default:
			return out
		}
	case sEsc:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.st = sIn
		case 'u':
			f.st, f.b = sHex, 4
		default:
			return out
		}
	case sHex:
		if !isHex(c) {
			return out
		}
		if f.b--; f.b == 0 {
			f.st = sIn
		}
	case sU8:
		if c < byte(f.c>>8) || c > byte(f.c) {
			return out
		}
		f.c = 0x80BF
		if f.b--; f.b == 0 {
			f.st = sIn
		}
	}
	return append(out, w.push(f))
}

func (w *walker) stepNumber(n *node, f frame, c byte, out []int32) []int32 {
	digit := c >= '0' && c <= '9'
	next := func(st uint8, a int32) []int32 {
		f.st, f.a = st, a
		return append(out, w.push(f))
	}
	if n.bounded {
		// an integer in [lo, hi]: a digit only while a value in range
		// still begins so; the end only in range
		if digit && (f.st == nMinus || f.st == nInt && f.a < maxBoundedDigits) {
			g := f
			g.st, g.a, g.b = nInt, f.a+1, f.b*10+int32(c-'0')
			if f.st == nMinus && c == '0' {
				g.st = nZero
			}
			if n.digitsToRange(g) < inf {
				return append(out, w.push(g))
			}
			return out
		}
		if f.st == nMinus || digit || n.digitsToRange(f) != 0 {
			return out
		}
		return w.step(f.parent, c, out)
	}
	switch f.st {
	case nMinus:
		if c == '0' {
			return next(nZero, 0)
		}
		if digit {
			return next(nInt, 1)
		}
		return out
	case nZero, nInt:
		switch {
		case digit && f.st == nInt && f.a < maxInt:
			return next(nInt, f.a+1)
		case c == '.' && !n.integer:
			return next(nDot, 0)
		case (c == 'e' || c == 'E') && !n.integer:
			return next(nE, 0)
		}
	case nDot:
		if digit {
			return next(nFrac, 1)
		}
		return out
	case nFrac:
		switch {
		case digit && f.a < maxFrac:
			return next(nFrac, f.a+1)
		case c == 'e' || c == 'E':
			return next(nE, 0)
		}
	case nE:
		if c == '+' || c == '-' {
			return next(nESign, 0)
		}
		if digit {
			return next(nExp, 1)
		}
		return out
	case nESign:
		if digit {
			return next(nExp, 1)
		}
		return out
	case nExp:
		if digit && f.a < maxExp {
			return next(nExp, f.a+1)
		}
	}
	// a complete number ends: c belongs to what follows it
	if digit || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' {
		return out
	}
	return w.step(f.parent, c, out)
}

// complete reports whether the value of frame f is a whole number or
// literal that may end here.
func (w *walker) complete(f frame) bool {
	if f.node < 0 {
		return false
	}
	n := &w.g.nodes[f.node]
	switch n.kind {
	case kNumber:
		if n.bounded {
			return f.st != nMinus && n.digitsToRange(f) == 0
		}
		return f.st == nZero || f.st == nInt || f.st == nFrac || f.st == nExp
	case kLiteral:
		return n.lit.term[f.a]
	}
	return false
}

// fits reports whether [lo, hi] holds a value the node takes: any, or a
// multiple of n.mult.
func (n *node) fits(lo, hi int64) bool {
	if lo > hi {
		return false
	}
	if n.mult <= 1 {
		return true
	}
	m := lo / n.mult // toward zero: m·mult >= lo for lo < 0
	if m*n.mult < lo {
		m++
	}
	return m*n.mult <= hi
}

// maxBoundedDigits: a bounded integer has at most 9 digits (it fits an
// int32 frame field).
const (
	maxBoundedDigits = 9
	maxBounded       = 999999999
)

// digitsToRange is the fewest digits that extend the integer being
// written in frame f (sign f.c, f.a digits so far of value f.b) to a
// value in [lo, hi]; 0 when it is in range; inf when none can.
func (n *node) digitsToRange(f frame) int64 {
	// (the values that extend it by e digits, intersected with the range,
	// must hold a multiple of n.mult)
	neg, q, k := f.c == 1, int64(f.b), int(f.a)
	if f.st == nMinus {
		k = 0
	}
	p := int64(1)
	for e := 0; k+e <= maxBoundedDigits; e, p = e+1, p*10 {
		if k == 0 && e == 0 {
			continue
		}
		if k == 1 && q == 0 && e > 0 {
			break // after a leading 0 nothing follows
		}
		lo, hi := q*p, q*p+p-1
		if k == 0 {
			lo = p / 10
			if e == 1 {
				lo = 0
			}
		}
		if neg {
			lo, hi = -hi, -lo
		}
		if n.fits(max(lo, n.lo), min(hi, n.hi)) {
			return int64(e)
		}
	}
	return inf
}

// canEnd reports whether the text may end in the state top.
func (w *walker) canEnd(top int32) bool {
	for top >= 0 {
		f := w.ar[top]
		if f.node < 0 {
			return f.st == rDone
		}
		if !w.complete(f) {
			return false
		}
		top = f.parent
	}
	return false
}

// rest is the fewest bytes that complete the text from the state top.
func (w *walker) rest(top int32) int64 {
	var r int64
	for top >= 0 {
		r = sat(r + w.frameRest(w.ar[top]))
		top = w.ar[top].parent
	}
	return r
}

// frameRest is the fewest bytes that finish frame f's value once the
// frames above it are finished.
func (w *walker) frameRest(f frame) int64 {
	g := w.g
	if f.node < 0 {
		suf := int64(len(g.suffix))
		switch f.st {
		case rPre:
			return sat(int64(len(g.prefix)-int(f.a)) + g.nodes[g.root].min + suf)
		case rValue:
			return sat(g.nodes[g.root].min + suf)
		case rSuf:
			return suf - int64(f.a)
		}
		return 0
	}
	n := &g.nodes[f.node]
	switch n.kind {
	case kObject:
		if len(n.props) == 0 {
			am := int64(0)
			if n.addl >= 0 {
				am = g.nodes[n.addl].min
			}
			switch f.st {
			case oOpen, oAfter:
				return 1
			case oColon:
				return sat(am + 2)
			case oValue:
				return sat(am + 1)
			}
			return sat(am + 4) // oComma: "":v}
		}
		switch f.st {
		case oOpen:
			r := n.restAfter[0]
			if r > 1 {
				r-- // no comma before the first property
			}
			return r
		case oAfter:
			return n.restAfter[f.a+1]
		case oComma:
			return n.restComma[f.a+1]
		case oColon, oValue:
			r := sat(g.nodes[n.props[f.b].value].min + n.restAfter[f.b+1])
			if f.st == oColon {
				r++
			}
			return r
		}
		// oKey: the cheapest property the key may still become
		best := inf
		key := n.props[f.b].key[:f.c]
		for j := f.b; j <= int32(g.limit(n, f.a)); j++ {
			p := n.props[j]
			if len(p.key) >= int(f.c) && string(p.key[:f.c]) == string(key) && g.nodes[p.value].min < inf {
				best = min(best, sat(int64(len(p.key)-int(f.c))+1+g.nodes[p.value].min+n.restAfter[j+1]))
			}
		}
		return best
	case kArray:
		it := g.nodes[n.items].min
		more := func(done int32) int64 { // the items still needed after done, with commas, then ]
			k := int64(max(0, n.minN-done))
			return sat(k*sat(it+1) + 1)
		}
		switch f.st {
		case aOpen:
			if n.minN == 0 {
				return 1
			}
			return sat(more(0) - 1)
		case aAfter:
			return more(f.a)
		}
		return sat(it + more(f.a+1))
	case kString:
		if n.re != nil {
			return sat(n.re.dist[f.a] + 1)
		}
		r := int64(max(0, n.minN-f.a)) + 1
		switch f.st {
		case sEsc:
			r++
		case sHex, sU8:
			r += int64(f.b)
		}
		return r
	case kNumber:
		if n.bounded {
			return n.digitsToRange(f)
		}
		switch f.st {
		case nMinus, nDot, nE, nESign:
			return 1
		}
		return 0
	case kLiteral:
		return int64(n.lit.dist[f.a])
	}
	return 0
}
