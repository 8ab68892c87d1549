package llm

import (
	"strings"
	"testing"
)

// TestPythonSemantics: printing, +, ~, in, trim, string and dict methods
// behave as in Jinja2 (each result below is Jinja2 3.1's, rendered with
// testdata/chat/render.py), errors included.
func TestPythonSemantics(t *testing.T) {
	for _, c := range []struct{ src, vars, want, err string }{
		{"{{ none }}|{{ 1.0 }}|{{ 2.50 }}|{{ f }}|{{ true }}", `{"f": 1e21}`, "None|1.0|2.5|1e+21|True", ""},
		{`{{ [1, 'a\n', none, true, "it's", 0.5] }}`, `{}`, `[1, 'a\n', None, True, "it's", 0.5]`, ""},
		{"{{ {'k': ['x', {'y': none}]} }}", `{}`, "{'k': ['x', {'y': None}]}", ""},
		{"{{ 'a' ~ none ~ 1.0 }}", `{}`, "aNone1.0", ""},
		{"{{ '}}' + 'x' }}{# }} #}", `{}`, "}}x", ""},
		{"{{ 3 + 4.5 }}|{{ true + 1 }}|{{ [1] + [2] }}|{{ 'p' + 'q' }}", `{}`, "7.5|2|[1, 2]|pq", ""},
		{"{{ 'xaby' | trim('xy') }}|{{ '  a \x1f' | trim }}|{{ [1, 'b'] | string }}", `{}`, "ab|a|[1, 'b']", ""},
		{"{% set a = 'p' + 'q' %}{{ a }}", `{}`, "pq", ""},
		{"{% for m in ms if 'k' in m %}{{ m.k }}{% endfor %}", `{"ms": [{"k": 1}, {"j": 2}, {"k": 3}]}`, "13", ""},
		{"{{ d.get('k', 'z') }}{{ d.get('items') }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{{ d.keys() | list | length }}",
			`{"d": {"items": 1, "b": 2}}`, "z1items=1;b=2;2", ""},
		{"{{ 'a' not in 'abc' }}|{{ 1 in [1.0] }}|{{ 'k' in {'k': 1} }}|{{ 'x' in y }}", `{}`, "False|True|True|False", ""},
		{"{{ -1 + 2 }}|{{ (1 + 2) * 3 }}|{{ 'ab'[::-1] + 'c' }}|{{ x is defined and 'a' + 'b' }}|{{ 'a' if 1 + 1 == 2 else 'b' }}",
			`{}`, "1|9|bac|False|a", ""},
		{"{{ [1, 2] | map('string') | join('+') + '!' }}|{{ 'a' ~ 'b' | upper }}|{{ ('x' + 'y') | length }}", `{}`, "1+2!|aB|2", ""},
		{"{{ 'a' + none }}", `{}`, "", "can only concatenate str"},
		{"{{ 'a' + [1] }}", `{}`, "", "can only concatenate str"},
		{"{{ 1 + 'a' }}", `{}`, "", "unsupported operand"},
		{"{% if 'x' in none %}{% endif %}", `{}`, "", "not iterable"},
		{"{{ 1 in 'abc' }}", `{}`, "", "requires string as left operand"},
		{"{{ 'a' + y }}", `{}`, "", "undefined"},
		{"{{ x | length }}", `{"x": null}`, "", "has no len()"},
		{"{% for a in 1, 'b' %}{{ a }}{% endfor %}", `{}`, "1b", ""},
		{"{% for c in x %}{% endfor %}", `{"x": null}`, "", "not iterable"},
		{"{% for c in 'ab' %}{{ c }}{% endfor %}{% for c in y %}{{ c }}{% endfor %}{{ y | length }}{{ 'ab' | count }}{% for k in {'a': 1} %}{{ k }}{% endfor %}",
			`{}`, "ab02a", ""},
	} {
		ct, err := ParseChatTemplate(c.src)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		got, err := ct.RenderJSON([]byte(c.vars))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %q, %v; want an error with %q", c.src, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q: got %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}

// TestSubscriptSemantics: x[k] is Jinja2's getitem (each result below
// is Jinja2 3.1's, rendered with testdata/chat/render.py): a string takes
// int indices only (the engine alone took 'hello'['text'] for 'hello'[0]),
// a list ints, a dict keys; anything else is Undefined, which raises
// only where it is used; subscripting Undefined raises. Slices keep the
// engine's (Python's) semantics.
func TestSubscriptSemantics(t *testing.T) {
	for _, c := range []struct{ src, vars, want, err string }{
		{"{{ 'hello'['text'] is defined }}|{{ 'hello'[1] }}|{{ 'hello'[-1] }}|{{ 'héllo'[1] }}|{{ 'ab'[true] }}|{{ 'ab'[5] is defined }}|{{ 'ab'[-3] is defined }}",
			`{}`, "False|e|o|é|b|False|False", ""},
		{"{{ [1, 2]['a'] is defined }}|{{ [1, 2][-1] }}|{{ [1, 2][2] is defined }}|{{ [1, 2][1.0] is defined }}|{{ [[0, 'x']][0][1] }}",
			`{}`, "False|2|False|False|x", ""},
		{"{{ d['a'] }}|{{ d['z'] is defined }}|{{ d[0] is defined }}|{{ {1: 'x'}[1] }}|{{ n['a'] is defined }}|{{ 1['a'] is defined }}",
			`{"d": {"a": 1}, "n": null}`, "1|False|False|x|False|False", ""},
		{"{% for c in 'ab'['k'] %}x{% endfor %}|{{ 'hello'['text'] | trim }}|{{ 'hello'['text'] }}|{{ m[0]['content'][0]['text'] }}",
			`{"m": [{"content": "hi"}]}`, "|||", ""},
		{"{{ 'ab'['k'] | length }}", `{}`, "0", ""},
		{"{% set y = xs[1:] + [xs[-1]] %}{{ y }}|{{ xs[::-1][0] }}", `{"xs": [1, 2, 3]}`, "[2, 3, 3]|3", ""},
		// Gemma 3 1B's older template on plain-string content
		{"{{ m[0]['content'][0]['text'] + '!' }}", `{"m": [{"content": "hi"}]}`, "", "UndefinedError"},
		{"{{ 'hello'['text'] + 'x' }}", `{}`, "", "UndefinedError"},
		{"{{ y['a'] }}", `{}`, "", "UndefinedError"},
	} {
		ct, err := ParseChatTemplate(c.src)
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		got, err := ct.RenderJSON([]byte(c.vars))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: got %q, %v; want an error with %q", c.src, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%q: got %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}

// TestRewriteKeepsText: an expression the rewriting does not touch, or
// cannot parse, keeps its bytes.
func TestRewriteKeepsText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"{%- if a and not b -%}x{% endif %}", "{%- if a and not b -%}x{% endif %}"},
		{"{% raw %}{{ 'a' + b }}{% endraw %}", "{% raw %}{{ 'a' + b }}{% endraw %}"},
		{"{% if x + %}", "{% if x + %}"},
		{"{{- a + b -}}", "{{- ( " + addName + "(a, b) )|" + printName + " -}}"},
		{"{% for x in xs if x not in y %}", "{% for x in " + iterName + "((xs)) if (not " + inName + "(x, y)) %}"},
		{"{% for k, v in d.items() recursive %}", "{% for k, v in " + iterName + "((" + pyPrefix + "m_items(d))) recursive %}"},
		{"{% set ns.s = ns.s ~ m['c'] | trim %}", "{% set ns.s = " + concatName + "(ns.s, " + itemName + "(m, 'c') | " + pyPrefix + "trim) %}"},
		{"{% set y = xs[1:] %}{% set z = xs[::-1] %}", "{% set y = xs[1:] %}{% set z = xs[::-1] %}"},
		{"{% if m[0]['content'] %}", "{% if " + itemName + "(" + itemName + "(m, 0), 'content') %}"},
	} {
		if got := rewriteTemplate(c.in); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// FuzzRewriteTemplate: the rewriting reads any text without a panic and
// keeps text outside tags as it is.
func FuzzRewriteTemplate(f *testing.F) {
	for _, s := range []string{
		"{{- a + b ~ c if d in e else f | trim -}}",
		"{% for k, v in m.items() if k not in ('a', 'b') recursive %}{{ v.get('x', 1) }}{% endfor %}",
		"{% set ns.x = [1, {'a': -2.5e3}][0:1] + x(y=1, *z, **w) %}{{ x is divisibleby 3 }}{{ '}}' }}",
		"{% raw %}{{ a + b }}{% endraw %}{# {{ a + b }} #}{{ 'unterminated",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		out := rewriteTemplate(src)
		if !strings.Contains(src, "{") && out != src {
			t.Fatalf("text without tags changed: %q -> %q", src, out)
		}
	})
}
