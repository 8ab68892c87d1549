package llm_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// storyTemplate is a chat template for stories260K, which has none: the
// user's text, then the reply on the same line.
const storyTemplate = "{% for m in messages %}{% if m.role == 'assistant' %}{{ m.content }}\n{% elif m.role == 'user' %}{{ m.content }}{% endif %}{% endfor %}"

func openStories(t *testing.T) (*llm.Decoder, *llm.Vocab, func()) {
	t.Helper()
	g, dir := readGolden(t)
	_ = g
	path := filepath.Join(dir, "stories260K_f32.gguf")
	m, err := switchyard.Open(context.Background(), path, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := llm.LoadGGUFVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	return d, v, func() { m.Close() }
}

// TestGGUFVocabStories260K: the GGUF tokenizer gives the golden prompt ids
// and text, as llama2.c's tokenizer does.
func TestGGUFVocabStories260K(t *testing.T) {
	g, dir := readGolden(t)
	v, err := llm.LoadGGUFVocab(filepath.Join(dir, "stories260K_f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := v.Encode(g.Prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, g.PromptTokens) {
		t.Fatalf("Encode = %v, want %v", ids, g.PromptTokens)
	}
	if got := v.Decode(append([]int{v.BOS()}, g.Tokens...)); got != g.Text {
		t.Fatalf("decoded %q, want %q", got, g.Text)
	}
	if !v.IsEOG(v.EOS()) || v.IsEOG(v.BOS()) {
		t.Fatalf("EOG: EOS %d %v, BOS %d %v", v.EOS(), v.IsEOG(v.EOS()), v.BOS(), v.IsEOG(v.BOS()))
	}
}

// TestChatKeepsTheCache: a three-turn chat on stories260K (with a template
// supplied here) prefills only what is new each turn (every position the
// cache held is reused), and each greedy reply equals a fresh run's from
// the same ids.
func TestChatKeepsTheCache(t *testing.T) {
	d, v, done := openStories(t)
	defer done()
	tmpl, err := llm.ParseChatTemplate(storyTemplate)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := llm.ChatConfig{Template: tmpl, Sampling: llm.Options{Steps: 12}}
	c, err := llm.NewChat(ctx, d, v, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, user := range []string{"Once upon a time", "The cat", "One day, Lily"} {
		ids, err := c.Prompt(user)
		if err != nil {
			t.Fatal(err)
		}
		cached := c.Cached()
		var streamed strings.Builder
		var got []int
		turn, err := c.Send(ctx, user, func(tk llm.Token) error {
			streamed.WriteString(tk.Text)
			got = append(got, tk.ID)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("turn %d: %d prompt tokens, %d reused, %d prefilled, %d generated (%s): %q",
			i+1, turn.PromptTokens, turn.Reused, turn.Prefilled, turn.Generated, turn.Stop, turn.Reply)
		if streamed.String() != turn.Reply || turn.Generated == 0 {
			t.Fatalf("turn %d: streamed %q, reply %q", i+1, streamed.String(), turn.Reply)
		}
		if turn.Prefilled != turn.PromptTokens-turn.Reused || c.Cached() < turn.PromptTokens {
			t.Fatalf("turn %d: %+v, %d cached", i+1, turn, c.Cached())
		}
		if i == 0 && turn.Reused != 0 {
			t.Fatalf("first turn reused %d", turn.Reused)
		}
		if i > 0 && (turn.Reused != cached || turn.PromptTokens != len(ids) || turn.Prefilled >= turn.PromptTokens/2) {
			t.Fatalf("turn %d reused %d of %d (the cache held %d, Prompt gave %d ids)", i+1, turn.Reused, turn.PromptTokens, cached, len(ids))
		}
		// a fresh run from the same ids prefills them all and replies the same
		var fresh []int
		if _, err := d.GenerateIDs(ctx, ids, llm.Options{Steps: len(ids) + len(got)}, nil, func(tk llm.Token) error {
			if !tk.Prompt {
				fresh = append(fresh, tk.ID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(fresh) < len(got) || !slices.Equal(fresh[:len(got)], got) {
			t.Fatalf("turn %d: fresh run %v, chat %v", i+1, fresh, got)
		}
	}
	if len(c.Messages) != 6 || c.Messages[4].Content != "One day, Lily" {
		t.Fatalf("messages %+v", c.Messages)
	}
}
