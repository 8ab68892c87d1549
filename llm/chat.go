package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// ChatConfig sets up a Chat.
type ChatConfig struct {
	// System, when not empty, is the system prompt (the first message).
	System string
	// Template renders the conversation; nil means the vocabulary's own
	// (the GGUF file's tokenizer.chat_template).
	Template *ChatTemplate
	// Options are the template's other variables (tools, enable_thinking;
	// BOS and EOS default to the vocabulary's texts).
	// AddGenerationPrompt is always set.
	Options ChatOptions
	// Sampling: temperature, top-k, top-p and seed as for Generate; Steps
	// is the most tokens one reply may have (0: until an end-of-turn
	// token or the context is full).
	Sampling Options
}

// Chat is a multi-turn conversation with a decoder that keeps the key/value
// cache between turns: each turn renders the whole conversation with the
// chat template. When the rendering begins with the text the cache holds
// (the last prompt and the reply as sampled), only the rest — the end of
// the reply's turn, the new user turn and the start of the next reply —
// is tokenized and prefilled, so the cache keeps the reply's tokens as
// the model sampled them (re-tokenizing a reply can cut it differently:
// a random Qwen2.5 reply did, and its last 8 tokens were prefilled
// again). Otherwise (a template that renders history differently, such
// as Qwen 3 dropping past reasoning) the whole conversation is tokenized
// and only the tokens after the longest prefix already in the cache are
// prefilled. The reply ends at the vocabulary's end-of-generation tokens
// (EOS, EOT, <|im_end|>, ...).
type Chat struct {
	d        *Decoder
	v        *Vocab
	tmpl     *ChatTemplate
	opts     ChatOptions
	sampling Options
	rng      *rand.Rand
	// Messages is the conversation so far.
	Messages []Message
	cache    *kvCache
	fed      []int  // the tokens the cache holds
	fedText  string // their text: the rendered prompt and the reply's pieces fed
}

// Turn reports one exchange.
type Turn struct {
	Reply        string
	PromptTokens int           // tokens of the whole rendered conversation
	Reused       int           // of those, already in the cache
	Prefilled    int           // prefilled this turn: PromptTokens - Reused
	Generated    int           // reply tokens sampled
	Prefill      time.Duration // the prefill step
	Decode       time.Duration // the reply's decode steps
	// Stop says why the reply ended: "eog" (an end-of-generation token),
	// "length" (Sampling.Steps tokens) or "context" (the cache is full).
	Stop string
}

// NewChat starts a conversation on d with v's tokenizer; Close it.
func NewChat(ctx context.Context, d *Decoder, v *Vocab, cfg ChatConfig) (*Chat, error) {
	t := cfg.Template
	if t == nil {
		if v.ChatTemplate() == "" {
			return nil, errors.New("llm: the model has no chat template (tokenizer.chat_template): give one")
		}
		var err error
		if t, err = ParseChatTemplate(v.ChatTemplate()); err != nil {
			return nil, err
		}
	}
	c := &Chat{d: d, v: v, tmpl: t, opts: cfg.Options, sampling: cfg.Sampling}
	c.opts.AddGenerationPrompt = true
	if c.opts.BOS == "" && v.BOS() >= 0 {
		c.opts.BOS = v.Text(v.BOS())
	}
	if c.opts.EOS == "" && v.EOS() >= 0 {
		c.opts.EOS = v.Text(v.EOS())
	}
	seed := cfg.Sampling.Seed
	c.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	if cfg.System != "" {
		c.Messages = append(c.Messages, Message{Role: "system", Content: cfg.System})
	}
	var err error
	if c.cache, err = d.emptyCache(ctx); err != nil {
		return nil, err
	}
	c.cache.recycle = true // each step's logits are sampled before the next and not kept
	return c, nil
}

// Close frees the cache.
func (c *Chat) Close() error {
	c.cache.close()
	c.cache = nil
	return nil
}

// Cached is the number of positions the cache holds.
func (c *Chat) Cached() int { return len(c.fed) }

// Prompt renders and tokenizes the conversation with one more user
// message and the start of the reply: the ids the next Send would feed.
func (c *Chat) Prompt(user string) ([]int, error) {
	ids, _, err := c.prompt(user)
	return ids, err
}

// prompt is Prompt, with the rendered text.
func (c *Chat) prompt(user string) ([]int, string, error) {
	msgs := append(append([]Message(nil), c.Messages...), Message{Role: "user", Content: user})
	text, err := c.tmpl.Render(msgs, c.opts)
	if err != nil {
		return nil, "", err
	}
	if len(c.fed) > 0 && c.fedText != "" && len(text) > len(c.fedText) && strings.HasPrefix(text, c.fedText) {
		// the cache holds the start of this rendering: only the rest is new
		if more, err := c.v.Tokenize(text[len(c.fedText):], false, true); err == nil && len(more) > 0 {
			return append(c.fed[:len(c.fed):len(c.fed)], more...), text, nil
		}
	}
	// BOS as the model asks, unless the template wrote it already
	bos := c.v.AddBOS() && !(c.opts.BOS != "" && strings.HasPrefix(text, c.opts.BOS))
	ids, err := c.v.Tokenize(text, bos, true)
	if err != nil {
		return nil, "", err
	}
	if len(ids) == 0 {
		return nil, "", errors.New("llm: the chat template rendered no tokens")
	}
	return ids, text, nil
}

// Send adds a user message and generates the reply, calling yield with
// each reply token as it is sampled (Token.Pos counts from the start of
// the conversation). The reply is added to Messages.
func (c *Chat) Send(ctx context.Context, user string, yield func(Token) error) (*Turn, error) {
	if c.cache == nil {
		return nil, errors.New("llm: the chat is closed")
	}
	ids, prompt, err := c.prompt(user)
	if err != nil {
		return nil, err
	}
	if limit := c.d.context; limit > 0 && len(ids) >= limit {
		return nil, fmt.Errorf("%w: the conversation is %d tokens, the context %d", ErrContext, len(ids), limit)
	}
	// reuse the cached prefix; at least one token is fed for the logits
	common := 0
	for common < min(len(ids)-1, len(c.fed)) && ids[common] == c.fed[common] {
		common++
	}
	if common < len(c.fed) {
		cache, err := c.d.trim(c.cache, common)
		if err != nil {
			// a cache that cannot be cut back starts over
			c.cache.close()
			if cache, err = c.d.emptyCache(ctx); err != nil {
				c.cache = nil
				return nil, err
			}
			cache.recycle = true
			common = 0
		}
		c.cache, c.fed, c.fedText = cache, c.fed[:common], ""
	}
	turn := &Turn{PromptTokens: len(ids), Reused: common, Prefilled: len(ids) - common}
	feed := ids[common:]
	feedText, first := prompt, true // the text feed adds to the cache
	var reply []int
	var text strings.Builder
	for {
		if err := ctx.Err(); err != nil {
			return turn, err
		}
		start := time.Now()
		logits, next, err := c.d.step(ctx, feed, c.cache)
		if err != nil {
			return turn, fmt.Errorf("llm: chat position %d: %w", len(c.fed)+len(feed), err)
		}
		c.cache = next
		c.fed = append(c.fed, feed...)
		if first {
			c.fedText, first = prompt, false // the whole rendering, old and new
		} else {
			c.fedText += feedText
		}
		id := sample(logits, c.sampling, c.rng)
		if turn.Prefill == 0 {
			turn.Prefill = time.Since(start)
		} else {
			turn.Decode += time.Since(start)
		}
		if c.v.IsEOG(id) {
			turn.Stop = "eog"
			break
		}
		reply = append(reply, id)
		turn.Generated++
		piece := string(c.v.TokenBytes(id, false))
		text.WriteString(piece)
		if err := yield(Token{Pos: len(c.fed), ID: id, Text: piece}); err != nil {
			c.finish(user, text.String())
			turn.Reply = text.String()
			return turn, err
		}
		if c.sampling.Steps > 0 && len(reply) >= c.sampling.Steps {
			turn.Stop = "length"
			break
		}
		if limit := c.d.context; limit > 0 && len(c.fed)+1 >= limit {
			turn.Stop = "context"
			break
		}
		feed, feedText = []int{id}, piece
	}
	turn.Reply = text.String()
	c.finish(user, turn.Reply)
	return turn, nil
}

// finish records the exchange.
func (c *Chat) finish(user, reply string) {
	c.Messages = append(c.Messages, Message{Role: "user", Content: user}, Message{Role: "assistant", Content: reply})
}
