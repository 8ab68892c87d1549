package serve

import (
	"strings"
	"testing"
)

// feedAll runs text through a toolStream in pieces of n bytes and
// returns the content handed out, the calls, and the content handed out
// before each call (to check a call is never handed out in part).
func feedAll(tu *toolUse, text string, n int) (string, []toolCall, *toolStream) {
	ts := &toolStream{tu: tu}
	var content strings.Builder
	var calls []toolCall
	for i := 0; i < len(text); i += n {
		c, cs := ts.feed(text[i:min(len(text), i+n)])
		content.WriteString(c)
		calls = append(calls, cs...)
	}
	c, cs := ts.end()
	content.WriteString(c)
	return content.String(), append(calls, cs...), ts
}

func TestToolStreamHermes(t *testing.T) {
	tu := &toolUse{format: HermesTools, names: map[string]bool{"get_weather": true, "now": true}}
	for _, c := range []struct {
		text, content string
		calls         []string // name + arguments
		malformed     int
	}{
		{"Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			"Let me look.", []string{`get_weather{"city":"Paris"}`}, 0},
		{"<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Oslo\\\"}\"}</tool_call>",
			"", []string{`now{}`, `get_weather{"city":"Oslo"}`}, 0},
		// an unknown function, arguments not an object, a call never closed: text, counted
		{"<tool_call>{\"name\":\"launch\",\"arguments\":{}}</tool_call>", "<tool_call>{\"name\":\"launch\",\"arguments\":{}}</tool_call>", nil, 1},
		{"a <tool_call>{\"name\":\"now\",\"arguments\":[1]}</tool_call> b", "a <tool_call>{\"name\":\"now\",\"arguments\":[1]}</tool_call> b", nil, 1},
		{"ok <tool_call>{\"name\":\"now\",", "ok <tool_call>{\"name\":\"now\",", nil, 1},
		// text that only looks like the start of a tag
		{"a <tool_ca b <tool", "a <tool_ca b <tool", nil, 0},
		{"  \n ", "  \n ", nil, 0},
	} {
		for _, n := range []int{1, 2, 3, 7, 1000} {
			content, calls, ts := feedAll(tu, c.text, n)
			var got []string
			for _, cl := range calls {
				if !strings.HasPrefix(cl.ID, "call_") {
					t.Fatalf("id %q", cl.ID)
				}
				got = append(got, cl.Name+cl.Arguments)
			}
			if content != c.content || strings.Join(got, "|") != strings.Join(c.calls, "|") || ts.malformed != c.malformed || ts.calls != len(c.calls) {
				t.Errorf("%q in %d-byte pieces: content %q calls %v malformed %d", c.text, n, content, got, ts.malformed)
			}
		}
	}
}

// TestToolStreamNeverHalf: while a call is being written, nothing of it
// is handed out; it comes out whole the moment its closing tag arrives.
func TestToolStreamNeverHalf(t *testing.T) {
	tu := &toolUse{format: HermesTools, names: map[string]bool{"now": true}}
	text := "Sure. <tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>"
	ts := &toolStream{tu: tu}
	var out strings.Builder
	for i := range len(text) {
		c, calls := ts.feed(text[i : i+1])
		out.WriteString(c)
		if strings.Contains(out.String(), "<") {
			t.Fatalf("part of a call handed out as text: %q", out.String())
		}
		if done := i == len(text)-1; done != (len(calls) == 1) {
			t.Fatalf("after %q: %d calls", text[:i+1], len(calls))
		}
	}
}

func TestToolStreamLlama3(t *testing.T) {
	tu := &toolUse{format: Llama3Tools, names: map[string]bool{"get_weather": true}}
	content, calls, ts := feedAll(tu, " {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", 3)
	if content != "" || len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Arguments != `{"city":"Rome"}` || ts.malformed != 0 {
		t.Fatalf("%q %v", content, calls)
	}
	content, calls, ts = feedAll(tu, "{\"name\": \"get_weather\", \"parameters\": {\"city\": ", 3)
	if content != "{\"name\": \"get_weather\", \"parameters\": {\"city\": " || calls != nil || ts.malformed != 1 {
		t.Fatalf("%q %v", content, calls)
	}
	content, calls, _ = feedAll(tu, "It is sunny.", 4)
	if content != "It is sunny." || calls != nil {
		t.Fatalf("%q %v", content, calls)
	}
}

func TestDetectToolFormat(t *testing.T) {
	for _, c := range []struct {
		tmpl string
		want ToolFormat
	}{
		{"{% for m in messages %}{{ m.content }}{% endfor %}", NoToolFormat},
		{"{% if tools %}<tools>{{ tools | tojson }}</tools> Call with <tool_call>{...}</tool_call>{% endif %}", HermesTools},
		{`{% if tools %}<|start_header_id|>user<|end_header_id|>Respond with {"name": function name, "parameters": dictionary}{% endif %}`, Llama3Tools},
		{"{% if tools %}{{ tools }} call:NAME{args}{% endif %}", NoToolFormat},
	} {
		if got := DetectToolFormat(c.tmpl); got != c.want {
			t.Errorf("%q: %v, want %v", c.tmpl, got, c.want)
		}
	}
}

// TestToolStreamOneCall: parallel_tool_calls false: the second call is
// text.
func TestToolStreamOneCall(t *testing.T) {
	tu := &toolUse{format: HermesTools, names: map[string]bool{"now": true}, one: true}
	call := "<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>"
	content, calls, ts := feedAll(tu, call+call, 5)
	if len(calls) != 1 || content != call || ts.malformed != 0 {
		t.Fatalf("%q %v", content, calls)
	}
}

// FuzzToolStream: the tool-call reader never panics, hands out the same
// content and calls whatever the pieces the text comes in, and without
// calls hands out the text unchanged.
func FuzzToolStream(f *testing.F) {
	for _, s := range []string{
		"Let me look.\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>{\"name\":\"now\",\"arguments\":\"{}\"}</tool_call><tool_call>{\"name\":\"x\"}</tool_call> tail",
		"<tool_call><tool_call></tool_call></tool_call><tool_ca",
		" {\"name\": \"now\", \"parameters\": {\"a\": [1, {}]}}",
		"plain text  \n",
	} {
		f.Add(s, uint8(3), false)
		f.Add(s, uint8(1), true)
	}
	f.Fuzz(func(t *testing.T, text string, piece uint8, llama bool) {
		format := HermesTools
		if llama {
			format = Llama3Tools
		}
		tu := &toolUse{format: format, names: map[string]bool{"now": true}}
		whole, wcalls, wts := feedAll(tu, text, len(text)+1)
		content, calls, ts := feedAll(tu, text, int(piece%16)+1)
		if content != whole || len(calls) != len(wcalls) || ts.malformed != wts.malformed || ts.calls != len(calls) {
			t.Fatalf("%q: in pieces %q %d calls, whole %q %d calls", text, content, len(calls), whole, len(wcalls))
		}
		for i := range calls {
			if calls[i].Name != wcalls[i].Name || calls[i].Arguments != wcalls[i].Arguments {
				t.Fatalf("%q: call %d differs", text, i)
			}
		}
		if len(calls) == 0 && content != text {
			t.Fatalf("%q: no call, content %q", text, content)
		}
	})
}
