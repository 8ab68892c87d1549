package serve_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/serve"
)

// TestOpenAINodeClient drives the server with the official OpenAI client
// (npm "openai", installed by .ci/install.d/openai.sh into
// SWITCHYARD_OPENAI_NODE_DIR): models, completions whole and streamed with
// usage, stop sequences, seeds, refusals (an unsupported parameter, the
// context, an unknown model, a model without a chat template, a malformed
// body), chat whole and streamed, and a stream aborted mid-way. It skips
// where node or the package is missing unless SWITCHYARD_REQUIRE_BACKENDS
// names openai-node.
func TestOpenAINodeClient(t *testing.T) {
	dir := os.Getenv("SWITCHYARD_OPENAI_NODE_DIR")
	if dir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, ".cache", "switchyard", "openai-node")
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		backendtest.SkipUnlessRequired(t, "openai-node", "node is not installed")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		backendtest.SkipUnlessRequired(t, "openai-node", "the openai npm package is not in "+dir+" (see .ci/install.d/openai.sh)")
	}
	g, dec, tok := stories(t)
	s := serve.New(nil)
	for _, m := range []*serve.Model{
		{Name: "stories", Decoder: dec, Tokenizer: tok, ContextLength: 512},
		// a stand-in chat template (the messages' text, joined) to drive
		// the chat endpoint until the models' own templates are wired
		{Name: "stories-chat", Decoder: dec, Tokenizer: tok, ContextLength: 512, Chat: func(ms []serve.Message) ([]int, error) {
			var sb strings.Builder
			for _, m := range ms {
				sb.WriteString(m.Content)
			}
			return tok.Encode(sb.String(), true)
		}},
	} {
		if err := s.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	s.SetReady()
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Close()
	cfg, _ := json.Marshal(map[string]any{"baseURL": ts.URL, "model": "stories", "chatModel": "stories-chat", "prompt": g.Prompt,
		"maxTokens": g.Steps - len(g.PromptTokens) + 1, "want": strings.TrimPrefix(g.Text, g.Prompt)})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "openai_client.cjs"))
	cmd.Env = append(os.Environ(), "SWITCHYARD_OPENAI_NODE_DIR="+dir, "SERVE_TEST="+string(cfg))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	// the aborted stream's slot is freed
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := metricsText(t, ts.URL)
		if metricValue(t, m, `switchyard_serve_active_sequences{model="stories"}`) == 0 && metricValue(t, m, `switchyard_serve_cancelled_total{model="stories"}`) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the aborted stream still holds its slot or was not counted:\n%s", m)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
