package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/ardanlabs/jinja"
)

// ChatTemplate is a model's chat template (GGUF tokenizer.chat_template,
// Hugging Face's chat_template): Jinja rendered as Hugging Face's
// apply_chat_template renders it with Jinja2 (trim_blocks, lstrip_blocks,
// raise_exception, strftime_now, and a tojson that keeps the key order
// and does not escape non-ASCII text, as Python's json.dumps with
// ensure_ascii=False).
type ChatTemplate struct {
	src string
	t   *jinja.Template
	// Now is the time strftime_now formats (zero: the time of rendering).
	Now time.Time
}

// maxTemplateBytes bounds a template's source.
const maxTemplateBytes = 1 << 20

// ParseChatTemplate compiles a chat template.
func ParseChatTemplate(src string) (ct *ChatTemplate, err error) {
	if len(src) > maxTemplateBytes {
		return nil, fmt.Errorf("llm: chat template of %d bytes (at most %d)", len(src), maxTemplateBytes)
	}
	defer func() {
		if r := recover(); r != nil {
			ct, err = nil, fmt.Errorf("llm: chat template: %v", r)
		}
	}()
	if err := checkTemplate(src); err != nil {
		return nil, err
	}
	t, err := jinja.Compile(boundMacros(rewriteTemplate(src)))
	if err != nil {
		return nil, fmt.Errorf("llm: chat template: %w", err)
	}
	return &ChatTemplate{src: src, t: t}, nil
}

// Source is the template's text.
func (c *ChatTemplate) Source() string { return c.src }

// Message is one turn of a conversation as chat templates read it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's reasoning (Qwen 3 renders
	// it in <think> tags).
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

// ToolCall is a function call an assistant turn made.
type ToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a JSON object (or a string)
	} `json:"function"`
}

// ChatOptions are the variables besides the messages.
type ChatOptions struct {
	// AddGenerationPrompt ends the text with the start of an assistant turn.
	AddGenerationPrompt bool
	// Tools are the tool (function) definitions, JSON objects as the
	// OpenAI API writes them; their key order is kept.
	Tools []json.RawMessage
	// EnableThinking, when set, is Qwen 3's enable_thinking.
	EnableThinking *bool
	// BOS and EOS are bos_token and eos_token.
	BOS, EOS string
	// Extra holds more variables (name → JSON value).
	Extra map[string]json.RawMessage
}

// Render renders the conversation.
func (c *ChatTemplate) Render(msgs []Message, o ChatOptions) (string, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"messages":`)
	b, err := json.Marshal(msgs)
	if err != nil {
		return "", err
	}
	if msgs == nil {
		b = []byte("[]")
	}
	buf.Write(b)
	add := func(k string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("llm: chat variable %s: %w", k, err)
		}
		fmt.Fprintf(&buf, ",%q:", k)
		buf.Write(b)
		return nil
	}
	_ = add("add_generation_prompt", o.AddGenerationPrompt)
	if len(o.Tools) > 0 {
		if err := add("tools", o.Tools); err != nil {
			return "", err
		}
	}
	if o.EnableThinking != nil {
		_ = add("enable_thinking", *o.EnableThinking)
	}
	_ = add("bos_token", o.BOS)
	_ = add("eos_token", o.EOS)
	for k, v := range o.Extra {
		if err := add(k, v); err != nil {
			return "", err
		}
	}
	buf.WriteByte('}')
	return c.RenderJSON(buf.Bytes())
}

// RenderJSON renders the template with the variables of a JSON object
// (messages, add_generation_prompt, tools, bos_token, ...), objects
// keeping their key order as Python's dicts do.
func (c *ChatTemplate) RenderJSON(vars []byte) (out string, err error) {
	dec := json.NewDecoder(bytes.NewReader(vars))
	dec.UseNumber()
	v, err := jsonValue(dec, 0)
	if err != nil {
		return "", fmt.Errorf("llm: chat variables: %w", err)
	}
	if !v.IsDict() {
		return "", errors.New("llm: chat variables are not a JSON object")
	}
	data := map[string]jinja.Value{}
	for _, k := range v.AsDict().Keys {
		data[k], _ = v.AsDict().Get(k)
	}
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now takes one format string")
		}
		return jinja.NewString(strftime(now, args[0].AsString())), nil
	})
	pyGlobals(data)
	data["range"] = jinja.NewCallable("range", boundedRange)
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("llm: chat template: %v", r)
		}
	}()
	out, err = c.t.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("llm: chat template: %w", err)
	}
	return out, nil
}

// jsonValue reads one JSON value as a template value, objects in order.
func jsonValue(dec *json.Decoder, depth int) (jinja.Value, error) {
	if depth > 64 {
		return jinja.Undefined(), errors.New("JSON nested too deep")
	}
	t, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return v, err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := jsonValue(dec, depth+1)
				if err != nil {
					return v, err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected %v", x)
	}
	return jinja.FromGoValue(t), nil
}

// pyToJSON is Hugging Face's tojson filter: Python's json.dumps with
// ensure_ascii=False, indent=None, separators=None, sort_keys=False
// unless given.
func pyToJSON(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	e := jsonEnc{item: ", ", key: ": "}
	if v, ok := kw["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			e.indent = strings.Repeat(" ", int(min(max(v.AsInt(), 0), 64)))
		case v.IsString():
			e.indent = v.AsString()
		default:
			return jinja.Undefined(), errors.New("tojson: indent is not a number or string")
		}
		e.pretty, e.item = true, ","
	}
	if v, ok := kw["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		e.item, e.key = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	if v, ok := kw["sort_keys"]; ok {
		e.sort = v.IsTruthy()
	}
	if v, ok := kw["ensure_ascii"]; ok {
		e.ascii = v.IsTruthy()
	}
	if err := e.value(args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(e.sb.String()), nil
}

type jsonEnc struct {
	sb                  strings.Builder
	item, key, indent   string
	pretty, sort, ascii bool
}

func (e *jsonEnc) newline(depth int) {
	if e.pretty {
		e.sb.WriteByte('\n')
		for range depth {
			e.sb.WriteString(e.indent)
		}
	}
}

func (e *jsonEnc) value(v jinja.Value, depth int) error {
	if depth > 256 {
		return errors.New("tojson: value nested too deep")
	}
	switch {
	case v.IsNone(), v.IsUndefined():
		e.sb.WriteString("null")
	case v.IsBool():
		if v.AsBool() {
			e.sb.WriteString("true")
		} else {
			e.sb.WriteString("false")
		}
	case v.IsInt():
		e.sb.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		e.sb.WriteString(pyFloat(v.AsFloat()))
	case v.IsString():
		e.str(v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			e.sb.WriteString("[]")
			return nil
		}
		e.sb.WriteByte('[')
		for i, x := range items {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			e.newline(depth + 1)
			if err := e.value(x, depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.sb.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		keys := d.OrderedKeys()
		if e.sort {
			sortStrings(keys)
		}
		if len(keys) == 0 {
			e.sb.WriteString("{}")
			return nil
		}
		e.sb.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				e.sb.WriteString(e.item)
			}
			e.newline(depth + 1)
			e.str(k)
			e.sb.WriteString(e.key)
			x, _ := d.Get(k)
			if err := e.value(x, depth+1); err != nil {
				return err
			}
		}
		e.newline(depth)
		e.sb.WriteByte('}')
	default:
		return errors.New("tojson: a callable is not JSON serializable")
	}
	return nil
}

// str writes a JSON string as Python's json.dumps does.
func (e *jsonEnc) str(s string) {
	e.sb.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			e.sb.WriteString(`\"`)
		case '\\':
			e.sb.WriteString(`\\`)
		case '\n':
			e.sb.WriteString(`\n`)
		case '\r':
			e.sb.WriteString(`\r`)
		case '\t':
			e.sb.WriteString(`\t`)
		case '\b':
			e.sb.WriteString(`\b`)
		case '\f':
			e.sb.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || e.ascii && r > 0x7e && r < 0x10000:
				fmt.Fprintf(&e.sb, `\u%04x`, r)
			case e.ascii && r >= 0x10000:
				a, b := utf16.EncodeRune(r)
				fmt.Fprintf(&e.sb, `\u%04x\u%04x`, a, b)
			default:
				e.sb.WriteRune(r)
			}
		}
	}
	e.sb.WriteByte('"')
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// pyFloat formats a float as Python's repr (and json.dumps) does.
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	if x >= -4 && x < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if x < 0 {
		sign, x = "-", -x
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, x)
}

// strftime formats t as C's strftime does for the directives chat
// templates use (%d %b %Y and the like), in t's location.
func strftime(t time.Time, f string) string {
	var sb strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			sb.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'd':
			fmt.Fprintf(&sb, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'm':
			fmt.Fprintf(&sb, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&sb, "%d", t.Year())
		case 'y':
			fmt.Fprintf(&sb, "%02d", t.Year()%100)
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&sb, "%02d", t.Hour())
		case 'I':
			fmt.Fprintf(&sb, "%02d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&sb, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&sb, "%02d", t.Second())
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'j':
			fmt.Fprintf(&sb, "%03d", t.YearDay())
		case 'Z':
			z, _ := t.Zone()
			sb.WriteString(z)
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			sb.WriteByte(f[i])
		}
	}
	return sb.String()
}

// Limits on what a template may do: a chat template comes with a model
// file, so it is input, not code we trust. Jinja2's sandbox bounds
// range() the same way; nesting and recursion are refused before the
// engine (which recurses on both) sees them.
const (
	maxRange      = 100000
	maxNesting    = 100
	maxMacroDepth = 64
)

// boundedRange is range() refusing more than maxRange items.
func boundedRange(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var n [3]int64
	if len(args) < 1 || len(args) > 3 {
		return jinja.Undefined(), errors.New("range takes 1 to 3 integers")
	}
	for i, a := range args {
		if !a.IsInt() {
			return jinja.Undefined(), errors.New("range takes integers")
		}
		n[i] = a.AsInt()
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(args) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(args) == 3 {
		step = n[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range step must not be zero")
	}
	count := int64(0)
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("range of %d items (at most %d)", count, maxRange)
	}
	items := make([]jinja.Value, 0, count)
	for i := int64(0); i < count; i++ {
		items = append(items, jinja.NewInt(start+i*step))
	}
	return jinja.NewList(items), nil
}

var (
	blockOpen = regexp.MustCompile(`^(if|for|macro|call|filter|raw|block)\b`)
	blockEnd  = regexp.MustCompile(`^end(if|for|macro|call|filter|raw|block|set)\b`)
	setBlock  = regexp.MustCompile(`^set\s+[A-Za-z_][A-Za-z0-9_.]*\s*(\||$)`)
)

// checkTemplate refuses templates the engine cannot render safely:
// expressions or blocks nested deeper than maxNesting.
func checkTemplate(src string) error {
	depth := 0
	for _, tg := range templateTags(src) {
		body := tg.body
		if tg.kind == '#' {
			continue
		}
		if d := exprDepth(body); d > maxNesting {
			return fmt.Errorf("llm: chat template: an expression nested %d deep (at most %d)", d, maxNesting)
		}
		if tg.kind != '%' {
			continue
		}
		stmt := strings.TrimSpace(strings.Trim(body, "-+"))
		switch {
		case blockOpen.MatchString(stmt) || setBlock.MatchString(stmt):
			depth++
			if depth > maxNesting {
				return fmt.Errorf("llm: chat template: blocks nested %d deep (at most %d)", depth, maxNesting)
			}
		case blockEnd.MatchString(stmt):
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// tag is a {{ }}, {% %} or {# #} tag of a template: its bytes
// [start, end), its kind ('{', '%', '#') and what is between the delimiters.
type tag struct {
	start, end int
	kind       byte
	body       string
}

// templateTags finds a template's tags: each opening delimiter to the
// first closing one after it outside string literals.
func templateTags(src string) []tag {
	var tags []tag
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '{')
		if j < 0 || i+j+1 >= len(src) {
			break
		}
		i += j
		var end string
		switch src[i+1] {
		case '{':
			end = "}}"
		case '%':
			end = "%}"
		case '#':
			end = "#}"
		default:
			i++
			continue
		}
		k := strings.Index(src[i+2:], end)
		if end != "#}" {
			k = tagEnd(src[i+2:], end) // a string literal may hold the closing mark
		}
		if k < 0 {
			break
		}
		tags = append(tags, tag{start: i, end: i + 2 + k + 2, kind: src[i+1], body: src[i+2 : i+2+k]})
		i += 2 + k + 2
	}
	return tags
}

// exprDepth is the deepest bracket nesting in a tag, outside string literals.
func exprDepth(s string) int {
	d, deepest := 0, 0
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
		case c == '(' || c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ')' || c == ']' || c == '}':
			d = max(d-1, 0)
		}
	}
	return deepest
}

// depthVar is the namespace boundMacros counts macro depth in.
const depthVar = "__switchyard_depth"

// boundMacros makes every macro count how deeply macro calls nest and
// raise an error past maxMacroDepth: the engine recurses on the Go stack,
// so a macro calling itself without end would exhaust it (Gemma 4's
// template recurses legitimately, over nested JSON schemas). The added
// tags print nothing and carry the whitespace control of the tags they
// sit beside, so the output is unchanged.
func boundMacros(src string) string {
	var sb strings.Builder
	at, found, raw := 0, false, false
	for _, tg := range templateTags(src) {
		if tg.kind != '%' {
			continue
		}
		stmt := strings.TrimSpace(strings.Trim(tg.body, "-+"))
		tag := src[tg.start:tg.end]
		switch {
		case stmt == "raw":
			raw = true
		case stmt == "endraw":
			raw = false
		case raw:
		case strings.HasPrefix(stmt, "macro") && len(stmt) > 5 && (stmt[5] == ' ' || stmt[5] == '\t' || stmt[5] == '\n'):
			trail := ""
			if strings.HasSuffix(tag, "-%}") {
				trail = "-"
			}
			sb.WriteString(src[at:tg.end])
			sb.WriteString("{% set " + depthVar + ".n = " + depthVar + ".n + 1 %}{% if " + depthVar + ".n > " +
				strconv.Itoa(maxMacroDepth) + " %}{{ raise_exception('macros nested more than " + strconv.Itoa(maxMacroDepth) +
				" deep') }}{% endif " + trail + "%}")
			at, found = tg.end, true
		case strings.HasPrefix(stmt, "endmacro"):
			lead := ""
			if strings.HasPrefix(tag, "{%-") {
				lead = "-"
			}
			sb.WriteString(src[at:tg.start])
			sb.WriteString("{%" + lead + " set " + depthVar + ".n = " + depthVar + ".n - 1 %}")
			at = tg.start
		}
	}
	if !found {
		return src
	}
	sb.WriteString(src[at:])
	// the trailing newline is trim_blocks' to take, not the template's
	return "{% set " + depthVar + " = namespace(n=0) %}\n" + sb.String()
}
