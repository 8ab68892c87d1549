package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/llm/grammar"
)

// ToolFormat is how a model family writes a tool call in its reply.
type ToolFormat int

const (
	// NoToolFormat: the model's template does not take tools.
	NoToolFormat ToolFormat = iota
	// HermesTools: each call is <tool_call>{"name": NAME, "arguments":
	// {...}}</tool_call> (Qwen 2.5 and 3, Hermes), possibly after text.
	HermesTools
	// Llama3Tools: the whole reply is one JSON object {"name": NAME,
	// "parameters": {...}} (Llama 3.1 to 3.3 JSON tool calling).
	Llama3Tools
)

func (f ToolFormat) String() string {
	switch f {
	case HermesTools:
		return "hermes"
	case Llama3Tools:
		return "llama3"
	}
	return "none"
}

// DetectToolFormat is the tool-call format a Jinja chat template teaches
// its model, from the template's text: NoToolFormat when it does not
// render tools or writes calls in a format not recognized.
func DetectToolFormat(template string) ToolFormat {
	if !strings.Contains(template, "tools") {
		return NoToolFormat
	}
	if strings.Contains(template, "<tool_call>") {
		return HermesTools
	}
	if strings.Contains(template, `"parameters"`) && strings.Contains(template, "<|start_header_id|>") {
		return Llama3Tools
	}
	return NoToolFormat
}

// Tools is a model's tool support.
type Tools struct {
	Format ToolFormat
	// Chat renders a conversation with tool definitions (OpenAI's tool
	// objects, as the client sent them) through the chat template and
	// tokenizes it, as Model.Chat does without them.
	Chat func(messages []Message, tools []json.RawMessage) ([]int, error)
}

// keys of a call's object in each format
func (f ToolFormat) keys() (name, args string) {
	if f == Llama3Tools {
		return "name", "parameters"
	}
	return "name", "arguments"
}

// toolUse is a request's tools as a model takes them.
type toolUse struct {
	format ToolFormat
	raw    []json.RawMessage
	names  map[string]bool
	// one: parallel_tool_calls false: a call after the first is text
	one bool
	// gram: the grammar of a forced call (tool_choice required or a
	// function), else nil
	gram *grammar.Grammar
}

// toolsFor checks a chat request's tools against the model: nil when
// the request has none (or tool_choice none: the conversation is
// rendered without them and the reply is text).
func toolsFor(m *Model, req *request) (*toolUse, *apiError) {
	if len(req.tools) == 0 || req.toolChoice == "none" {
		return nil, nil
	}
	if m.Tools == nil || m.Tools.Chat == nil || m.Tools.Format == NoToolFormat {
		return nil, errorf(http.StatusBadRequest, "invalid_request_error", "tools_unsupported", "tools",
			"the model %q has no chat template that takes tools (or writes calls in a format this server reads), so tools are refused rather than dropped", m.Name)
	}
	tu := &toolUse{format: m.Tools.Format, names: map[string]bool{}, one: !req.parallelTools}
	var calls []grammar.Call
	for i, t := range req.tools {
		tu.raw = append(tu.raw, t.raw)
		tu.names[t.name] = true
		if req.toolChoice == "function" && t.name != req.toolName {
			continue
		}
		if req.toolChoice == "required" || req.toolChoice == "function" {
			if t.params != nil {
				// compiled alone first, so a refusal names the tool
				if _, err := grammar.CompileSchema(t.params, nil); err != nil {
					return nil, schemaError(fmtParam(i), err)
				}
			}
			calls = append(calls, grammar.Call{Name: t.name, Parameters: t.params})
		}
	}
	if calls != nil {
		o := &grammar.Options{}
		if tu.format == HermesTools {
			o.Prefix, o.Suffix = "<tool_call>\n", "\n</tool_call>"
		}
		nk, ak := tu.format.keys()
		g, err := grammar.CompileCalls(calls, nk, ak, o)
		if err != nil {
			return nil, schemaError("tools", err)
		}
		tu.gram = g
	}
	return tu, nil
}

func fmtParam(i int) string {
	b, _ := json.Marshal(i)
	return "tools[" + string(b) + "].function.parameters"
}

// modelGrammar is a model's vocabulary indexed for grammar masks, built
// on the first request that needs it.
type modelGrammar struct {
	once sync.Once
	ix   *grammar.Index
	ends []int
}

// grammarIndex is m's vocabulary index: each token's text as it follows
// an ordinary token (not BOS), the end tokens ending.
func (m *Model) grammarIndex() (*grammar.Index, []int) {
	mg := &m.gram
	mg.once.Do(func() {
		n := m.Tokenizer.VocabSize()
		if v := m.Decoder.Vocab(); v > 0 {
			n = min(n, v)
		}
		prev := 0
		if m.Tokenizer.BOS() == 0 {
			prev = 1
		}
		texts := make([]string, n)
		for id := range texts {
			texts[id] = m.Tokenizer.Piece(prev, id)
		}
		for id := range m.end {
			if id >= 0 && id < n {
				mg.ends = append(mg.ends, id)
			}
		}
		// the tokenizer's own end first: a forced end picks it
		if e, ok := m.Tokenizer.(interface{ EOS() int }); ok {
			for i, id := range mg.ends {
				if id == e.EOS() {
					mg.ends[0], mg.ends[i] = mg.ends[i], mg.ends[0]
				}
			}
		}
		mg.ix = grammar.NewIndex(texts, mg.ends)
	})
	return mg.ix, mg.ends
}

// constrain makes j's sampler follow g. The shortest text of g must fit
// in maxNew tokens (one byte a token at worst, and the end).
func constrain(m *Model, j *job, g *grammar.Grammar, maxNew int) *apiError {
	ix, ends := m.grammarIndex()
	if r := g.NewMatcher().Rest(); r+1 > maxNew {
		return invalid("max_tokens", "max_tokens %d is too few for the shortest text the format allows (%d bytes and the end)", maxNew, r)
	}
	j.samp.con = newConstraint(g, ix, ends, maxNew, j.prompt[len(j.prompt)-1], m.Tokenizer.Piece, m.isEnd)
	return nil
}

// toolCall is a complete call found in a reply.
type toolCall struct {
	ID, Name, Arguments string
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// parseCall reads one call's JSON object: a known function's name and
// its arguments, an object (or a string holding one).
func (tu *toolUse) parseCall(body string) (toolCall, bool) {
	nk, ak := tu.format.keys()
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(body))
	if dec.Decode(&obj) != nil || dec.More() || obj == nil {
		return toolCall{}, false
	}
	var name string
	if json.Unmarshal(obj[nk], &name) != nil || !tu.names[name] {
		return toolCall{}, false
	}
	args := obj[ak]
	if args == nil && tu.format == Llama3Tools {
		args = obj["arguments"]
	}
	var s string
	if json.Unmarshal(args, &s) == nil {
		args = json.RawMessage(s)
	}
	var a map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil || a == nil {
		return toolCall{}, false
	}
	var buf bytes.Buffer
	if json.Compact(&buf, args) != nil {
		return toolCall{}, false
	}
	return toolCall{ID: newCallID(), Name: name, Arguments: buf.String()}, true
}

const (
	callOpen  = "<tool_call>"
	callClose = "</tool_call>"
)

// toolStream separates a reply's text from its tool calls as the text
// arrives: text that may begin a call is held back until the call is
// complete (then it is handed out whole) or proves not to be one, so a
// client never sees half a call. A call that does not parse is handed
// out as text and counted.
type toolStream struct {
	tu        *toolUse
	pending   string // held text
	inCall    bool   // hermes: inside <tool_call>
	decided   bool   // llama3: the first non-space byte was seen
	whole     bool   // llama3: the reply is held whole (it began with {)
	calls     int
	malformed int
	// ws is whitespace held back: handed out before the next text, or
	// dropped when a call comes (a forced call's reply has no content)
	ws string
}

// feed takes generated text and returns what can be handed out now.
func (ts *toolStream) feed(text string) (content string, calls []toolCall) {
	content, calls = ts.feed1(text)
	return ts.space(content, calls), calls
}

// space holds trailing whitespace back: it is handed out before the
// next text, or dropped when a call comes next.
func (ts *toolStream) space(content string, calls []toolCall) string {
	if len(calls) > 0 {
		ts.ws = ""
	}
	body := strings.TrimRight(content, " \t\r\n")
	if body == "" {
		ts.ws += content
		return ""
	}
	out := ts.ws + body
	ts.ws = content[len(body):]
	return out
}

func (ts *toolStream) feed1(text string) (content string, calls []toolCall) {
	ts.pending += text
	if ts.tu.format == Llama3Tools {
		if !ts.decided {
			t := strings.TrimLeft(ts.pending, " \t\r\n")
			if t == "" {
				return "", nil
			}
			ts.decided, ts.whole = true, t[0] == '{'
		}
		if ts.whole {
			return "", nil
		}
		content, ts.pending = ts.pending, ""
		return content, nil
	}
	var out strings.Builder
	for {
		if !ts.inCall {
			i := strings.Index(ts.pending, callOpen)
			if i < 0 {
				// hold a tail that may begin the tag
				keep := 0
				for k := min(len(callOpen)-1, len(ts.pending)); k > 0; k-- {
					if strings.HasSuffix(ts.pending, callOpen[:k]) {
						keep = k
						break
					}
				}
				out.WriteString(ts.pending[:len(ts.pending)-keep])
				ts.pending = ts.pending[len(ts.pending)-keep:]
				return out.String(), calls
			}
			out.WriteString(ts.pending[:i])
			ts.pending, ts.inCall = ts.pending[i+len(callOpen):], true
		}
		i := strings.Index(ts.pending, callClose)
		if i < 0 {
			return out.String(), calls
		}
		body := ts.pending[:i]
		if ts.tu.one && ts.calls > 0 {
			out.WriteString(callOpen + body + callClose) // one call was asked for
		} else if c, ok := ts.tu.parseCall(body); ok {
			calls = append(calls, c)
			ts.calls++
		} else {
			ts.malformed++
			out.WriteString(callOpen + body + callClose)
		}
		ts.pending, ts.inCall = ts.pending[i+len(callClose):], false
	}
}

// end returns what is left when the reply ends.
func (ts *toolStream) end() (content string, calls []toolCall) {
	content, calls = ts.end1()
	content = ts.space(content, calls)
	if ts.calls == 0 {
		content += ts.ws
	}
	ts.ws = ""
	return content, calls
}

func (ts *toolStream) end1() (content string, calls []toolCall) {
	rest := ts.pending
	ts.pending = ""
	switch {
	case ts.tu.format == Llama3Tools && ts.whole:
		if c, ok := ts.tu.parseCall(rest); ok {
			ts.calls++
			return "", []toolCall{c}
		}
		ts.malformed++
	case ts.inCall: // a call never closed
		ts.malformed++
		rest = callOpen + rest
	}
	return rest, nil
}

// callsJSON is calls in OpenAI's shape; stream adds each call's index
// (from first).
func callsJSON(calls []toolCall, stream bool, first int) []map[string]any {
	out := make([]map[string]any, len(calls))
	for i, c := range calls {
		out[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
		if stream {
			out[i]["index"] = first + i
		}
	}
	return out
}
