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
	// Draft is the most tokens proposed per round (0: 8).
	Draft int
	// MaxNgram and MinNgram bound the n-grams matched: the last n tokens
	// are looked up for n from MaxNgram down to MinNgram (0: 3 and 2; at
	// most 4).
	MaxNgram, MinNgram int
	// Always keeps speculating even where it measures slower than plain
	// decoding (for measurements; by default it switches itself off).
	Always bool
}

// LookupResult sums up a prompt-lookup generation: SpecResult's counts
// (Proposed and Accepted: the drafted tokens; Rounds: every decode step)
// and how often speculation switched itself off.
type LookupResult struct {
	SpecResult
	// SwitchedOff counts the times speculation measured itself slower than
	// plain decoding and stopped proposing; PlainRounds the decode steps
	// run without a draft (none found, switched off, or measuring).
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
// It measures itself: the time per emitted token of the rounds with a
// draft against that of plain steps (medians of the last seven; the first
// step at each new length not counted: it plans and allocates), and stops
// proposing when drafting is slower, trying one draft again after 32
// plain steps (doubling while it stays slower) unless lk.Always. The
// draft length adapts to what is accepted (from 4: doubled up to
// lk.Draft when a whole draft is accepted, else one more than was). As
// Generate, a generated BOS ends the run.
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
	ix := newNgramIndex(lk.MinNgram, lk.MaxNgram)
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
	gov := lookupGovernor{always: lk.Always, seen: map[int]bool{}}
	var draft []int
	// the draft length adapts: doubled (up to lk.Draft) when a whole draft
	// is accepted, cut to one more than was accepted otherwise (at least
	// 2): a draft that fails costs a longer step
	dlen := min(4, lk.Draft)
	// Invariant: the cache holds every token before last.
	for len(res.Tokens) < steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		n := min(dlen, steps-len(res.Tokens)-1)
		draft = draft[:0]
		if n > 0 && gov.speculate() {
			draft = ix.draft(draft, n)
		}
		cached := cache.n
		all, v, next, err := d.stepAll(ctx, append([]int{last}, draft...), cache)
		if err != nil {
			return res, fmt.Errorf("llm: position %d: %w", len(res.Tokens)+1, err)
		}
		a := 0
		for a < len(draft) && draft[a] == argmax(all[a*v:(a+1)*v]) {
			a++
		}
		out := append(draft[:a:a], argmax(all[a*v:(a+1)*v]))
		cache = next
		if a < len(draft) {
			if cache, err = d.trim(next, cached+a+1); err != nil {
				return res, err
			}
		}
		dur := time.Since(start)
		res.Decode += dur
		res.Rounds++
		res.Proposed += len(draft)
		res.Accepted += a
		switch {
		case len(draft) == 0:
			res.PlainRounds++
		case a == len(draft):
			dlen = min(lk.Draft, 2*dlen)
		default:
			dlen = min(lk.Draft, max(2, a+1))
		}
		if gov.record(len(draft), len(out), dur) {
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

// lookupGovernor decides whether a round drafts, from the measured cost
// per emitted token of drafting rounds and of plain steps: the medians of
// the last few of each, which a round slowed by something else (another
// process taking the core) does not sway.
type lookupGovernor struct {
	always       bool
	plain, spec  costWindow // seconds per emitted token
	off, backoff int        // plain rounds left while switched off; the next pause
	sinceMeasure int        // drafting rounds since the last plain step
	seen         map[int]bool
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
	s := append([]float64(nil), w.v[:k]...)
	slices.Sort(s)
	return s[k/2]
}

// speculate reports whether this round may draft.
func (g *lookupGovernor) speculate() bool {
	if g.always {
		return true
	}
	if g.off > 0 { // the round after the last one off is a probe
		g.off--
		return false
	}
	// drafting every round leaves nothing to compare with: a plain step
	// now and then keeps the plain cost measured
	if g.sinceMeasure >= 16 || (g.spec.n >= 4 && g.plain.n < 3) {
		g.sinceMeasure = 0
		return false
	}
	return true
}

// record adds a round of s tokens drafted that emitted e tokens in dur;
// it reports whether drafting switched itself off.
func (g *lookupGovernor) record(s, e int, dur time.Duration) bool {
	if s > 0 {
		g.sinceMeasure++
	} else {
		g.sinceMeasure = 0
	}
	if !g.seen[s] { // the first step of this length plans and allocates
		g.seen[s] = true
		return false
	}
	per := dur.Seconds() / float64(e)
	if s == 0 {
		g.plain.add(per)
		return false
	}
	g.spec.add(per)
	if g.always || g.spec.n < 4 || g.plain.n < 3 {
		return false
	}
	if g.spec.median() > g.plain.median() {
		g.backoff = max(32, 2*g.backoff)
		g.off = g.backoff
		return true
	}
	g.backoff = 0
	return false
}

// ngramIndex finds, for the sequence so far, the most recent earlier
// occurrence of its last n tokens (n from max down to min).
type ngramIndex struct {
	min, max int
	seq      []int
	last     map[ngram]int // an n-gram → its most recent start, not counting the sequence's own tail
}

type ngram struct {
	n int
	t [maxNgram]int32
}

func newNgramIndex(minN, maxN int) *ngramIndex {
	return &ngramIndex{min: minN, max: maxN, last: map[ngram]int{}}
}

func (ix *ngramIndex) key(end, n int) ngram {
	k := ngram{n: n}
	for i := 0; i < n; i++ {
		k.t[i] = int32(ix.seq[end-n+i])
	}
	return k
}

// add appends id; the n-grams ending before it become findable.
func (ix *ngramIndex) add(id int) {
	j := len(ix.seq)
	for n := ix.min; n <= ix.max && n <= j; n++ {
		ix.last[ix.key(j, n)] = j - n
	}
	ix.seq = append(ix.seq, id)
}

// draft appends to dst up to k tokens that followed the most recent
// earlier occurrence of the sequence's last n tokens (n longest first),
// continued as a copy where the occurrence runs into the tail (a repeating
// period repeats on); none when nothing matches.
func (ix *ngramIndex) draft(dst []int, k int) []int {
	L := len(ix.seq)
	for n := min(ix.max, L-1); n >= ix.min; n-- {
		at, ok := ix.last[ix.key(L, n)]
		if !ok {
			continue
		}
		base := len(dst)
		for i := 0; i < k; i++ {
			j := at + n + i
			if j < L {
				dst = append(dst, ix.seq[j])
			} else {
				dst = append(dst, dst[base+j-L])
			}
		}
		return dst
	}
	return dst
}
