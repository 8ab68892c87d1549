package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-hal/switchyard/llm/grammar"
)

// apiError is an error answered in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func errorf(status int, typ, code, param, format string, a ...any) *apiError {
	e := &apiError{status: status, Message: fmt.Sprintf(format, a...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	return e
}

func invalid(param, format string, a ...any) *apiError {
	return errorf(http.StatusBadRequest, "invalid_request_error", "invalid_value", param, format, a...)
}

func unsupported(param string) *apiError {
	return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", param,
		"the parameter %q is not supported by this server (it is refused rather than ignored)", param)
}

// Message is one chat message: a role (system, user, assistant or tool)
// and its text; an assistant turn's tool calls, a tool turn's call id.
type Message struct {
	Role    string
	Content string
	// ToolCalls are the calls an assistant turn made.
	ToolCalls []ToolCall
	// ToolCallID is the call a tool turn answers; Name the function's
	// name, when the client gives it.
	ToolCallID string
	Name       string
}

// ToolCall is a function call of an assistant turn: Arguments is JSON
// text (an object), as OpenAI's API passes it.
type ToolCall struct {
	ID, Name, Arguments string
}

// request is a completions or chat completions request, decoded and
// checked against what the server implements (not yet against a model:
// logit_bias ids and the context are checked when it is known).
type request struct {
	chat         bool
	model        string
	prompt       string    // completions
	messages     []Message // chat
	maxTokens    int       // 0: not given
	stop         []string
	stream       bool
	includeUsage bool
	seedGiven    bool
	sampling     sampling
	// logprobs: report each token's log probability, and the
	// topLogprobs most likely alternatives
	logprobs    bool
	topLogprobs int
	// format is response_format's grammar (json_object, json_schema);
	// formatType its type
	format     *grammar.Grammar
	formatType string
	// tools, and tool_choice: "auto", "none", "required" or "function"
	// (toolName)
	tools         []tool
	toolChoice    string
	toolName      string
	parallelTools bool
}

// Limits on what a request may ask, refused before anything is allocated
// for it.
const (
	maxStops      = 4
	maxStopLen    = 256
	maxBias       = 1024
	maxMessages   = 4096
	maxTokensEver = 1 << 24
	// maxTopLogprobs is OpenAI's limit for chat (completions: 5)
	maxTopLogprobs = 20
)

// The parameters each endpoint implements; any other key is refused
// (unsupported_parameter), never ignored. "user" is an end-user label
// with no effect on generation in OpenAI's API either, so it is accepted.
var (
	commonParams = map[string]bool{"model": true, "max_tokens": true, "temperature": true, "top_p": true, "top_k": true,
		"seed": true, "stop": true, "stream": true, "stream_options": true, "presence_penalty": true,
		"frequency_penalty": true, "logit_bias": true, "n": true, "user": true}
	// response_format on completions is an extension (OpenAI's
	// completions have none), as llama.cpp's server has it
	completionParams = map[string]bool{"prompt": true, "echo": true, "best_of": true, "logprobs": true, "response_format": true}
	chatParams       = map[string]bool{"messages": true, "max_completion_tokens": true, "response_format": true,
		"logprobs": true, "top_logprobs": true, "tools": true, "tool_choice": true, "parallel_tool_calls": true}
)

// decodeRequest parses and checks a request body. It never panics and
// allocates in proportion to the body (which the handler bounds).
func decodeRequest(body []byte, chat bool) (*request, *apiError) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		return nil, errorf(http.StatusBadRequest, "invalid_request_error", "invalid_json", "", "the body is not a JSON object: %v", err)
	}
	if raw == nil {
		return nil, errorf(http.StatusBadRequest, "invalid_request_error", "invalid_json", "", "the body is not a JSON object")
	}
	if dec.More() {
		return nil, errorf(http.StatusBadRequest, "invalid_request_error", "invalid_json", "", "the body has data after its JSON object")
	}
	r := &request{chat: chat}
	// null is the parameter's default: drop it
	for k, v := range raw {
		if string(bytes.TrimSpace(v)) == "null" {
			delete(raw, k)
		}
	}
	for _, k := range sortedKeys(raw) {
		own := completionParams
		if chat {
			own = chatParams
		}
		if !commonParams[k] && !own[k] {
			return nil, unsupported(k)
		}
	}
	if err := str(raw, "model", &r.model); err != nil {
		return nil, err
	}
	if r.model == "" {
		return nil, invalid("model", "model is required")
	}
	if chat {
		if err := r.decodeMessages(raw["messages"]); err != nil {
			return nil, err
		}
		if err := r.decodeTools(raw); err != nil {
			return nil, err
		}
		if err := boolean(raw, "logprobs", &r.logprobs); err != nil {
			return nil, err
		}
		if err := integer(raw, "top_logprobs", &r.topLogprobs, 0, maxTopLogprobs); err != nil {
			return nil, err
		}
		if _, ok := raw["top_logprobs"]; ok && !r.logprobs {
			return nil, invalid("top_logprobs", "top_logprobs needs logprobs true")
		}
		var mct int
		if err := integer(raw, "max_completion_tokens", &mct, 1, maxTokensEver); err != nil {
			return nil, err
		}
		if mct > 0 {
			r.maxTokens = mct
		}
	} else {
		if err := r.decodePrompt(raw["prompt"]); err != nil {
			return nil, err
		}
		if _, ok := raw["logprobs"]; ok {
			r.logprobs = true
			if err := integer(raw, "logprobs", &r.topLogprobs, 0, 5); err != nil {
				return nil, err
			}
		}
		var echo bool
		if err := boolean(raw, "echo", &echo); err != nil {
			return nil, err
		}
		if echo {
			return nil, unsupported("echo")
		}
		bestOf := 1
		if err := integer(raw, "best_of", &bestOf, 1, 1<<20); err != nil {
			return nil, err
		}
		if bestOf != 1 {
			return nil, unsupported("best_of")
		}
	}
	if v, ok := raw["response_format"]; ok {
		if err := r.decodeFormat(v); err != nil {
			return nil, err
		}
	}
	if r.format != nil && len(r.tools) > 0 && r.toolChoice != "none" {
		return nil, invalid("response_format", "response_format %s cannot be combined with tools unless tool_choice is \"none\"", r.formatType)
	}
	var mt int
	if err := integer(raw, "max_tokens", &mt, 1, maxTokensEver); err != nil {
		return nil, err
	}
	if mt > 0 {
		r.maxTokens = mt
	}
	n := 1
	if err := integer(raw, "n", &n, 1, 1<<20); err != nil {
		return nil, err
	}
	if n != 1 {
		return nil, unsupported("n")
	}
	if err := str(raw, "user", new(string)); err != nil {
		return nil, err
	}
	s := &r.sampling
	s.temperature = 1
	if err := number(raw, "temperature", &s.temperature, 0, 2); err != nil {
		return nil, err
	}
	s.topP = 1
	if err := number(raw, "top_p", &s.topP, 0, 1); err != nil {
		return nil, err
	}
	if err := integer(raw, "top_k", &s.topK, 0, 1<<30); err != nil {
		return nil, err
	}
	if err := number(raw, "presence_penalty", &s.presence, -2, 2); err != nil {
		return nil, err
	}
	if err := number(raw, "frequency_penalty", &s.frequency, -2, 2); err != nil {
		return nil, err
	}
	if v, ok := raw["seed"]; ok {
		var seed json.Number
		if err := json.Unmarshal(v, &seed); err != nil {
			return nil, invalid("seed", "seed must be an integer")
		}
		i, err := strconv.ParseInt(seed.String(), 10, 64)
		if err != nil {
			return nil, invalid("seed", "seed must be an integer that fits in 64 bits")
		}
		s.seed, r.seedGiven = uint64(i), true
	}
	if v, ok := raw["logit_bias"]; ok {
		var lb map[string]float64
		if err := json.Unmarshal(v, &lb); err != nil {
			return nil, invalid("logit_bias", "logit_bias must map token ids to numbers")
		}
		if len(lb) > maxBias {
			return nil, invalid("logit_bias", "logit_bias has %d entries, at most %d", len(lb), maxBias)
		}
		s.bias = make(map[int]float64, len(lb))
		for k, b := range lb {
			id, err := strconv.Atoi(k)
			if err != nil || id < 0 {
				return nil, invalid("logit_bias", "logit_bias key %q is not a token id", k)
			}
			if b < -100 || b > 100 || math.IsNaN(b) {
				return nil, invalid("logit_bias", "logit_bias value %v is outside [-100, 100]", b)
			}
			s.bias[id] = b
		}
	}
	if v, ok := raw["stop"]; ok {
		var one string
		if json.Unmarshal(v, &one) == nil {
			r.stop = []string{one}
		} else if err := json.Unmarshal(v, &r.stop); err != nil {
			return nil, invalid("stop", "stop must be a string or an array of strings")
		}
		if len(r.stop) > maxStops {
			return nil, invalid("stop", "stop has %d sequences, at most %d", len(r.stop), maxStops)
		}
		for _, st := range r.stop {
			if st == "" || len(st) > maxStopLen {
				return nil, invalid("stop", "a stop sequence must have 1 to %d bytes", maxStopLen)
			}
		}
	}
	if len(r.stop) > 0 && (r.format != nil || r.toolChoice == "required" || r.toolChoice == "function") {
		return nil, invalid("stop", "stop cannot be combined with a JSON response_format or a forced tool call: a stop sequence could cut the JSON the grammar guarantees")
	}
	if err := boolean(raw, "stream", &r.stream); err != nil {
		return nil, err
	}
	if v, ok := raw["stream_options"]; ok {
		var so map[string]json.RawMessage
		if err := json.Unmarshal(v, &so); err != nil {
			return nil, invalid("stream_options", "stream_options must be an object")
		}
		if !r.stream {
			return nil, invalid("stream_options", "stream_options is only allowed when stream is true")
		}
		for _, k := range sortedKeys(so) {
			if k != "include_usage" {
				return nil, unsupported("stream_options." + k)
			}
		}
		if err := boolean(so, "include_usage", &r.includeUsage); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *request) decodePrompt(v json.RawMessage) *apiError {
	if v == nil {
		return invalid("prompt", "prompt is required")
	}
	if json.Unmarshal(v, &r.prompt) == nil {
		return nil
	}
	var many []json.RawMessage
	if json.Unmarshal(v, &many) != nil {
		return invalid("prompt", "prompt must be a string")
	}
	if len(many) != 1 || json.Unmarshal(many[0], &r.prompt) != nil {
		// several prompts, or token-id prompts
		return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", "prompt",
			"prompt must be one string (an array of one string is accepted; several prompts and token-id prompts are not supported)")
	}
	return nil
}

func (r *request) decodeMessages(v json.RawMessage) *apiError {
	if v == nil {
		return invalid("messages", "messages is required")
	}
	var ms []map[string]json.RawMessage
	if err := json.Unmarshal(v, &ms); err != nil {
		return invalid("messages", "messages must be an array of objects")
	}
	if len(ms) == 0 || len(ms) > maxMessages {
		return invalid("messages", "messages must hold 1 to %d messages", maxMessages)
	}
	for i, m := range ms {
		p := fmt.Sprintf("messages[%d]", i)
		if m == nil {
			return invalid(p, "a message must be an object")
		}
		for _, k := range sortedKeys(m) {
			switch k {
			case "role", "content", "name", "tool_calls", "tool_call_id":
			default:
				return unsupported(p + "." + k)
			}
		}
		var msg Message
		if err := str(m, "role", &msg.Role); err != nil {
			return err
		}
		if err := msg.decodeToolFields(m, p); err != nil {
			return err
		}
		switch msg.Role {
		case "system", "user", "assistant", "tool":
		case "developer":
			msg.Role = "system"
		case "":
			return invalid(p+".role", "a message needs a role")
		default:
			return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", p+".role",
				"role %q is not supported (system, developer, user, assistant and tool are)", msg.Role)
		}
		c := m["content"]
		if (c == nil || string(bytes.TrimSpace(c)) == "null") && len(msg.ToolCalls) > 0 {
			c = json.RawMessage(`""`) // a turn of tool calls alone
		}
		if c == nil {
			return invalid(p+".content", "a message needs content")
		}
		if json.Unmarshal(c, &msg.Content) != nil {
			var parts []map[string]json.RawMessage
			if json.Unmarshal(c, &parts) != nil {
				return invalid(p+".content", "content must be a string or an array of text parts")
			}
			var sb strings.Builder
			for j, part := range parts {
				pp := fmt.Sprintf("%s.content[%d]", p, j)
				var typ, text string
				if part == nil || json.Unmarshal(part["type"], &typ) != nil {
					return invalid(pp, "a content part needs a type")
				}
				if typ != "text" || len(part) != 2 {
					return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", pp,
						"only text content parts are supported")
				}
				if json.Unmarshal(part["text"], &text) != nil {
					return invalid(pp+".text", "a text part needs text")
				}
				sb.WriteString(text)
			}
			msg.Content = sb.String()
		}
		r.messages = append(r.messages, msg)
	}
	return nil
}

func str(raw map[string]json.RawMessage, k string, dst *string) *apiError {
	if v, ok := raw[k]; ok && json.Unmarshal(v, dst) != nil {
		return invalid(k, "%s must be a string", k)
	}
	return nil
}

func boolean(raw map[string]json.RawMessage, k string, dst *bool) *apiError {
	if v, ok := raw[k]; ok && json.Unmarshal(v, dst) != nil {
		return invalid(k, "%s must be true or false", k)
	}
	return nil
}

func number(raw map[string]json.RawMessage, k string, dst *float64, lo, hi float64) *apiError {
	v, ok := raw[k]
	if !ok {
		return nil
	}
	if json.Unmarshal(v, dst) != nil || *dst < lo || *dst > hi {
		return invalid(k, "%s must be a number from %v to %v", k, lo, hi)
	}
	return nil
}

func integer(raw map[string]json.RawMessage, k string, dst *int, lo, hi int) *apiError {
	v, ok := raw[k]
	if !ok {
		return nil
	}
	var f float64
	if json.Unmarshal(v, &f) != nil || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return invalid(k, "%s must be an integer from %d to %d", k, lo, hi)
	}
	*dst = int(f)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// decodeFormat reads response_format: text, json_object, or json_schema
// (compiled here, so a schema keyword the grammar does not implement is
// refused naming it).
func (r *request) decodeFormat(v json.RawMessage) *apiError {
	var rf map[string]json.RawMessage
	if json.Unmarshal(v, &rf) != nil || rf == nil {
		return invalid("response_format", "response_format must be an object with a type")
	}
	if err := str(rf, "type", &r.formatType); err != nil || r.formatType == "" {
		return invalid("response_format.type", "response_format must be an object with a type")
	}
	own := map[string][]string{"text": {"type"}, "json_object": {"type"}, "json_schema": {"type", "json_schema"}}
	keys, ok := own[r.formatType]
	if !ok {
		return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", "response_format.type",
			"response_format type %q is not supported (text, json_object and json_schema are)", r.formatType)
	}
	for _, k := range sortedKeys(rf) {
		if !slices.Contains(keys, k) {
			return unsupported("response_format." + k)
		}
	}
	var err error
	switch r.formatType {
	case "json_object":
		r.format, err = grammar.JSONObject(nil)
	case "json_schema":
		var js map[string]json.RawMessage
		if json.Unmarshal(rf["json_schema"], &js) != nil || js == nil {
			return invalid("response_format.json_schema", "response_format.json_schema must be an object with a schema")
		}
		for _, k := range sortedKeys(js) {
			switch k {
			case "name", "description", "schema", "strict":
			default:
				return unsupported("response_format.json_schema." + k)
			}
		}
		if err := str(js, "name", new(string)); err != nil {
			return err
		}
		if err := str(js, "description", new(string)); err != nil {
			return err
		}
		if err := boolean(js, "strict", new(bool)); err != nil {
			return err
		}
		schema := js["schema"]
		if schema == nil {
			return invalid("response_format.json_schema.schema", "response_format.json_schema needs a schema")
		}
		r.format, err = grammar.CompileSchema(schema, nil)
		if err != nil {
			return schemaError("response_format.json_schema.schema", err)
		}
	}
	if err != nil {
		return invalid("response_format", "%v", err)
	}
	return nil
}

// schemaError is a schema the grammar refuses: unsupported_parameter
// naming the keyword (param is where the schema is), or invalid_value.
func schemaError(param string, err error) *apiError {
	var u *grammar.UnsupportedError
	if errors.As(err, &u) {
		at := param + strings.ReplaceAll(u.Path, "/", ".") + "." + u.Keyword
		return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", at, "%s: %v", param, err)
	}
	return invalid(param, "%s: %v", param, err)
}

// tool is a function the client offers the model.
type tool struct {
	raw    json.RawMessage // the tool object as given (for the chat template)
	name   string
	params json.RawMessage // its parameters' JSON schema; nil: none given
}

// maxTools bounds the tools of one request.
const maxTools = 128

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// decodeTools reads tools, tool_choice and parallel_tool_calls.
func (r *request) decodeTools(raw map[string]json.RawMessage) *apiError {
	r.parallelTools = true
	if err := boolean(raw, "parallel_tool_calls", &r.parallelTools); err != nil {
		return err
	}
	if v, ok := raw["tools"]; ok {
		var ts []json.RawMessage
		if json.Unmarshal(v, &ts) != nil {
			return invalid("tools", "tools must be an array of tool objects")
		}
		if len(ts) == 0 || len(ts) > maxTools {
			return invalid("tools", "tools must hold 1 to %d tools", maxTools)
		}
		seen := map[string]bool{}
		for i, t := range ts {
			p := fmt.Sprintf("tools[%d]", i)
			var obj map[string]json.RawMessage
			if json.Unmarshal(t, &obj) != nil || obj == nil {
				return invalid(p, "a tool must be an object")
			}
			for _, k := range sortedKeys(obj) {
				if k != "type" && k != "function" {
					return unsupported(p + "." + k)
				}
			}
			var typ string
			if err := str(obj, "type", &typ); err != nil {
				return err
			}
			if typ != "function" {
				return errorf(http.StatusBadRequest, "invalid_request_error", "unsupported_parameter", p+".type",
					"tool type %q is not supported (function is)", typ)
			}
			var fn map[string]json.RawMessage
			if json.Unmarshal(obj["function"], &fn) != nil || fn == nil {
				return invalid(p+".function", "a tool needs a function object")
			}
			for _, k := range sortedKeys(fn) {
				switch k {
				case "name", "description", "parameters", "strict":
				default:
					return unsupported(p + ".function." + k)
				}
			}
			tl := tool{raw: t}
			if json.Unmarshal(fn["name"], &tl.name) != nil || !toolNameRE.MatchString(tl.name) {
				return invalid(p+".function.name", "a function name must be 1 to 64 letters, digits, _ or -")
			}
			if seen[tl.name] {
				return invalid(p+".function.name", "the function %q is given twice", tl.name)
			}
			seen[tl.name] = true
			if err := str(fn, "description", new(string)); err != nil {
				return err
			}
			if err := boolean(fn, "strict", new(bool)); err != nil {
				return err
			}
			if ps, ok := fn["parameters"]; ok && string(bytes.TrimSpace(ps)) != "null" {
				var o map[string]json.RawMessage
				if json.Unmarshal(ps, &o) != nil || o == nil {
					return invalid(p+".function.parameters", "parameters must be a JSON schema object")
				}
				tl.params = ps
			}
			r.tools = append(r.tools, tl)
		}
	}
	v, ok := raw["tool_choice"]
	if !ok {
		r.toolChoice = "auto"
		return nil
	}
	if len(r.tools) == 0 {
		return invalid("tool_choice", "tool_choice needs tools")
	}
	if json.Unmarshal(v, &r.toolChoice) == nil {
		switch r.toolChoice {
		case "auto", "none", "required":
			return nil
		}
		return invalid("tool_choice", "tool_choice must be auto, none, required or a function")
	}
	var c struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(v, &c) != nil || c.Type != "function" {
		return invalid("tool_choice", "tool_choice must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\": ...}}")
	}
	r.toolChoice, r.toolName = "function", c.Function.Name
	for _, t := range r.tools {
		if t.name == r.toolName {
			return nil
		}
	}
	return invalid("tool_choice", "tool_choice names the function %q, which is not among tools", r.toolName)
}

// decodeToolFields reads a message's tool_calls, tool_call_id and name.
func (msg *Message) decodeToolFields(m map[string]json.RawMessage, p string) *apiError {
	if err := str(m, "tool_call_id", &msg.ToolCallID); err != nil {
		return err
	}
	if err := str(m, "name", &msg.Name); err != nil {
		return err
	}
	v, ok := m["tool_calls"]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil
	}
	if msg.Role != "assistant" {
		return invalid(p+".tool_calls", "only assistant messages have tool_calls")
	}
	var calls []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function *struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	if json.Unmarshal(v, &calls) != nil {
		return invalid(p+".tool_calls", "tool_calls must be an array of function calls")
	}
	if len(calls) > maxTools {
		return invalid(p+".tool_calls", "at most %d tool calls a message", maxTools)
	}
	for i, c := range calls {
		if c.Type != "function" || c.Function == nil || c.Function.Name == "" {
			return invalid(fmt.Sprintf("%s.tool_calls[%d]", p, i), "a tool call needs type function and a function name")
		}
		msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	return nil
}
