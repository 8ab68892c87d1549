package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	"github.com/switchyard-hal/switchyard/serve"
)

// hermesTemplate is a small chat template of our own in the Hermes
// style: the tools in a system turn, assistant calls in <tool_call> tags
// with their arguments as objects, tool results as tool turns.
const hermesTemplate = `{%- if tools %}<|im_start|>system
<tools>{% for t in tools %}{{ t | tojson }}{% endfor %}</tools>
Call a function with <tool_call>{"name": ..., "arguments": ...}</tool_call>.<|im_end|>
{% endif %}{%- for m in messages %}<|im_start|>{{ m.role }}
{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>
{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}
</tool_call>{% endfor %}{% else %}{{ m.content }}{% endif %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// TestTemplateChatTools: a template that renders tools gives the model
// tool support in its format; a conversation with an assistant's call
// (arguments as OpenAI's JSON text) and the tool's answer renders with
// the arguments as an object.
func TestTemplateChatTools(t *testing.T) {
	v, err := llm.LoadGGUFVocab(shared.Path(t, "peers/llamacpp/vocab/ggml-vocab-qwen2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := llm.ParseChatTemplate(hermesTemplate)
	if err != nil {
		t.Fatal(err)
	}
	chat, tools := templateChat(tmpl, v)
	if chat == nil || tools == nil || tools.Format != serve.HermesTools {
		t.Fatalf("tools %+v", tools)
	}
	msgs := []serve.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []serve.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city": "Paris"}`}}},
		{Role: "tool", ToolCallID: "call_1", Content: "sunny"},
	}
	ids, err := tools.Chat(msgs, []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"get_weather"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	text := v.Decode(ids)
	for _, want := range []string{`<tools>{"type": "function", "function": {"name": "get_weather"}}</tools>`,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "tool\nsunny", "assistant\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("rendered text lacks %q:\n%s", want, text)
		}
	}
	// a template without tools: none
	plain, _ := llm.ParseChatTemplate(`{% for m in messages %}{{ m.content }}{% endfor %}`)
	if _, tools := templateChat(plain, v); tools != nil {
		t.Fatal("tools for a template without them")
	}
}
