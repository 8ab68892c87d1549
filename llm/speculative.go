package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchyard-hal/switchyard"
)

// SpecResult sums up a speculative generation.
type SpecResult struct {
	Result
	Rounds   int // target verification steps after the prefill
	Proposed int // draft tokens proposed
	Accepted int // draft tokens the target agreed with
}

// AcceptanceRate is the fraction of proposed draft tokens accepted.
func (r *SpecResult) AcceptanceRate() float64 {
	if r.Proposed == 0 {
		return 0
	}
	return float64(r.Accepted) / float64(r.Proposed)
}

// Speculative generates greedily with speculative decoding: the draft
// decoder proposes up to k tokens one at a time, then the target runs
// once on all of them (with the last accepted token first) and keeps the
// longest prefix that equals its own argmax, plus its own next token. So
// every emitted token is the target's greedy choice: the output is token
// for token the target's plain greedy output (Generate at temperature 0),
// in fewer target steps. Both caches are trimmed back to the accepted
// tokens after each round. The two models must share the tokenizer.
// Only greedy sampling is supported (o.Temperature must be 0).
func Speculative(ctx context.Context, target, draft *Decoder, tok Tokenizer, prompt string, k int, o Options, yield func(Token) error) (*SpecResult, error) {
	if o.Temperature != 0 {
		return nil, errors.New("llm: speculative decoding is greedy only (temperature 0)")
	}
	if k < 1 || k > 64 {
		return nil, fmt.Errorf("llm: %d draft tokens per round (1..64)", k)
	}
	steps := o.Steps
	if steps <= 0 {
		steps = 256
	}
	if o.ContextLength == 0 {
		o.ContextLength = min(target.context, draft.context)
		if o.ContextLength == 0 {
			o.ContextLength = max(target.context, draft.context)
		}
	}
	if o.ContextLength > 0 && steps > o.ContextLength {
		return nil, fmt.Errorf("%w: %d positions asked, the model's context is %d", ErrContext, steps, o.ContextLength)
	}
	p, err := tok.Encode(prompt, true)
	if err != nil {
		return nil, err
	}
	if len(p) > steps {
		return nil, fmt.Errorf("%w: the prompt has %d tokens with BOS, more than the %d positions asked", ErrContext, len(p), steps)
	}
	res := &SpecResult{Result: Result{PromptTokens: p}}
	prev := p[0]
	emit := func(id int, prompt bool) error {
		res.Tokens = append(res.Tokens, id)
		err := yield(Token{Pos: len(res.Tokens), ID: id, Text: tok.Piece(prev, id), Prompt: prompt})
		prev = id
		return err
	}
	for _, id := range p[1:] {
		if err := emit(id, true); err != nil {
			return res, err
		}
	}
	tc, err := target.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	defer tc.close() // the session, shared by every later cache value
	dc, err := draft.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	defer dc.close()
	if len(res.Tokens) == steps {
		return res, nil
	}
	start := time.Now()
	logits, tc, err := target.step(ctx, p, tc)
	if err != nil {
		return res, fmt.Errorf("llm: target prefill: %w", err)
	}
	if _, dc, err = draft.step(ctx, p, dc); err != nil {
		return res, fmt.Errorf("llm: draft prefill: %w", err)
	}
	res.Prefill = time.Since(start)
	last := argmax(logits)
	if last == tok.BOS() {
		return res, nil
	}
	if err := emit(last, false); err != nil {
		return res, err
	}
	// Invariant: both caches hold every token before last.
	for len(res.Tokens) < steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		n := min(k, steps-len(res.Tokens)-1)
		cached := cacheLen(draft, dc)
		props := make([]int, 0, n)
		feed := last
		for i := 0; i < n; i++ {
			var lg []float32
			if lg, dc, err = draft.step(ctx, []int{feed}, dc); err != nil {
				return res, fmt.Errorf("llm: draft: %w", err)
			}
			feed = argmax(lg)
			props = append(props, feed)
		}
		all, v, next, err := target.stepAll(ctx, append([]int{last}, props...), tc)
		if err != nil {
			return res, fmt.Errorf("llm: target: %w", err)
		}
		res.Rounds++
		res.Proposed += n
		a := 0
		for a < n && props[a] == argmax(all[a*v:(a+1)*v]) {
			a++
		}
		res.Accepted += a
		out := append(props[:a:a], argmax(all[a*v:(a+1)*v]))
		if tc, err = target.trim(next, cached+a+1); err != nil {
			return res, err
		}
		if a == n { // the draft has not seen its own last proposal (or, with none, last)
			f := last
			if n > 0 {
				f = props[n-1]
			}
			if _, dc, err = draft.step(ctx, []int{f}, dc); err != nil {
				return res, fmt.Errorf("llm: draft: %w", err)
			}
		} else if dc, err = draft.trim(dc, cached+a+1); err != nil {
			return res, err
		}
		res.Decode += time.Since(start)
		for _, id := range out {
			if id == tok.BOS() {
				return res, nil
			}
			res.Generated++
			if err := emit(id, false); err != nil {
				return res, err
			}
		}
		last = out[len(out)-1]
	}
	return res, nil
}

// Argmax is the index of the largest of logits (0 for none): the first
// of the largest, NaN never larger (a NaN first wins); greedy sampling's
// choice, as generate makes it (serve's greedy requests use it too).
func Argmax(logits []float32) int { return argmax(logits) }

// argmax is the index of the largest of x (0 for none): what a scan
// keeping the first strictly larger value finds (best = i where x[i] > x[best], from 0): the first of the largest (NaN
// is never larger; a NaN first wins). Eight running maxima over every
// eighth value, each with the index where it was first reached, then the
// largest of the eight, the first index among equals: the scan was bound
// by its comparison with the one best (a 150k vocabulary took 110-170 µs
// a token, greedy sampling's whole cost).
func argmax(x []float32) int {
	if len(x) == 0 || x[0] != x[0] {
		return 0
	}
	var m [8]float32
	var at [8]int
	for k := range m {
		m[k] = x[0]
	}
	i := 0
	for ; i+8 <= len(x); i += 8 {
		v := x[i : i+8 : i+8]
		if v[0] > m[0] {
			m[0], at[0] = v[0], i
		}
		if v[1] > m[1] {
			m[1], at[1] = v[1], i+1
		}
		if v[2] > m[2] {
			m[2], at[2] = v[2], i+2
		}
		if v[3] > m[3] {
			m[3], at[3] = v[3], i+3
		}
		if v[4] > m[4] {
			m[4], at[4] = v[4], i+4
		}
		if v[5] > m[5] {
			m[5], at[5] = v[5], i+5
		}
		if v[6] > m[6] {
			m[6], at[6] = v[6], i+6
		}
		if v[7] > m[7] {
			m[7], at[7] = v[7], i+7
		}
	}
	for ; i < len(x); i++ {
		if x[i] > m[0] {
			m[0], at[0] = x[i], i
		}
	}
	// none is NaN: each started from a number and took only larger ones;
	// of equal maxima (±0 included: neither is larger) the first index
	best, bi := m[0], at[0]
	for k := 1; k < len(m); k++ {
		if m[k] > best || m[k] == best && at[k] < bi {
			best, bi = m[k], at[k]
		}
	}
	return bi
}

// cacheLen is the number of positions the cache holds.
func cacheLen(_ *Decoder, cache *kvCache) int { return cache.n }

// trim keeps the cache's first n positions: a shared cache only forgets
// the later ones (the next step overwrites them); other cache tensors are
// cut to n along their sequence axis.
func (d *Decoder) trim(cache *kvCache, n int) (*kvCache, error) {
	if n > cache.n || n < 0 {
		return nil, fmt.Errorf("llm: the cache holds %d positions, cannot keep %d", cache.n, n)
	}
	if d.shared {
		return &kvCache{t: cache.t, n: n, sess: cache.sess, recycle: cache.recycle, spare: cache.spare, logitBuf: cache.logitBuf, in: cache.in}, nil
	}
	// slot -1: the next present goes to buffer 0; one still holding a
	// kept past is then not bound in place but copied after the run
	out := &kvCache{t: switchyard.Tensors{}, n: n, buf: cache.buf, slot: -1}
	for name, t := range cache.t {
		ax := d.pastDim[name]
		if ax >= len(t.Shape()) || t.Shape()[ax] < n {
			return nil, fmt.Errorf("llm: cache %s has shape %v, cannot keep %d positions", name, t.Shape(), n)
		}
		if t.Shape()[ax] == n {
			out.t[name] = t
			continue
		}
		v, err := switchyard.Values[float32](t)
		if err != nil {
			return nil, fmt.Errorf("llm: cache %s: %w (float32 caches are trimmed)", name, err)
		}
		outer, inner := 1, 1
		for _, s := range t.Shape()[:ax] {
			outer *= s
		}
		for _, s := range t.Shape()[ax+1:] {
			inner *= s
		}
		full := t.Shape()[ax] * inner
		kept := make([]float32, 0, outer*n*inner)
		for o := 0; o < outer; o++ {
			kept = append(kept, v[o*full:o*full+n*inner]...)
		}
		shape := append([]int(nil), t.Shape()...)
		shape[ax] = n
		if out.t[name], err = switchyard.NewTensor(shape, kept); err != nil {
			return nil, err
		}
	}
	return out, nil
}
