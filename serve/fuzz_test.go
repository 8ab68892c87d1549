package serve

import (
	"net/http"
	"testing"
)

// FuzzDecodeRequest: the request decoder never panics, answers every
// refusal with a 4xx apiError naming a type, and what it accepts is
// within the limits it promises.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":"Once upon a time","max_tokens":16,"temperature":0}`,
		`{"model":"m","prompt":["x"],"stream":true,"stream_options":{"include_usage":true},"stop":["a","b"],"seed":-3}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"logit_bias":{"5":-100},"top_p":0.5,"top_k":3}`,
		`{"model":"m","prompt":"a","suffix":"b"}`,
		`{"model":"m","prompt":"a","presence_penalty":2,"frequency_penalty":-2,"n":1,"user":"u","best_of":1,"echo":false}`,
		`{"model":"m","messages":[{"role":"tool","content":"x"}],"response_format":{"type":"text"}}`,
		`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"1"}],` +
			`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],"tool_choice":"required","parallel_tool_calls":false}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object","properties":{"a":{"enum":[1,"b",null]},"b":{"type":"array","items":{"$ref":"#/$defs/x"}}},"$defs":{"x":{"type":"integer"}}}}}}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`,
		`{"model":`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		r, e := decodeRequest(body, chat)
		if e != nil {
			if r != nil || e.status < 400 || e.status >= 500 || e.Type == "" || e.Message == "" {
				t.Fatalf("refusal %+v with request %v", e, r)
			}
			if e.status != http.StatusBadRequest {
				t.Fatalf("status %d", e.status)
			}
			return
		}
		if r.model == "" || len(r.stop) > maxStops || len(r.sampling.bias) > maxBias || r.maxTokens < 0 || r.maxTokens > maxTokensEver ||
			r.sampling.temperature < 0 || r.sampling.temperature > 2 || r.sampling.topP < 0 || r.sampling.topP > 1 || r.sampling.topK < 0 {
			t.Fatalf("accepted out of limits: %+v", r)
		}
		if len(r.tools) > 0 && !chat {
			t.Fatalf("a completions request with tools: %+v", r)
		}
		if len(r.stop) > 0 && (r.format != nil || r.toolChoice == "required" || r.toolChoice == "function") {
			t.Fatalf("stop beside a grammar: %+v", r)
		}
		if chat != (r.messages != nil) || (!chat && r.includeUsage && !r.stream) {
			t.Fatalf("accepted inconsistent: %+v", r)
		}
		for _, s := range r.stop {
			if s == "" || len(s) > maxStopLen {
				t.Fatalf("stop %q accepted", s)
			}
		}
	})
}
