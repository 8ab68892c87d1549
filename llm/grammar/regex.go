package grammar

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// JSON schema "pattern": an ECMA-262 regular expression the string must
// match somewhere (unanchored unless it says ^ or $), compiled to a DFA
// over the bytes of the string's JSON text.
//
// Soundness comes first: the grammar writes a pattern-constrained string
// only with characters that need no escape in JSON — printable ASCII but
// the quote and the backslash — so its JSON text is its value, byte for
// byte, and the DFA runs on that text. Every string written matches the
// pattern; a string the pattern accepts that needs other characters is
// never written (a pattern only such strings match is refused as
// unsatisfiable). `.`, negated classes and \D \W \S stand for the
// characters of that alphabet they match. The syntax implemented:
// literals, escapes of punctuation, \d \w \s and their negations, \t \n
// \r \f \v (control characters: never written), classes with ranges and
// negation, groups (capturing and (?:...)), alternation, the quantifiers
// * + ? {n} {n,} {n,m} (lazy forms too: they do not change what
// matches), and ^ and $ at the start and end of a top-level
// alternative. Anything else — lookaround, backreferences, word
// boundaries, \x \u \p escapes, non-ASCII characters, anchors elsewhere
// — is refused.

const (
	maxRegexLen  = 1000 // bytes of a pattern
	maxNFAStates = 20000
	maxDFAStates = 4000
	maxRepeat    = 1000 // the bound of {n,m}
	maxRegexWork = 3_000_000
)

// reDFA is a compiled pattern.
type reDFA struct {
	next    []int32 // state*256+byte: the next state, -1 none (dead or not allowed)
	dist    []int64 // the fewest bytes to an accepting state (0: accepting)
	start   int32
	maxDist int64 // the largest finite dist
}

// writable reports whether the grammar writes byte c in a pattern
// string: printable ASCII but the quote and the backslash.
func writable(c int) bool { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' }

type reOp uint8

const (
	reSet reOp = iota // one character of set
	reCat
	reAlt
	reRep // subs[0] repeated min..max times (max -1: unbounded)
	reBOL
	reEOL
)

type reNode struct {
	op       reOp
	set      *[256]bool
	subs     []*reNode
	min, max int
}

type reParser struct {
	s string
	i int
}

func (p *reParser) errorf(format string, a ...any) error {
	return fmt.Errorf("pattern %q at offset %d: %s", p.s, p.i, fmt.Sprintf(format, a...))
}

func (p *reParser) more() bool { return p.i < len(p.s) }

func (p *reParser) alt(depth int) (*reNode, error) {
	if depth > 50 {
		return nil, p.errorf("groups nested too deep")
	}
	var alts []*reNode
	for {
		c, err := p.cat(depth)
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if p.more() && p.s[p.i] == '|' {
			p.i++
			continue
		}
		break
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{op: reAlt, subs: alts}, nil
}

func (p *reParser) cat(depth int) (*reNode, error) {
	n := &reNode{op: reCat}
	for p.more() && p.s[p.i] != '|' && p.s[p.i] != ')' {
		a, err := p.atom(depth)
		if err != nil {
			return nil, err
		}
		if a, err = p.quant(a); err != nil {
			return nil, err
		}
		n.subs = append(n.subs, a)
	}
	return n, nil
}

// number reads decimal digits (at most maxRepeat), or -1 when none.
func (p *reParser) number() (int, error) {
	j := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if j == p.i {
		return -1, nil
	}
	if p.i-j > 1 && p.s[j] == '0' {
		// ECMA reads {00} as {0}, other dialects as the text "{00}"
		return 0, p.errorf("a repetition bound with a leading zero")
	}
	v, err := strconv.Atoi(p.s[j:p.i])
	if err != nil || v > maxRepeat {
		return 0, p.errorf("a repetition bound over %d", maxRepeat)
	}
	return v, nil
}

func (p *reParser) quant(a *reNode) (*reNode, error) {
	if !p.more() {
		return a, nil
	}
	lo, hi := 0, 0
	switch p.s[p.i] {
	case '*':
		lo, hi = 0, -1
		p.i++
	case '+':
		lo, hi = 1, -1
		p.i++
	case '?':
		lo, hi = 0, 1
		p.i++
	case '{':
		p.i++
		var err error
		if lo, err = p.number(); err != nil {
			return nil, err
		}
		if lo < 0 {
			return nil, p.errorf("a { that does not start a repetition {n}, {n,} or {n,m}")
		}
		hi = lo
		if p.more() && p.s[p.i] == ',' {
			p.i++
			if hi, err = p.number(); err != nil {
				return nil, err
			}
		}
		if !p.more() || p.s[p.i] != '}' {
			return nil, p.errorf("an unterminated repetition")
		}
		p.i++
		if hi >= 0 && hi < lo {
			return nil, p.errorf("a repetition {%d,%d} out of order", lo, hi)
		}
	default:
		return a, nil
	}
	if a.op == reBOL || a.op == reEOL {
		return nil, p.errorf("a quantified anchor")
	}
	if p.more() && p.s[p.i] == '?' {
		p.i++ // lazy: the same strings match
	}
	if p.more() && strings.IndexByte("*+?{", p.s[p.i]) >= 0 {
		return nil, p.errorf("a quantifier after a quantifier")
	}
	return &reNode{op: reRep, subs: []*reNode{a}, min: lo, max: hi}, nil
}

func setOf(f func(c int) bool) *[256]bool {
	var s [256]bool
	for c := range 256 {
		s[c] = f(c)
	}
	return &s
}

func isDigit(c int) bool { return c >= '0' && c <= '9' }
func isWord(c int) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
func isSpace(c int) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// escape reads the escape after a backslash: a set of characters.
func (p *reParser) escape(inClass bool) (*[256]bool, error) {
	if !p.more() {
		return nil, p.errorf("a pattern ending in a backslash")
	}
	c := p.s[p.i]
	p.i++
	switch c {
	case 'd':
		return setOf(isDigit), nil
	case 'D':
		return setOf(func(c int) bool { return !isDigit(c) }), nil
	case 'w':
		return setOf(isWord), nil
	case 'W':
		return setOf(func(c int) bool { return !isWord(c) }), nil
	case 's':
		return setOf(isSpace), nil
	case 'S':
		// ECMA's \s also holds non-ASCII spaces, which are never written
		return setOf(func(c int) bool { return c < 0x80 && !isSpace(c) }), nil
	case 't', 'n', 'r', 'f', 'v':
		x := map[byte]int{'t': '\t', 'n': '\n', 'r': '\r', 'f': '\f', 'v': '\v'}[c]
		return setOf(func(c int) bool { return c == x }), nil
	}
	if c == 'b' && inClass {
		return setOf(func(c int) bool { return c == 8 }), nil
	}
	if c < 0x80 && !isWord(int(c)) && c >= 0x20 {
		return setOf(func(x int) bool { return x == int(c) }), nil // punctuation stands for itself
	}
	p.i--
	return nil, p.errorf("the escape \\%c is not supported", c)
}

func (p *reParser) class() (*[256]bool, error) {
	neg := false
	if p.more() && p.s[p.i] == '^' {
		neg = true
		p.i++
	}
	var set [256]bool
	// single reads one class member: a character (c >= 0) or a set
	single := func() (int, *[256]bool, error) {
		c := p.s[p.i]
		if c >= 0x80 {
			return 0, nil, p.errorf("a non-ASCII character")
		}
		p.i++
		if c == '\\' {
			s, err := p.escape(true)
			if err != nil {
				return 0, nil, err
			}
			n, one := 0, -1
			for x := range 256 {
				if s[x] {
					n, one = n+1, x
				}
			}
			if n == 1 {
				return one, nil, nil
			}
			return -1, s, nil
		}
		return int(c), nil, nil
	}
	if p.more() && p.s[p.i] == ']' {
		// ECMA's [] and [^] differ from other dialects' (a literal ])
		return nil, p.errorf("an empty class or one starting with ] (write \\] for the character)")
	}
	for {
		if !p.more() {
			return nil, p.errorf("an unterminated class")
		}
		if p.s[p.i] == ']' {
			p.i++
			break
		}
		lo, s, err := single()
		if err != nil {
			return nil, err
		}
		if s != nil {
			for x := range 256 {
				set[x] = set[x] || s[x]
			}
			continue
		}
		if p.i+1 < len(p.s) && p.s[p.i] == '-' && p.s[p.i+1] != ']' {
			p.i++
			hi, s, err := single()
			if err != nil {
				return nil, err
			}
			if s != nil || hi < lo {
				return nil, p.errorf("a class range out of order or of a set")
			}
			for x := lo; x <= hi; x++ {
				set[x] = true
			}
			continue
		}
		set[lo] = true
	}
	if neg {
		for x := range 256 {
			set[x] = !set[x] && x < 0x80 // the non-ASCII ones are never written
		}
	}
	return &set, nil
}

func (p *reParser) atom(depth int) (*reNode, error) {
	c := p.s[p.i]
	if c >= 0x80 {
		return nil, p.errorf("a non-ASCII character")
	}
	p.i++
	switch c {
	case '(':
		if strings.HasPrefix(p.s[p.i:], "?:") {
			p.i += 2
		} else if p.more() && p.s[p.i] == '?' {
			return nil, p.errorf("lookaround and named groups are not supported")
		}
		n, err := p.alt(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.more() || p.s[p.i] != ')' {
			return nil, p.errorf("an unclosed group")
		}
		p.i++
		return n, nil
	case '[':
		s, err := p.class()
		if err != nil {
			return nil, err
		}
		return &reNode{op: reSet, set: s}, nil
	case '.':
		return &reNode{op: reSet, set: setOf(func(c int) bool { return c < 0x80 && c != '\n' && c != '\r' })}, nil
	case '\\':
		if p.more() && (p.s[p.i] >= '1' && p.s[p.i] <= '9' || p.s[p.i] == 'b' || p.s[p.i] == 'B') {
			return nil, p.errorf("backreferences and word boundaries are not supported")
		}
		s, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{op: reSet, set: s}, nil
	case '^':
		return &reNode{op: reBOL}, nil
	case '$':
		return &reNode{op: reEOL}, nil
	case '*', '+', '?', '{':
		p.i--
		return nil, p.errorf("a quantifier with nothing to repeat")
	case ')':
		p.i--
		return nil, p.errorf("an unmatched )")
	}
	if c < 0x20 {
		p.i--
		return nil, p.errorf("a control character")
	}
	return &reNode{op: reSet, set: setOf(func(x int) bool { return x == int(c) })}, nil
}

// nfa is a Thompson automaton: per state, epsilon edges and byte edges.
type nfa struct {
	eps   [][]int32
	edges [][]reEdge
}

type reEdge struct {
	set *[256]bool
	to  int32
}

var errTooLarge = errors.New("its automaton is too large")

func (a *nfa) state() (int32, error) {
	if len(a.eps) >= maxNFAStates {
		return 0, errTooLarge
	}
	a.eps = append(a.eps, nil)
	a.edges = append(a.edges, nil)
	return int32(len(a.eps) - 1), nil
}

// build adds n between new states s and e.
func (a *nfa) build(n *reNode) (s, e int32, err error) {
	if s, err = a.state(); err != nil {
		return
	}
	if e, err = a.state(); err != nil {
		return
	}
	switch n.op {
	case reSet:
		a.edges[s] = append(a.edges[s], reEdge{n.set, e})
	case reCat:
		at := s
		for _, sub := range n.subs {
			x, y, err := a.build(sub)
			if err != nil {
				return 0, 0, err
			}
			a.eps[at] = append(a.eps[at], x)
			at = y
		}
		a.eps[at] = append(a.eps[at], e)
	case reAlt:
		for _, sub := range n.subs {
			x, y, err := a.build(sub)
			if err != nil {
				return 0, 0, err
			}
			a.eps[s] = append(a.eps[s], x)
			a.eps[y] = append(a.eps[y], e)
		}
	case reRep:
		at := s
		for range n.min {
			x, y, err := a.build(n.subs[0])
			if err != nil {
				return 0, 0, err
			}
			a.eps[at] = append(a.eps[at], x)
			at = y
		}
		if n.max < 0 {
			x, y, err := a.build(n.subs[0])
			if err != nil {
				return 0, 0, err
			}
			a.eps[at] = append(a.eps[at], x, e)
			a.eps[y] = append(a.eps[y], x, e)
			return s, e, nil
		}
		for range n.max - n.min {
			x, y, err := a.build(n.subs[0])
			if err != nil {
				return 0, 0, err
			}
			a.eps[at] = append(a.eps[at], x, e)
			at = y
		}
		a.eps[at] = append(a.eps[at], e)
	default:
		return 0, 0, errors.New("an anchor inside the pattern (^ and $ are supported at the start and end of a top-level alternative)")
	}
	return s, e, nil
}

// compilePattern compiles a JSON schema pattern. work counts the NFA
// states its subset construction visits, across the patterns of a schema
// (nil: this one alone); beyond maxRegexWork it is refused.
func compilePattern(src string, work *int) (*reDFA, error) {
	if work == nil {
		work = new(int)
	}
	if len(src) > maxRegexLen {
		return nil, fmt.Errorf("a pattern over %d bytes", maxRegexLen)
	}
	p := &reParser{s: src}
	root, err := p.alt(0)
	if err != nil {
		return nil, err
	}
	if p.more() {
		return nil, p.errorf("an unmatched )")
	}
	alts := []*reNode{root}
	if root.op == reAlt {
		alts = root.subs
	}
	anyStr := &reNode{op: reRep, subs: []*reNode{{op: reSet, set: setOf(func(int) bool { return true })}}, max: -1}
	a := &nfa{}
	start, err := a.state()
	if err != nil {
		return nil, err
	}
	final, err := a.state()
	if err != nil {
		return nil, err
	}
	for _, alt := range alts {
		subs := []*reNode{alt}
		if alt.op == reCat {
			subs = alt.subs
		}
		seq := &reNode{op: reCat}
		if len(subs) > 0 && subs[0].op == reBOL {
			subs = subs[1:]
		} else {
			seq.subs = append(seq.subs, anyStr)
		}
		tail := anyStr
		if len(subs) > 0 && subs[len(subs)-1].op == reEOL {
			subs, tail = subs[:len(subs)-1], nil
		}
		seq.subs = append(seq.subs, subs...)
		if tail != nil {
			seq.subs = append(seq.subs, tail)
		}
		s, e, err := a.build(seq)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return nil, fmt.Errorf("pattern %q: %w (over %d states)", src, err, maxNFAStates)
			}
			return nil, fmt.Errorf("pattern %q: %w", src, err)
		}
		a.eps[start] = append(a.eps[start], s)
		a.eps[e] = append(a.eps[e], final)
	}
	return a.determinize(start, final, src, work)
}

// determinize is the subset construction over the writable bytes.
func (a *nfa) determinize(start, final int32, src string, work *int) (*reDFA, error) {
	mark := make([]int32, len(a.eps)) // the closure that saw a state last
	gen := int32(0)
	closure := func(set []int32) []int32 {
		gen++
		var out []int32
		for _, s := range set {
			if mark[s] != gen {
				mark[s] = gen
				out = append(out, s)
			}
		}
		for i := 0; i < len(out); i++ {
			for _, t := range a.eps[out[i]] {
				if mark[t] != gen {
					mark[t] = gen
					out = append(out, t)
				}
			}
		}
		*work += len(out)
		slices.Sort(out)
		return out
	}
	key := func(set []int32) string {
		var b strings.Builder
		for _, s := range set {
			b.WriteString(strconv.Itoa(int(s)))
			b.WriteByte(',')
		}
		return b.String()
	}
	d := &reDFA{}
	ids := map[string]int32{}
	var sets [][]int32
	var accept []bool
	add := func(set []int32) (int32, error) {
		k := key(set)
		if id, ok := ids[k]; ok {
			return id, nil
		}
		if len(sets) >= maxDFAStates {
			return 0, fmt.Errorf("pattern %q: its automaton is too large (over %d states)", src, maxDFAStates)
		}
		id := int32(len(sets))
		ids[k] = id
		sets = append(sets, set)
		acc := false
		for _, s := range set {
			acc = acc || s == final
		}
		accept = append(accept, acc)
		d.next = append(d.next, make([]int32, 256)...)
		return id, nil
	}
	var err error
	if d.start, err = add(closure([]int32{start})); err != nil {
		return nil, err
	}
	var bytes []int
	for c := range 256 {
		if writable(c) {
			bytes = append(bytes, c)
		}
	}
	for i := 0; i < len(sets); i++ {
		var to [256][]int32
		for _, s := range sets[i] {
			for _, e := range a.edges[s] {
				*work += len(bytes)
				for _, c := range bytes {
					if e.set[c] {
						to[c] = append(to[c], e.to)
					}
				}
			}
		}
		for c := range 256 {
			d.next[i*256+c] = -1
			if len(to[c]) == 0 {
				continue
			}
			cl := closure(to[c])
			if *work > maxRegexWork {
				return nil, fmt.Errorf("pattern %q: its automaton is too large to build", src)
			}
			id, err := add(cl)
			if err != nil {
				return nil, err
			}
			d.next[i*256+c] = id
		}
	}
	// dist: backwards from the accepting states
	n := len(sets)
	d.dist = make([]int64, n)
	rev := make([][]int32, n)
	for i := range n {
		d.dist[i] = inf
		for c := range 256 {
			if t := d.next[i*256+c]; t >= 0 {
				rev[t] = append(rev[t], int32(i))
			}
		}
	}
	var queue []int32
	for i := range n {
		if accept[i] {
			d.dist[i] = 0
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, r := range rev[s] {
			if d.dist[r] == inf {
				d.dist[r] = d.dist[s] + 1
				d.maxDist = max(d.maxDist, d.dist[r])
				queue = append(queue, r)
			}
		}
	}
	// no step into a state that cannot reach acceptance
	for i := range d.next {
		if t := d.next[i]; t >= 0 && d.dist[t] >= inf {
			d.next[i] = -1
		}
	}
	return d, nil
}
