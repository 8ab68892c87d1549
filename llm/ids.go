package llm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// IDRun asks GenerateIDs for more than the tokens.
type IDRun struct {
	// Logits, when set, is called with the logits row of every step in
	// order (the row whose argmax is the next token; it is reused after
	// the call returns).
	Logits func(row []float32) error
	// PromptLogits: the prefill gives Logits a row for every prompt
	// position (teacher forcing; the last is the first token's row), then
	// the steps one each — llama.cpp's generate.mjs --prompt-logits layout.
	PromptLogits bool
}

// GenerateIDs runs the token loop from prompt token ids used exactly as
// given (nothing is added: put a BOS id first yourself), with no
// tokenizer: for a model whose tokenizer is not read, and to compare with
// llama.cpp's runs from ids. As in Generate, Steps counts positions,
// prompt included; the prompt is prefilled in one step, then one step per
// token. Unlike Generate, no id ends the run early (llama.cpp's
// generate.mjs does not stop at EOS either). yield sees every token
// (prompt ones with Prompt set) with Text empty; res.Tokens holds the
// prompt's ids after the first and the generated ones.
// run (nil: nothing more) asks for the logits of every step.
func (d *Decoder) GenerateIDs(ctx context.Context, prompt []int, o Options, run *IDRun, yield func(Token) error) (*Result, error) {
	steps, err := d.positions(&o)
	if err != nil {
		return nil, err
	}
	if len(prompt) == 0 {
		return nil, fmt.Errorf("llm: an empty prompt")
	}
	if len(prompt) > steps {
		return nil, fmt.Errorf("%w: the prompt has %d tokens, more than the %d positions asked", ErrContext, len(prompt), steps)
	}
	if err := d.checkIDs(prompt); err != nil {
		return nil, err
	}
	p := append([]int(nil), prompt...)
	res := &Result{PromptTokens: p}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	cache, err := d.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	defer cache.close()
	// the logits are sampled before the next step and kept by none but a
	// Logits callback
	cache.recycle = run == nil || run.Logits == nil
	for pos := 1; pos < len(p); pos++ {
		res.Tokens = append(res.Tokens, p[pos])
		if err := yield(Token{Pos: pos, ID: p[pos], Prompt: true}); err != nil {
			return res, err
		}
	}
	feed := p
	for pos := len(p); pos <= steps; pos++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		rows := 1 // the last position's logits, unless every prompt row is asked for
		if pos == len(p) && run != nil && run.Logits != nil && run.PromptLogits {
			rows = 0
		}
		all, v, next, err := d.stepRows(ctx, feed, cache, rows)
		if err != nil {
			return res, fmt.Errorf("llm: position %d: %w", pos, err)
		}
		logits := all[len(all)-v:]
		id := sample(logits, o, rng)
		if pos == len(p) {
			res.Prefill = time.Since(start)
		} else {
			res.Decode += time.Since(start)
			res.Generated++
		}
		cache = next
		if run != nil && run.Logits != nil {
			rows := logits // the last position's row
			if pos == len(p) && run.PromptLogits {
				rows = all // every prompt position's, the last one's among them
			}
			for r := 0; r < len(rows)/v; r++ {
				if err := run.Logits(rows[r*v : (r+1)*v]); err != nil {
					return res, err
				}
			}
		}
		res.Tokens = append(res.Tokens, id)
		if err := yield(Token{Pos: pos, ID: id}); err != nil {
			return res, err
		}
		feed = []int{id}
	}
	return res, nil
}

// PromptLogits runs ids (prompt ids used as given) in one step from an
// empty cache and returns the logits of every position, row-major
// [len(ids), vocab]: teacher forcing, to compare a model's logits with
// another engine's over a fixed sequence.
func (d *Decoder) PromptLogits(ctx context.Context, ids []int) ([]float32, int, error) {
	if len(ids) == 0 {
		return nil, 0, fmt.Errorf("llm: an empty sequence")
	}
	if d.context > 0 && len(ids) > d.context {
		return nil, 0, fmt.Errorf("%w: %d positions, the model's context is %d", ErrContext, len(ids), d.context)
	}
	if err := d.checkIDs(ids); err != nil {
		return nil, 0, err
	}
	cache, err := d.emptyCache(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer cache.close()
	all, v, _, err := d.stepAll(ctx, ids, cache)
	if err != nil {
		return nil, 0, err
	}
	return all, v, nil
}

// checkIDs refuses ids outside the logits' vocabulary (when fixed).
func (d *Decoder) checkIDs(ids []int) error {
	v := d.vocab()
	for _, id := range ids {
		if id < 0 || v > 0 && id >= v {
			return fmt.Errorf("llm: token id %d is outside the vocabulary (%d)", id, v)
		}
	}
	return nil
}
