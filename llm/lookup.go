package llm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Lookup configures prompt-lookup speculation (PromptLookup): drafts
// copied from earlier in the sequence instead of proposed by a draft
// model.
type Lookup struct {
	// Draft is the most tokens proposed per round (0: 8; at most 64).
	Draft int
	// MaxNgram and MinNgram bound the n-grams matched: the last n tokens
	// are looked up for n from MaxNgram down to MinNgram (0: 3 and 2; at
	// most 4).
	MaxNgram, MinNgram int
	// Always drafts Draft tokens wherever a match is found, even where
	// that is expected to be slower than plain decoding (for
	// measurements; by default drafting is sized and paused by its
	// measured cost and acceptance).
	Always bool
}

// LookupResult sums up a prompt-lookup generation: SpecResult's counts
// (Proposed and Accepted: the drafted tokens; Rounds: every decode step)
// and how often speculation switched itself off.
type LookupResult struct {
	SpecResult
	// SwitchedOff counts the pauses in drafting (after a drafting round
	// that did not pay or was a test; each pause twice the one before, up
	// to 256 rounds, while drafting does not pay); PlainRounds
	// the decode steps run without a draft (none found, paused, or
	// measuring).
	SwitchedOff, PlainRounds int
}

func (lk Lookup) withDefaults() (Lookup, error) {
	if lk.Draft == 0 {
		lk.Draft = 8
	}
	if lk.MaxNgram == 0 {
		lk.MaxNgram = 3
	}
	if lk.MinNgram == 0 {
		lk.MinNgram = min(2, lk.MaxNgram)
	}
	switch {
	case lk.Draft < 1 || lk.Draft > 64:
		return lk, fmt.Errorf("llm: %d lookup draft tokens per round (1..64)", lk.Draft)
	case lk.MinNgram < 1 || lk.MaxNgram > maxNgram || lk.MinNgram > lk.MaxNgram:
		return lk, fmt.Errorf("llm: lookup n-grams %d..%d (1 ≤ min ≤ max ≤ %d)", lk.MinNgram, lk.MaxNgram, maxNgram)
	}
	return lk, nil
}

// maxNgram is the longest n-gram Lookup matches.
const maxNgram = 4

// PromptLookup generates greedily with prompt-lookup speculative
// decoding: where the last few tokens (an n-gram, longest first) occurred
// earlier in the prompt or the output, the tokens that followed them
// there are proposed as a draft, and the model runs once on the last
// token and the draft, keeping the longest prefix equal to its own argmax
// plus its own next token — so the output is token for token the plain
// greedy output (Generate at temperature 0), in fewer steps where text
// repeats (code, quotes, lists, a document being edited). No draft
// model is needed.
//
// It measures itself, unless lk.Always: what a plain step costs, what
// each drafted token adds to a step (medians of the last seven; the first
// step at each new length not counted: it plans and allocates) and how
// often drafted tokens are accepted after matches of each n-gram length,
// and drafts only as many tokens as are expected to emit the most tokens
// per unit of time — none where a plain step is expected to do better,
// but a single token now and then after the longest matches, to learn
// more. A drafting round that did not pay, or was such a test, pauses
// drafting (1, 2, 4, … up to 256 rounds while drafting does not pay), so
// on text that does not repeat drafting costs a small share of the steps,
// shrinking as the text goes on; a round with no draft is exactly a plain
// decoding step. As Generate, a generated BOS ends the run.
func (d *Decoder) PromptLookup(ctx context.Context, tok Tokenizer, prompt string, o Options, lk Lookup, yield func(Token) error) (*LookupResult, error) {
	p, err := tok.Encode(prompt, true)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, errors.New("llm: an empty prompt and no BOS token: nothing to start from")
	}
	return d.lookup(ctx, p, o, lk, tok.Piece, tok.BOS(), yield)
}

// PromptLookupIDs is PromptLookup from prompt token ids used exactly as
// given, as GenerateIDs runs them: no tokenizer, Text empty, and no id
// ends the run early.
func (d *Decoder) PromptLookupIDs(ctx context.Context, prompt []int, o Options, lk Lookup, yield func(Token) error) (*LookupResult, error) {
	if len(prompt) == 0 {
		return nil, errors.New("llm: an empty prompt")
	}
	if err := d.checkIDs(prompt); err != nil {
		return nil, err
	}
	return d.lookup(ctx, append([]int(nil), prompt...), o, lk, nil, -1, yield)
}

func (d *Decoder) lookup(ctx context.Context, p []int, o Options, lk Lookup, piece func(prev, id int) string, stop int, yield func(Token) error) (*LookupResult, error) {
	if o.Temperature != 0 {
		return nil, errors.New("llm: prompt-lookup speculation is greedy only (temperature 0)")
	}
	lk, err := lk.withDefaults()
	if err != nil {
		return nil, err
	}
	steps, err := d.positions(&o)
	if err != nil {
		return nil, err
	}
	if len(p) > steps {
		return nil, fmt.Errorf("%w: the prompt has %d tokens, more than the %d positions asked", ErrContext, len(p), steps)
	}
	res := &LookupResult{SpecResult: SpecResult{Result: Result{PromptTokens: p}}}
	ix := newNgramIndex(lk.MinNgram, lk.MaxNgram, steps)
	for _, id := range p {
		ix.add(id)
	}
	prev := p[0]
	emit := func(id int, prompt bool) error {
		res.Tokens = append(res.Tokens, id)
		t := Token{Pos: len(res.Tokens), ID: id, Prompt: prompt}
		if piece != nil {
			t.Text = piece(prev, id)
		}
		prev = id
		return yield(t)
	}
	for _, id := range p[1:] {
		if err := emit(id, true); err != nil {
			return res, err
		}
	}
	if len(res.Tokens) == steps {
		return res, nil
	}
	cache, err := d.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	defer cache.close()
	start := time.Now()
	logits, cache, err := d.step(ctx, p, cache)
	if err != nil {
		return res, fmt.Errorf("llm: prefill: %w", err)
	}
	res.Prefill = time.Since(start)
	last := argmax(logits)
	if last == stop {
		return res, nil
	}
	if err := emit(last, false); err != nil {
		return res, err
	}
	ix.add(last)
	gov := newLookupGovernor(lk)
	var draft []int
	one := []int{0}
	// Invariant: the cache holds every token before last.
	for len(res.Tokens) < steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		draft = draft[:0]
		ngram := 0
		if n := min(lk.Draft, steps-len(res.Tokens)-1); n > 0 && gov.mayDraft() {
			if draft, ngram = ix.draft(draft, n); ngram > 0 {
				draft = draft[:gov.length(ngram, len(draft))]
			}
		}
		var out []int
		a := 0
		if len(draft) == 0 {
			// no draft: exactly a plain decoding step
			one[0] = last
			logits, next, err := d.step(ctx, one, cache)
			if err != nil {
				return res, fmt.Errorf("llm: position %d: %w", len(res.Tokens)+1, err)
			}
			cache = next
			one[0] = argmax(logits)
			out = one
		} else {
			cached := cache.n
			all, v, next, err := d.stepAll(ctx, append([]int{last}, draft...), cache)
			if err != nil {
				return res, fmt.Errorf("llm: position %d: %w", len(res.Tokens)+1, err)
			}
			for a < len(draft) && draft[a] == argmax(all[a*v:(a+1)*v]) {
				a++
			}
			out = append(draft[:a:a], argmax(all[a*v:(a+1)*v]))
			cache = next
			if a < len(draft) {
				if cache, err = d.trim(next, cached+a+1); err != nil {
					return res, err
				}
			}
		}
		dur := time.Since(start)
		res.Decode += dur
		res.Rounds++
		res.Proposed += len(draft)
		res.Accepted += a
		if len(draft) == 0 {
			res.PlainRounds++
		}
		if gov.record(ngram, len(draft), a, dur) {
			res.SwitchedOff++
		}
		for _, id := range out {
			res.Generated++ // as Generate counts it, the BOS that ends the run too
			if id == stop {
				return res, nil
			}
			if err := emit(id, false); err != nil {
				return res, err
			}
			ix.add(id)
		}
		last = out[len(out)-1]
	}
	return res, nil
}

// lookupGovernor decides whether a round drafts and how many tokens, so
// that drafting costs little where it does not pay. It keeps the cost of
// a step — the median time of the last plain steps, and the extra cost of
// each drafted token as a fraction of a plain step (the median over the
// last drafting rounds; 0.5 until measured): a step of 1+k tokens costs
// 1 + slope·k plain steps (on a small model nearly a step per token, on a
// large, bandwidth-bound one little more than one) — and the chance p
// that a drafted token is accepted, per n-gram length of the match
// (accepted against rejected tokens, older rounds weighing less, starting
// from one of each). It drafts the k tokens that maximize the expected
// tokens emitted per plain step, (1 + p + … + p^k) ÷ (1 + slope·k), when
// that beats a plain step by a margin (10%); when no k does, a single token after a match
// of the longest n-gram, to learn more.
// A drafting round that emitted fewer tokens than it cost, or after which
// drafting is no longer expected to pay (a test), pauses drafting for
// twice as many rounds as the pause before it (from 1, at most 256): so
// drafts that fail cost a share of the steps that shrinks as the text
// goes on; a round that paid where drafting is expected to go on paying
// ends the pauses.
type lookupGovernor struct {
	always      bool
	maxDraft    int
	maxNgram    int
	plain       costWindow // seconds per plain step
	slope       costWindow // extra cost per drafted token, in plain steps
	seen        [maxDraftTokens + 2]bool
	acc         [maxNgram + 1]acceptance
	skip, pause int // rounds left without drafting; the next pause
}

// maxDraftTokens bounds Lookup.Draft.
const maxDraftTokens = 64

// maxPause is the longest pause after drafts that did not pay.
const maxPause = 256

// minGain is the gain in tokens per plain step a draft must be expected
// to bring: a margin for what the estimates do not see (a step's cost
// varies with the load, an acceptance estimate with few drafts).
const minGain = 1.1

// acceptance counts accepted and rejected drafted tokens, decayed.
type acceptance struct{ ok, bad float64 }

func (a *acceptance) p() float64 { return (a.ok + 1) / (a.ok + a.bad + 2) }

func (a *acceptance) add(ok, bad int) {
	a.ok = 0.9*a.ok + float64(ok)
	a.bad = 0.9*a.bad + float64(bad)
}

func newLookupGovernor(lk Lookup) *lookupGovernor {
	return &lookupGovernor{always: lk.Always, maxDraft: lk.Draft, maxNgram: lk.MaxNgram, pause: 1}
}

// costWindow holds the last len(v) costs.
type costWindow struct {
	v [7]float64
	n int // costs recorded
}

func (w *costWindow) add(c float64) {
	w.v[w.n%len(w.v)] = c
	w.n++
}

func (w *costWindow) median() float64 {
	k := min(w.n, len(w.v))
	s := w.v // a copy
	slices.Sort(s[:k])
	return s[k/2]
}

// perToken is the extra cost of a drafted token in plain steps.
func (g *lookupGovernor) perToken() float64 {
	if g.slope.n < 2 {
		return 0.5
	}
	return max(0, g.slope.median())
}

// best is the draft length up to k with the most expected tokens per
// plain step when each drafted token is accepted with chance p, and that
// gain (tokens per plain step; a plain step gives 1); 0 when none gains
// more than minGain.
func (g *lookupGovernor) best(p float64, k int) (int, float64) {
	s := g.perToken()
	bestK, bestG := 0, minGain
	e, pk := 1.0, 1.0
	for i := 1; i <= k; i++ {
		pk *= p
		e += pk
		if gain := e / (1 + s*float64(i)); gain > bestG {
			bestK, bestG = i, gain
		}
	}
	return bestK, bestG
}

// mayDraft reports whether this round may look for a draft.
func (g *lookupGovernor) mayDraft() bool {
	if g.always {
		return true
	}
	if g.skip > 0 {
		g.skip--
		return false
	}
	// the plain step's cost is measured first (the first step of each
	// length not counted: it plans and allocates)
	return g.plain.n >= 2
}

// length is how many of the k tokens found after a match of n tokens to
// draft (0: none).
func (g *lookupGovernor) length(n, k int) int {
	if g.always {
		return k
	}
	if b, _ := g.best(g.acc[n].p(), k); b > 0 {
		return b
	}
	if n == g.maxNgram {
		return 1 // not expected to pay: one token, the cheapest test, after the longest matches only
	}
	return 0
}

// record adds a round of k tokens drafted after a match of n tokens, a
// of them accepted, that took dur; it reports whether drafting paused.
func (g *lookupGovernor) record(n, k, a int, dur time.Duration) bool {
	first := !g.seen[k]
	g.seen[k] = true
	if k == 0 {
		if !first { // the first step of a length plans and allocates
			g.plain.add(dur.Seconds())
		}
		return false
	}
	if !first && g.plain.n > 0 {
		g.slope.add((dur.Seconds()/g.plain.median() - 1) / float64(k))
	}
	bad := 0
	if a < k {
		bad = 1
	}
	g.acc[n].add(a, bad)
	if g.always {
		return false
	}
	// a round that paid, where drafting is still expected to pay, goes on;
	// any other pauses drafting, each pause twice the one before
	if k2, _ := g.best(g.acc[n].p(), g.maxDraft); k2 > 0 && float64(a+1) >= 1+g.perToken()*float64(k) {
		g.pause = 1
		return false
	}
	g.skip = g.pause
	g.pause = min(maxPause, 2*g.pause)
	return true
}

// ngramIndex finds, for the sequence so far, the most recent earlier
// occurrence of its last n tokens (n from max down to min): for each n a
// hash table of positions (open addressing, linear probing; an n-gram
// seen again takes its slot anew), each hit checked against the sequence.
// Adding a token costs a few multiplications, compares and stores, no
// allocation beyond the tables and the sequence.
type ngramIndex struct {
	min, max int
	seq      []int
	slot     [maxNgram + 1][]int32 // n-gram slots: its most recent start + 1 (0: free), not counting the sequence's own tail
	shift    uint                  // 64 − log2(table size)
}

const (
	// maxIndexBits bounds the tables (2^18 slots each, 1 MiB): past
	// that, older n-grams give way to newer ones.
	maxIndexBits = 18
	// maxProbes bounds a lookup or an insertion (a full neighbourhood
	// gives its first slot to the newer n-gram).
	maxProbes = 16
)

// newNgramIndex sizes the tables for about positions tokens (a quarter
// full).
func newNgramIndex(minN, maxN, positions int) *ngramIndex {
	bits := 6
	for bits < maxIndexBits && 1<<bits < 4*positions {
		bits++
	}
	ix := &ngramIndex{min: minN, max: maxN, seq: make([]int, 0, positions), shift: uint(64 - bits)}
	for n := minN; n <= maxN; n++ {
		ix.slot[n] = make([]int32, 1<<bits)
	}
	return ix
}

// find is the slot of the n tokens starting at start: the one holding an
// equal n-gram, else the first free one, else -1; and the first probed.
func (ix *ngramIndex) find(n, start int) (int, int) {
	h := uint64(n)
	key := ix.seq[start : start+n]
	for _, t := range key {
		h = (h ^ uint64(t)) * 0x9e3779b97f4a7c15
	}
	tab := ix.slot[n]
	first := int(h >> ix.shift)
	for p := 0; p < maxProbes; p++ {
		i := (first + p) & (len(tab) - 1)
		v := int(tab[i]) - 1
		if v < 0 || slices.Equal(ix.seq[v:v+n], key) {
			return i, first
		}
	}
	return -1, first
}

// add appends id; the n-grams ending before it become findable.
func (ix *ngramIndex) add(id int) {
	j := len(ix.seq)
	for n := ix.min; n <= ix.max && n <= j; n++ {
		i, first := ix.find(n, j-n)
		if i < 0 {
			i = first
		}
		ix.slot[n][i] = int32(j - n + 1)
	}
	ix.seq = append(ix.seq, id)
}

// draft appends to dst k tokens that followed the most recent earlier
// occurrence of the sequence's last n tokens (n longest first), continued
// as a copy where the occurrence runs into the tail (a repeating period
// repeats on), and returns n; none and 0 when nothing matches.
func (ix *ngramIndex) draft(dst []int, k int) ([]int, int) {
	L := len(ix.seq)
	for n := min(ix.max, L-1); n >= ix.min; n-- {
		i, _ := ix.find(n, L-n)
		if i < 0 || ix.slot[n][i] == 0 {
			continue
		}
		at := int(ix.slot[n][i]) - 1
		base := len(dst)
		for i := 0; i < k; i++ {
			j := at + n + i
			if j < L {
				dst = append(dst, ix.seq[j])
			} else {
				dst = append(dst, dst[base+j-L])
			}
		}
		return dst, n
	}
	return dst, 0
}
