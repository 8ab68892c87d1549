package llm_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// TestChatTemplateBasics: the features the model templates lean on, with
// outputs worked out by hand from Jinja2's rules.
func TestChatTemplateBasics(t *testing.T) {
	src := "{%- for m in messages %}\n  {{- '<' + m.role + '>' + m.content | trim }}\n{% endfor %}" +
		"{% if tools %}{{ tools[0] | tojson(indent=2) }}|{{ tools[0] | tojson }}{% endif %}" +
		"{{ strftime_now('%d %b %Y') }}{% if add_generation_prompt %}<assistant>{% endif %}"
	ct, err := llm.ParseChatTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	ct.Now = time.Date(2024, 7, 26, 12, 0, 0, 0, time.UTC)
	got, err := ct.Render([]llm.Message{{Role: "system", Content: " Be brief. "}, {Role: "user", Content: "héllo\n"}},
		llm.ChatOptions{AddGenerationPrompt: true, Tools: []json.RawMessage{json.RawMessage(`{"z": 1, "a": [1.5, "é\n"], "e": {}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<system>Be brief.\n<user>héllo\n" +
		"{\n  \"z\": 1,\n  \"a\": [\n    1.5,\n    \"é\\n\"\n  ],\n  \"e\": {}\n}|{\"z\": 1, \"a\": [1.5, \"é\\n\"], \"e\": {}}" +
		"26 Jul 2024<assistant>"
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	if _, err := ct.Render(nil, llm.ChatOptions{}); err != nil {
		t.Fatal(err)
	}
	raise, err := llm.ParseChatTemplate("{{ raise_exception('no system role') }}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raise.Render(nil, llm.ChatOptions{}); err == nil || !strings.Contains(err.Error(), "no system role") {
		t.Fatalf("raise_exception: %v", err)
	}
	if _, err := llm.ParseChatTemplate("{% for x in %}"); err == nil {
		t.Fatal("a broken template parsed")
	}
	// a template comes with a model file: hostile ones give errors
	for _, src := range []string{
		"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
		"{% for i in range(100000000) %}{% endfor %}",
		"{{ " + strings.Repeat("(", 500) + "1" + strings.Repeat(")", 500) + " }}",
		strings.Repeat("{% if true %}", 500) + "x" + strings.Repeat("{% endif %}", 500),
	} {
		ct, err := llm.ParseChatTemplate(src)
		if err == nil {
			_, err = ct.Render(nil, llm.ChatOptions{})
		}
		if err == nil {
			t.Errorf("%.60q: no error", src)
		}
	}
	// a macro recursing to a bounded depth still works, whitespace intact
	ct, err = llm.ParseChatTemplate("\n{%- macro f(n) -%}\n  {{ n }}{% if n < 5 %}{{ f(n + 1) }}{% endif %}\n{%- endmacro %}\n{{ f(0) }}|")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ct.Render(nil, llm.ChatOptions{}); err != nil || got != "012345|" {
		t.Fatalf("recursive macro: %q %v", got, err)
	}
}

// reference templates: the families the issue names, from the llama.cpp
// source the peer kit carries (models/templates); the vocab GGUFs' own
// templates are added to these.
var chatFamilies = map[string][2]string{ // file → bos_token, eos_token
	"meta-llama-Llama-3.1-8B-Instruct.jinja":  {"<|begin_of_text|>", "<|eot_id|>"},
	"meta-llama-Llama-3.2-3B-Instruct.jinja":  {"<|begin_of_text|>", "<|eot_id|>"},
	"meta-llama-Llama-3.3-70B-Instruct.jinja": {"<|begin_of_text|>", "<|eot_id|>"},
	"Qwen-Qwen2.5-7B-Instruct.jinja":          {"", "<|im_end|>"},
	"Qwen-Qwen3-0.6B.jinja":                   {"", "<|im_end|>"},
	"google-gemma-2-2b-it.jinja":              {"<bos>", "<eos>"},
	"google-gemma-4-31B-it.jinja":             {"<bos>", "<eos>"},
	"microsoft-Phi-3.5-mini-instruct.jinja":   {"<s>", "<|endoftext|>"},
	"HuggingFaceTB-SmolLM3-3B.jinja":          {"", "<|im_end|>"},
}

// chatFamilyTokens are the bos_token and eos_token of each family's
// tokenizer_config.json, matched on a template file's name (lower case,
// first match wins) for templates SWITCHYARD_CHAT_TEMPLATES names.
var chatFamilyTokens = []struct{ name, bos, eos string }{
	{"gemma", "<bos>", "<eos>"},
	{"phi-4-mini", "<|endoftext|>", "<|endoftext|>"},
	{"phi-3", "<s>", "<|endoftext|>"},
	{"smollm2", "<|im_start|>", "<|im_end|>"},
	{"smollm3", "", "<|im_end|>"},
	{"llama-3", "<|begin_of_text|>", "<|eot_id|>"},
	{"qwen", "", "<|im_end|>"},
}

func familyTokens(file string) ([2]string, bool) {
	file = strings.ToLower(file)
	for _, f := range chatFamilyTokens {
		if strings.Contains(file, f.name) {
			return [2]string{f.bos, f.eos}, true
		}
	}
	return [2]string{}, false
}

type chatCase struct {
	name, template string
	vars           json.RawMessage
}

// TestChatTemplatesMatchJinja2: real chat templates render byte for byte
// as Jinja2 renders them (python3 with jinja2, testdata/chat/render.py)
// on conversations with system prompts, several turns, tools and Qwen 3's
// thinking switch: the vocab GGUFs' own templates, the families' ones in
// the llama.cpp source of the peer kit, and every *.jinja file in the
// directory SWITCHYARD_CHAT_TEMPLATES names (templates of other projects
// kept outside the repo). Gemma 3's, Phi-4-mini's and SmolLM2's, with the
// other families', are TestChatTemplateFamiliesMatchJinja2's.
func TestChatTemplatesMatchJinja2(t *testing.T) {
	py := jinja2Python(t)
	templates := map[string]string{}
	eos := map[string][2]string{}
	// the vocab GGUFs' own templates
	vocabDir := shared.Path(t, "peers/llamacpp/vocab")
	files, _ := filepath.Glob(filepath.Join(vocabDir, "*.gguf"))
	for _, f := range files {
		g, err := gguf.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src, ok := g.String("tokenizer.chat_template")
		if !ok {
			continue
		}
		toks, _ := g.Meta["tokenizer.ggml.tokens"].([]any)
		text := func(key string) string {
			if id, ok := g.Uint(key); ok && id < uint64(len(toks)) {
				s, _ := toks[id].(string)
				return s
			}
			return ""
		}
		name := "gguf:" + filepath.Base(f)
		templates[name] = src
		eos[name] = [2]string{text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id")}
	}
	// the llama.cpp source's models/templates
	bundle := filepath.Join(filepath.Dir(vocabDir), "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle")
	if _, err := os.Stat(bundle); err == nil {
		if _, err := exec.LookPath("git"); err != nil {
			backendtest.SkipUnlessRequired(t, "llamacpp", "no git to read the llama.cpp source bundle")
		}
		repo := filepath.Join(t.TempDir(), "llama.cpp.git")
		if out, err := exec.Command("git", "clone", "-q", "--bare", bundle, repo).CombinedOutput(); err != nil {
			t.Fatalf("git clone %s: %v\n%s", bundle, err, out)
		}
		for f, tok := range chatFamilies {
			out, err := exec.Command("git", "--git-dir", repo, "show", "HEAD:models/templates/"+f).Output()
			if err != nil {
				t.Fatalf("models/templates/%s: %v", f, err)
			}
			templates["llama.cpp:"+f] = string(out)
			eos["llama.cpp:"+f] = tok
		}
	} else {
		backendtest.SkipUnlessRequired(t, "llamacpp", "no llama.cpp source bundle (peers/llamacpp/setup.sh)")
	}
	// more templates, from a directory the environment names
	if dir := os.Getenv("SWITCHYARD_CHAT_TEMPLATES"); dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
		if err != nil || len(files) == 0 {
			t.Fatalf("SWITCHYARD_CHAT_TEMPLATES=%s: no .jinja files (%v)", dir, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			name := "dir:" + filepath.Base(f)
			templates[name] = string(src)
			tok, ok := familyTokens(filepath.Base(f))
			if !ok {
				t.Logf("%s: no family known for its name, bos_token and eos_token empty", name)
			}
			eos[name] = tok
		}
	}
	matchJinja2(t, py, templates, eos)
}

// jinja2Python is a python3 that imports jinja2, or skips t (fails it
// when SWITCHYARD_REQUIRE_BACKENDS names jinja2).
func jinja2Python(t *testing.T) string {
	t.Helper()
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(c, "-c", "import jinja2").Run() == nil {
			return c
		}
	}
	backendtest.SkipUnlessRequired(t, "jinja2", "no python3 with jinja2 (apt-get install python3-jinja2)")
	return ""
}

// matchJinja2 renders every template (name → source, with its bos_token
// and eos_token) over testdata/chat/conversations.json with ours and with
// Jinja2 (testdata/chat/render.py) and fails on each rendering that is not
// byte-identical (both failing counts as the same where the errors agree:
// raise_exception's message, a TypeError, the use of an Undefined).
func matchJinja2(t *testing.T, py string, templates map[string]string, eos map[string][2]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "chat", "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []struct {
		Name string          `json:"name"`
		Vars json.RawMessage `json:"vars"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(templates))
	for n := range templates {
		names = append(names, n)
	}
	sort.Strings(names)
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	type pyCase struct {
		Template string          `json:"template"`
		Vars     json.RawMessage `json:"vars"`
		Now      int64           `json:"now"`
	}
	var cases []chatCase
	var in []pyCase
	for _, n := range names {
		for _, c := range convs {
			tok, _ := json.Marshal(map[string]string{"bos_token": eos[n][0], "eos_token": eos[n][1]})
			vars := append(bytes.TrimSuffix(tok, []byte("}")), ',')
			vars = append(vars, bytes.TrimPrefix(bytes.TrimSpace(c.Vars), []byte("{"))...)
			cases = append(cases, chatCase{n + " " + c.Name, templates[n], vars})
			in = append(in, pyCase{templates[n], vars, now.Unix()})
		}
	}
	input, _ := json.Marshal(in)
	cmd := exec.Command(py, filepath.Join("testdata", "chat", "render.py"))
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render.py: %v\n%s", err, stderr.String())
	}
	var want []struct {
		Out   *string `json:"out"`
		Error string  `json:"error"`
	}
	if err := json.Unmarshal(out, &want); err != nil || len(want) != len(cases) {
		t.Fatalf("render.py gave %d results for %d cases: %v", len(want), len(cases), err)
	}
	same, errs := 0, 0
	perTemplate := map[string][2]int{}
	for i, c := range cases {
		tn := c.name[:strings.LastIndexByte(c.name, ' ')]
		n := perTemplate[tn]
		n[1]++
		ct, err := llm.ParseChatTemplate(c.template)
		var got string
		if err == nil {
			ct.Now = now
			got, err = ct.RenderJSON(c.vars)
		}
		switch {
		case want[i].Out == nil && err != nil && !sameFailure(want[i].Error, err):
			t.Errorf("%s: Jinja2 fails with %s, we with another error: %v", c.name, want[i].Error, err)
		case want[i].Out == nil && err != nil:
			same++
			errs++
			n[0]++
		case want[i].Out != nil && err == nil && got == *want[i].Out:
			same++
			n[0]++
		case want[i].Out == nil:
			t.Errorf("%s: Jinja2 fails (%s), we render\n%s", c.name, want[i].Error, got)
		case err != nil:
			t.Errorf("%s: %v; Jinja2 renders\n%s", c.name, err, *want[i].Out)
		default:
			t.Errorf("%s: renders differently\n--- ours\n%s\n--- Jinja2\n%s", c.name, got, *want[i].Out)
		}
		perTemplate[tn] = n
	}
	for _, n := range names {
		t.Logf("%-50s %d of %d byte-identical", n, perTemplate[n][0], perTemplate[n][1])
	}
	t.Logf("%d of %d renderings byte-identical to Jinja2 (%d of them errors in both, raise_exception)", same, len(cases), errs)
}

// sameFailure says whether our error is Jinja2's (py, "Class: message"):
// a template's own raise_exception (TemplateError) by its message, a
// TypeError as one, an UndefinedError as the use of an undefined value.
func sameFailure(py string, err error) bool {
	class, msg, _ := strings.Cut(py, ": ")
	switch class {
	case "TemplateError":
		return strings.Contains(err.Error(), msg)
	case "TypeError":
		return strings.Contains(err.Error(), "TypeError")
	case "UndefinedError":
		return strings.Contains(err.Error(), "Undefined")
	}
	return true
}

// FuzzChatTemplate: any template source compiles or is refused, and renders
// a conversation with tools or fails, with an error, never a panic or a
// crash (recursion and nesting are bounded).
func FuzzChatTemplate(f *testing.F) {
	for _, s := range []string{
		"{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
		"{%- if tools %}{{ tools | tojson(indent=4) }}{% endif %}{{ messages[0]['content'].split('a')[-1].lstrip() }}",
		"{% set ns = namespace(x=0) %}{% for m in messages[::-1] %}{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x }}",
		"{% macro f(n) %}{{ n }}{% if n < 3 %}{{ f(n + 1) }}{% endif %}{% endmacro %}{{ f(0) }}{{ raise_exception('x') if false }}",
		"{{ strftime_now('%d %b %Y') }}{{ (1, 2) }}{{ {'a': [1.5, none, true]} | tojson }}",
		"{% for k, v in m.items() if 'x' not in k %}{{ '}}' ~ k + v.get('a', none) | trim }}{% endfor %}{% set s = -1 + 2 %}",
		"{{- [1, 'a\n'] | string + ('b' if x is defined else none) -}}{% if 'a' in messages[0].content + 'b' %}{% endif %}",
	} {
		f.Add(s)
	}
	msgs := []llm.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "héllo"}, {Role: "assistant", Content: "<think>x</think>y"}}
	tools := []json.RawMessage{json.RawMessage(`{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}}`)}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		ct, err := llm.ParseChatTemplate(src)
		if err != nil {
			return
		}
		_, _ = ct.Render(msgs, llm.ChatOptions{AddGenerationPrompt: true, Tools: tools})
	})
}
