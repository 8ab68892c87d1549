package llm_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// The chat templates of the model families issue #27 names come from a
// package CI can install (.ci/install.d/chattemplates.sh), never from the
// repository: the npm package @huggingface/ollama-utils 0.0.18 (MIT) keeps
// in src/chat-template-automap.ts, for each model of Ollama's library, the
// chat_template its GGUF carries (the Hugging Face tokenizer_config.json's,
// which llama.cpp's converter copies unchanged). Each template is pinned
// by size and SHA-256, so a different package cannot pass as these.
const (
	chatTemplatePackage = "ollama-utils-0.0.18"
	chatTemplateFile    = "package/src/chat-template-automap.ts"
	chatTemplateBackend = "chat-templates"
)

// familyTemplates: the templates the test needs, by the package's model
// name. Llama 3.1, 3.2, Qwen 2.5 and Qwen 3's are byte-identical to the
// copies in llama.cpp's models/templates (Meta's and Qwen's own), Gemma 3's
// to ggml-org/gemma-3-1b-it-GGUF's and to the Go module
// github.com/ollama/ollama v0.17.4's template/index.json (gemma3-instruct).
var familyTemplates = []struct {
	family, model string
	size          int
	sha256        string
	bos, eos      string
}{
	{"Llama-3.1/3.3-Instruct", "library/llama3.1:8b", 4614, "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65", "<|begin_of_text|>", "<|eot_id|>"},
	{"Llama-3.2-Instruct", "library/llama3.2:3b", 3827, "5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4", "<|begin_of_text|>", "<|eot_id|>"},
	{"Qwen2.5-Instruct", "library/qwen2.5-coder:1.5b", 2507, "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f", "", "<|im_end|>"},
	{"Qwen2.5-0.5B-Instruct", "library/qwen2.5:0.5b", 2509, "d5495a1e5db0611132a97e46a65dbb64a642a499421228b9c8b93229097fa9a4", "", "<|im_end|>"},
	{"Qwen3", "library/qwen3:0.6b", 4116, "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5", "", "<|im_end|>"},
	{"Gemma-3-it", "library/gemma3:270m", 1532, "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4", "<bos>", "<eos>"},
	// Gemma 3 1B's older template: it subscripts plain-string content
	// with ['text'], which Jinja2 makes Undefined (an error where used)
	{"Gemma-3-1b-it (older)", "library/gemma3:1b", 1375, "5437d0ad30bb8db69f45cd62c6e02d4269ee617ec9637c9650f8f04051bd9dbc", "<bos>", "<eos>"},
	{"Phi-4-mini-instruct", "library/phi4-mini:3.8b", 423, "febf589225c9728ab791f52e8897d7607a823d45368f0a4c92fa68997b40cce9", "<|endoftext|>", "<|endoftext|>"},
	{"SmolLM2-Instruct", "library/smollm2:135m", 368, "872be49dbb638044ad01b60388f48d469ff2980e5f0dccdc22ec907db54d0788", "<|im_start|>", "<|im_end|>"},
}

// chatTemplateDir is where .ci/install.d/chattemplates.sh installs the
// package: SWITCHYARD_CHAT_TEMPLATE_CACHE, else ~/.cache/switchyard/chat-templates.
func chatTemplateDir() string {
	if d := os.Getenv("SWITCHYARD_CHAT_TEMPLATE_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "switchyard", "chat-templates")
}

// TestChatTemplateFamiliesMatchJinja2: the chat templates of Llama 3.1 and
// 3.2, Qwen 2.5, Qwen 3, Gemma 3, Phi-4-mini and SmolLM2, as the installed
// package carries them and verified by content, render every conversation
// of testdata/chat (system prompts, several turns, tools, Qwen 3 with
// thinking on and off) byte for byte as Jinja2 does. Without the package
// it skips, unless SWITCHYARD_REQUIRE_SHARED=1 or SWITCHYARD_REQUIRE_BACKENDS
// names chat-templates (CI: the install script sets the latter).
func TestChatTemplateFamiliesMatchJinja2(t *testing.T) {
	py := jinja2Python(t)
	path := filepath.Join(chatTemplateDir(), chatTemplatePackage, chatTemplateFile)
	src, err := os.ReadFile(path)
	if err != nil {
		reason := fmt.Sprintf("the npm package @huggingface/ollama-utils@0.0.18 is not installed (%v; run .ci/install.d/chattemplates.sh)", err)
		if shared.Required() {
			t.Fatalf("%s: %s, and SWITCHYARD_REQUIRE_SHARED=1", chatTemplateBackend, reason)
		}
		backendtest.SkipUnlessRequired(t, chatTemplateBackend, reason)
		return
	}
	byModel, err := automapTemplates(string(src))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	templates := map[string]string{}
	toks := map[string][2]string{}
	for _, f := range familyTemplates {
		tmpl, ok := byModel[f.model]
		if !ok {
			t.Fatalf("%s: no template for %s (%s)", path, f.model, f.family)
		}
		sum := sha256.Sum256([]byte(tmpl))
		if len(tmpl) != f.size || hex.EncodeToString(sum[:]) != f.sha256 {
			t.Fatalf("%s: %s's template is %d bytes, sha256 %x; want %d bytes, %s", path, f.model, len(tmpl), sum, f.size, f.sha256)
		}
		name := f.family + " (" + f.model + ")"
		templates[name] = tmpl
		toks[name] = [2]string{f.bos, f.eos}
	}
	matchJinja2(t, py, templates, toks)
}

var automapEntry = regexp.MustCompile(`\bmodel:\s*"([^"\\]*)",\s*gguf:\s*`)

// automapTemplates reads the model → gguf template pairs of the package's
// TypeScript table (each gguf value one JavaScript string literal).
func automapTemplates(src string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range automapEntry.FindAllStringSubmatchIndex(src, -1) {
		model := src[m[2]:m[3]]
		s, _, err := jsString(src[m[1]:])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", model, err)
		}
		out[model] = s
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no model/gguf entries")
	}
	return out, nil
}

// jsString decodes the JavaScript string literal at the start of s,
// returning it and the bytes it took.
func jsString(s string) (string, int, error) {
	if s == "" || s[0] != '"' && s[0] != '\'' {
		return "", 0, fmt.Errorf("not a string literal")
	}
	q := s[0]
	var sb strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return sb.String(), i + 1, nil
		case c == '\n':
			return "", 0, fmt.Errorf("newline in a string literal")
		case c != '\\':
			sb.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'v':
			sb.WriteByte('\v')
		case '0':
			sb.WriteByte(0)
		case '\\', '\'', '"':
			sb.WriteByte(e)
		case 'x', 'u':
			n := 2
			if e == 'u' {
				n = 4
			}
			if i+n > len(s) {
				return "", 0, fmt.Errorf("short \\%c escape", e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil {
				return "", 0, fmt.Errorf("bad \\%c escape %q", e, s[i:i+n])
			}
			i += n
			r := rune(v)
			if utf8.RuneLen(r) < 0 { // a lone surrogate half: never in these templates
				return "", 0, fmt.Errorf("\\u%04x: surrogate", v)
			}
			sb.WriteRune(r)
		default:
			return "", 0, fmt.Errorf("unknown escape \\%c", e)
		}
	}
	return "", 0, fmt.Errorf("unterminated string literal")
}

func TestJSString(t *testing.T) {
	for in, want := range map[string]string{
		`"a\nb\\c\"d"x`:     "a\nb\\c\"d",
		`'{{ \'x\' }}\t'`:   "{{ 'x' }}\t",
		`"\u00e9\x41é"`:     "éAé",
		`''`:                "",
		`"{% if a %}\r\0"`:  "{% if a %}\r\x00",
		`'say "hi"' + more`: `say "hi"`,
	} {
		got, n, err := jsString(in)
		if err != nil || got != want || in[n-1] != in[0] {
			t.Errorf("jsString(%s) = %q, %d, %v; want %q", in, got, n, err, want)
		}
	}
	for _, in := range []string{``, `x`, `"abc`, `"a\qb"`, `"\u12"`, `"\uzzzz"`, "'a\nb'", `"\ud800"`, `"a\`} {
		if got, _, err := jsString(in); err == nil {
			t.Errorf("jsString(%s) = %q, want an error", in, got)
		}
	}
	m, err := automapTemplates(`[{ model: "a:1", gguf: "x\ny", ollama: {} }, { model: "b", gguf: 'z' }]`)
	if err != nil || len(m) != 2 || m["a:1"] != "x\ny" || m["b"] != "z" {
		t.Errorf("automapTemplates: %q %v", m, err)
	}
}
