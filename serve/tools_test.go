package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

// concatChat is a chat "template" for stories260K, which has none: the
// messages' text one after the other.
func concatChat(tok llm.Tokenizer) func([]serve.Message) ([]int, error) {
	return func(ms []serve.Message) ([]int, error) {
		var sb strings.Builder
		for _, m := range ms {
			sb.WriteString(m.Content)
		}
		return tok.Encode(sb.String(), true)
	}
}

// schemaValidator compiles schema with an independent JSON schema
// library (santhosh-tekuri/jsonschema).
func schemaValidator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validJSON parses text as exactly one JSON value and validates it.
func validJSON(s *jsonschema.Schema, text string) error {
	dec := json.NewDecoder(strings.NewReader(text))
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// sse posts a streaming request and returns its chunks (the JSON of each
// data line but [DONE]) and whether [DONE] ended it.
func sse(t *testing.T, url, body string) ([]map[string]any, bool) {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var chunks []map[string]any
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c["error"] != nil {
			t.Fatalf("error event %v", c["error"])
		}
		chunks = append(chunks, c)
	}
	return chunks, done
}

const personSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "id": {"type": "string", "pattern": "^[A-Z]{2}-\\d{2,4}$"},
    "age": {"type": "integer"},
    "mood": {"enum": ["happy", "sad", 3, null]},
    "pets": {"type": "array", "items": {"$ref": "#/$defs/pet"}, "maxItems": 2},
    "score": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "id", "age", "pets"],
  "additionalProperties": false,
  "$defs": {
    "pet": {"type": "object", "properties": {"kind": {"const": "cat"}, "legs": {"type": "integer"}}, "required": ["kind"], "additionalProperties": false}
  }
}`

// TestJSONSchemaHundredOfHundred: the "done when" line of structured
// output: at temperature 1.0, on a model that never learned JSON
// (stories260K, a 512-token vocabulary of story words), 100 of 100
// json_schema replies parse and validate against their schema — half of
// them streamed, four at a time.
func TestJSONSchemaHundredOfHundred(t *testing.T) {
	_, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) { m.Chat = concatChat(tok) })
	v := schemaValidator(t, personSchema)
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(personSchema)); err != nil {
		t.Fatal(err)
	}
	const n = 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	valid, stops := 0, 0
	var failures []string
	sem := make(chan struct{}, 4)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			body := fmt.Sprintf(`{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"temperature":1.0,"seed":%d,"max_tokens":150,`+
				`"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":%s}}`, i, compact.String())
			var text, finish string
			if i%2 == 0 {
				code, r := post(t, url+"/v1/chat/completions", body+"}")
				if code != 200 {
					t.Errorf("%d %v", code, r)
					return
				}
				c := r["choices"].([]any)[0].(map[string]any)
				text, finish = c["message"].(map[string]any)["content"].(string), c["finish_reason"].(string)
			} else {
				chunks, done := sse(t, url+"/v1/chat/completions", body+`,"stream":true}`)
				if !done {
					t.Errorf("stream %d without [DONE]", i)
				}
				for _, c := range chunks {
					for _, ch := range c["choices"].([]any) {
						ch := ch.(map[string]any)
						if s, ok := ch["delta"].(map[string]any)["content"].(string); ok {
							text += s
						}
						if f, ok := ch["finish_reason"].(string); ok {
							finish = f
						}
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err := validJSON(v, text); err != nil {
				failures = append(failures, fmt.Sprintf("%d: %q: %v", i, text, err))
				return
			}
			valid++
			if finish == "stop" {
				stops++
			}
			if i < 3 {
				var b bytes.Buffer
				_ = json.Compact(&b, []byte(text))
				t.Logf("sample %d (%d bytes, compacted): %s", i, len(text), b.String())
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d replies valid, %d ended with finish_reason stop", valid, n, stops)
	if valid != n || stops != n {
		t.Fatalf("%d of %d valid, %d stopped: %v", valid, n, stops, failures)
	}
}

func TestJSONObjectFormat(t *testing.T) {
	_, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) { m.Chat = concatChat(tok) })
	for i := range 5 {
		code, r := post(t, url+"/v1/chat/completions", fmt.Sprintf(`{"model":"stories","messages":[{"role":"user","content":"Tom"}],"seed":%d,"max_tokens":80,"response_format":{"type":"json_object"}}`, i))
		if code != 200 {
			t.Fatalf("%d %v", code, r)
		}
		text := r["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		var obj map[string]any
		if err := json.Unmarshal([]byte(text), &obj); err != nil || obj == nil {
			t.Fatalf("%q is not a JSON object: %v", text, err)
		}
	}
}

func TestStructuredRefusals(t *testing.T) {
	_, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) { m.Chat = concatChat(tok) })
	msgs := `"model":"stories","messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		body, code, param string
	}{
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"id":{"type":"string","format":"email"}}}}}`,
			"unsupported_parameter", "response_format.json_schema.schema.properties.id.format"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"integer","multipleOf":0.5}}}`,
			"unsupported_parameter", "response_format.json_schema.schema.multipleOf"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`, "invalid_value", "response_format.json_schema.schema"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":false}}`, "invalid_value", "response_format.json_schema.schema"},
		{`"response_format":{"type":"grammar"}`, "unsupported_parameter", "response_format.type"},
		{`"response_format":{"type":"json_object","schema":{}}`, "unsupported_parameter", "response_format.schema"},
		{`"response_format":{"type":"json_object"},"stop":["}"]`, "invalid_value", "stop"},
		{`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string","minLength":40}},"required":["a"]}}},"max_tokens":20`,
			"invalid_value", "max_tokens"},
		// stories260K has no chat template that takes tools: refused, not dropped
		{`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]`, "tools_unsupported", "tools"},
		{`"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}`, "invalid_value", "tool_choice"},
		{`"tool_choice":"auto"`, "invalid_value", "tool_choice"},
		{`"tools":[{"type":"retrieval"}]`, "unsupported_parameter", "tools[0].type"},
		{`"tools":[{"type":"function","function":{"name":"bad name"}}]`, "invalid_value", "tools[0].function.name"},
	} {
		code, r := post(t, url+"/v1/chat/completions", "{"+msgs+","+c.body+"}")
		e, _ := r["error"].(map[string]any)
		if code != 400 || e == nil || e["code"] != c.code || e["param"] != c.param {
			t.Errorf("%s: %d %v, want 400 %s %s", c.body, code, r, c.code, c.param)
		}
	}
}

// hermesModel serves stories260K with a tool "template" in the Hermes
// format: the tool names, then the messages.
func hermesModel(tok llm.Tokenizer) func(*serve.Model) {
	return func(m *serve.Model) {
		m.Chat = concatChat(tok)
		m.Tools = &serve.Tools{Format: serve.HermesTools, Chat: func(ms []serve.Message, tools []json.RawMessage) ([]int, error) {
			var sb strings.Builder
			for _, t := range tools {
				sb.Write(t)
			}
			for _, m := range ms {
				sb.WriteString(m.Content)
			}
			return tok.Encode(sb.String(), true)
		}}
	}
}

const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}}},` +
	`{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}]`

// TestForcedToolCalls: with tool_choice required or a named function,
// the grammar makes the reply one complete call, returned as tool_calls
// (whole, or in one streamed chunk), counted in /metrics.
func TestForcedToolCalls(t *testing.T) {
	_, _, tok := stories(t)
	_, url := start(t, nil, hermesModel(tok))
	params := schemaValidator(t, `{"type":"object","properties":{"city":{"type":"string","maxLength":10},"unit":{"enum":["c","f"]}},"required":["city","unit"],"additionalProperties":false}`)
	check := func(call map[string]any, want string) {
		t.Helper()
		fn := call["function"].(map[string]any)
		name, args := fn["name"].(string), fn["arguments"].(string)
		if call["type"] != "function" || !strings.HasPrefix(call["id"].(string), "call_") || (want != "" && name != want) {
			t.Fatalf("call %v", call)
		}
		if name == "get_weather" {
			if err := validJSON(params, args); err != nil {
				t.Fatalf("arguments %q: %v", args, err)
			}
		} else if name != "now" {
			t.Fatalf("call %v", call)
		}
	}
	calls := 0
	for i := range 6 {
		choice, want := `"required"`, ""
		if i%2 == 1 {
			choice, want = `{"type":"function","function":{"name":"get_weather"}}`, "get_weather"
		}
		body := fmt.Sprintf(`{"model":"stories","messages":[{"role":"user","content":"Once"}],"seed":%d,"max_tokens":100,"tools":%s,"tool_choice":%s`, i, weatherTools, choice)
		code, r := post(t, url+"/v1/chat/completions", body+"}")
		if code != 200 {
			t.Fatalf("%d %v", code, r)
		}
		c := r["choices"].([]any)[0].(map[string]any)
		msg := c["message"].(map[string]any)
		tcs, _ := msg["tool_calls"].([]any)
		if c["finish_reason"] != "tool_calls" || len(tcs) != 1 || msg["content"] != nil {
			t.Fatalf("reply %v", c)
		}
		check(tcs[0].(map[string]any), want)
		calls++
		chunks, done := sse(t, url+"/v1/chat/completions", body+`,"stream":true}`)
		var streamed []any
		finish := ""
		for _, ch := range chunks {
			for _, x := range ch["choices"].([]any) {
				x := x.(map[string]any)
				d := x["delta"].(map[string]any)
				if s, _ := d["content"].(string); s != "" {
					t.Fatalf("content %q beside a forced call", s)
				}
				if tc, ok := d["tool_calls"].([]any); ok {
					streamed = append(streamed, tc...)
				}
				if f, ok := x["finish_reason"].(string); ok {
					finish = f
				}
			}
		}
		if !done || finish != "tool_calls" || len(streamed) != 1 {
			t.Fatalf("stream: done %v finish %q calls %v", done, finish, streamed)
		}
		check(streamed[0].(map[string]any), want)
		if streamed[0].(map[string]any)["index"] != 0.0 {
			t.Fatalf("streamed call %v has no index 0", streamed[0])
		}
		calls++
	}
	if got := metricValue(t, metricsText(t, url), `switchyard_serve_tool_calls_total{model="stories",result="ok"}`); got != float64(calls) {
		t.Fatalf("tool_calls_total ok = %v, want %d", got, calls)
	}
	// auto: stories260K writes a story, returned as text
	code, r := post(t, url+"/v1/chat/completions", `{"model":"stories","messages":[{"role":"user","content":"Once"}],"temperature":0,"max_tokens":20,"tools":`+weatherTools+`}`)
	if code != 200 {
		t.Fatalf("%d %v", code, r)
	}
	if c := r["choices"].([]any)[0].(map[string]any); c["finish_reason"] != "length" || c["message"].(map[string]any)["content"] == "" {
		t.Fatalf("auto %v", c)
	}
}

// TestJSONSchemaRandomWeights: the same guarantee on a model with random
// weights (the test material's llama-2-tiny-random.gguf, a real
// 32,000-token sentencepiece vocabulary), through /v1/completions
// (response_format there is an extension, as in llama.cpp's server):
// 100 of 100 replies parse and validate.
func TestJSONSchemaRandomWeights(t *testing.T) {
	path := shared.Path(t, "testdata/llm/tiny-random/llama-2-tiny-random.gguf")
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	mod, err := eng.Open(ctx, path, &switchyard.OpenOptions{ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := llm.NewDecoder(mod)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := llm.LoadGGUFVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	s := serve.New(nil)
	if err := s.Add(&serve.Model{Name: "random", Decoder: dec, Tokenizer: tok, ContextLength: 256}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	url := listen(t, s)
	v := schemaValidator(t, personSchema)
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(personSchema)); err != nil {
		t.Fatal(err)
	}
	const n = 100
	valid := 0
	for i := range n {
		body := fmt.Sprintf(`{"model":"random","prompt":"A person:","temperature":1.0,"seed":%d,"max_tokens":120,"response_format":{"type":"json_schema","json_schema":{"name":"person","schema":%s}}}`, i, compact.String())
		code, r := post(t, url+"/v1/completions", body)
		if code != 200 {
			t.Fatalf("%d %v", code, r)
		}
		c := r["choices"].([]any)[0].(map[string]any)
		text := c["text"].(string)
		if err := validJSON(v, text); err != nil || c["finish_reason"] != "stop" {
			t.Fatalf("%d: %q (%v): %v", i, text, c["finish_reason"], err)
		}
		valid++
		if i == 0 {
			t.Logf("sample: %s", text)
		}
	}
	t.Logf("%d of %d valid", valid, n)
}

// TestForcedToolCallLlama3: in the Llama 3 format the reply is the bare
// call object {"name", "parameters"}, returned as tool_calls.
func TestForcedToolCallLlama3(t *testing.T) {
	_, _, tok := stories(t)
	_, url := start(t, nil, func(m *serve.Model) {
		hermesModel(tok)(m)
		m.Tools.Format = serve.Llama3Tools
	})
	for i := range 3 {
		body := fmt.Sprintf(`{"model":"stories","messages":[{"role":"user","content":"Once"}],"seed":%d,"max_tokens":100,"tools":%s,"tool_choice":{"type":"function","function":{"name":"get_weather"}}}`, i, weatherTools)
		code, r := post(t, url+"/v1/chat/completions", body)
		if code != 200 {
			t.Fatalf("%d %v", code, r)
		}
		c := r["choices"].([]any)[0].(map[string]any)
		tcs, _ := c["message"].(map[string]any)["tool_calls"].([]any)
		if c["finish_reason"] != "tool_calls" || len(tcs) != 1 {
			t.Fatalf("reply %v", c)
		}
		fn := tcs[0].(map[string]any)["function"].(map[string]any)
		var args struct {
			City *string `json:"city"`
			Unit string  `json:"unit"`
		}
		if fn["name"] != "get_weather" || json.Unmarshal([]byte(fn["arguments"].(string)), &args) != nil || args.City == nil || (args.Unit != "c" && args.Unit != "f") {
			t.Fatalf("call %v", fn)
		}
	}
}
