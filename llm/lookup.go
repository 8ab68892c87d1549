package llm

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
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
	// measurements; by default drafting is sized, or left out, by its
	// measured cost and acceptance).
	Always bool
}

// LookupResult sums up a prompt-lookup generation: SpecResult's counts
// (Proposed and Accepted: the drafted tokens; Rounds: every decode step)
// and how often speculation switched itself off.
type LookupResult struct {
	SpecResult
	// SwitchedOff counts the times drafting stopped: a round that found a
	// match but did not draft (not expected to pay) after one that
	// drafted; Declined the rounds that found a match and did not draft;
	// PlainRounds the decode steps run without a draft (none found, not
	// expected to pay, or measuring).
	SwitchedOff, Declined, PlainRounds int
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
// It measures itself, unless lk.Always. How often drafted tokens would
// be accepted it learns without drafting, apart for each length of the
// run of tokens before them that lookup had predicted (text repeats in
// stretches: right after a mismatch a draft is seldom accepted, within a
// stretch mostly): every match's continuation is a shadow draft, checked
// against the tokens then emitted. What a step of 1+k tokens costs (k a
// power of two), and the plain step after it, it measures while drafting,
// against a plain step (medians of the last seven; the first step at each
// new length not counted: it plans and allocates). It drafts only as many
// tokens as are expected to emit the most tokens per unit of time, and
// none where a plain step is expected to do about as well (10% margin).
// So on text that does not repeat no step drafts, and a round with no
// draft is exactly a plain decoding step; on a model whose few-token
// steps cost as much as their tokens one at a time drafting stops after
// the steps that measured them (retried after 128, 256, … rounds). As
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
	cache.recycle = true // each step's logits are read before the next step and not kept
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
	drafted := false // the last round that found a match drafted
	// Invariant: the cache holds every token before last.
	for len(res.Tokens) < steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		draft = draft[:0]
		ngram := 0
		if n := min(lk.Draft, steps-len(res.Tokens)-1); n > 0 {
			draft, ngram = ix.draft(draft, n)
		}
		if ngram > 0 {
			gov.shadow(draft)
			draft = draft[:gov.length(len(draft))]
			switch {
			case len(draft) > 0:
				drafted = true
			case drafted:
				res.SwitchedOff++
				drafted = false
			}
			if len(draft) == 0 {
				res.Declined++
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
		gov.record(len(draft), dur)
		for _, id := range out {
			res.Generated++ // as Generate counts it, the BOS that ends the run too
			if id == stop {
				return res, nil
			}
			if err := emit(id, false); err != nil {
				return res, err
			}
			ix.add(id)
			gov.observe(id)
		}
		last = out[len(out)-1]
	}
	return res, nil
}

// lookupGovernor decides whether a round drafts and how many tokens, so
// that drafting costs nothing where it does not pay.
//
// What a draft is worth it learns without drafting: every match found
// starts a shadow draft, the tokens that followed the match, which the
// tokens then emitted — by plain steps or drafting ones alike — accept
// or reject as a verification would (a rejection closes it); so the
// chance that a drafted token is accepted is known on text where
// drafting never runs, counted apart by the run before the token: how
// many tokens right before it the shadow drafts predicted (0 after a
// mismatch or where none was open, up to maxRun), each from the tokens
// predicted and not after runs as long (the older weighing less,
// starting from one of each). Repetition comes in stretches (a quote, a
// loop, a list): within one a draft is mostly accepted, right after its
// end seldom, and text where nothing repeats never gets past run 0.
// What a draft costs it measures while drafting: the extra cost of
// a step of 1+k tokens over a plain step, for each k a power of two (on
// a small, compute-bound model nearly a step per token; on a large,
// bandwidth-bound one little; between the two where a few rows take
// other kernels than many: Qwen2.5-0.5B Q4_0 here, 1, 2, 3.4 and 4.1
// plain steps for k = 1, 2, 4, 8; Q4_K_M 0.41, 0.55, 1.18, 2.96), and of the plain step after a
// drafting round (the executor switching between step lengths); each the
// median of the last seven, in plain steps, the median of the last seven
// plain steps that followed plain steps; the first step of each length
// not counted (it plans and allocates). A length not measured yet is
// assumed to cost half a step a token (0.1 after), within what the
// lengths measured around it say.
//
// It drafts the k tokens (a power of two, at most the tokens found) that
// maximize the expected tokens emitted per plain step, (1 + p1 + p1·p2 +
// … + p1·…·pk) ÷ (1 + extra(k) + after) (pi the chance for the i-th
// drafted token, its run i−1 longer than the next token's), where that beats a plain step by a margin
// (minGain); else none. So on text that does not repeat no step drafts,
// and on a model whose multi-token steps cost as much as their tokens
// one at a time drafting stops after the few steps that measured it.
// When the costs measured forbid drafting while the shadows say drafts
// are accepted, a round now and then (after 128 rounds, then 256, …)
// drafts anyway, to measure them again.
type lookupGovernor struct {
	always bool
	plain  costWindow                // seconds per plain step
	extra  [lengthBuckets]costWindow // a step of 1+2^i tokens: its extra cost, in plain steps
	after  costWindow                // the extra cost of the plain step after a drafting round
	seen   [lengthBuckets + 1]bool   // a step of each length has run (0: plain)
	acc    [maxRun + 1]acceptance    // per run: the tokens right before predicted (at most maxRun counted)
	run    int                       // the tokens right before the next predicted by the shadow drafts
	prevK  int                       // the last round's drafted tokens

	// the open shadow draft: its tokens, how many accepted so far
	sh           []int
	shAt         int
	retest, wait int // rounds before costs that forbid drafting may be retested; the next such wait
}

// maxRun is the longest run of predicted tokens the acceptance tells
// apart: after as many, text is taken to go on repeating as it has.
const maxRun = 4

// maxDraftTokens bounds Lookup.Draft; lengthBuckets counts the draft
// lengths the governor picks from, the powers of two up to it.
const maxDraftTokens, lengthBuckets = 64, 7

// minGain is the gain in tokens per plain step a draft must be expected
// to bring: a margin for what the estimates do not see (a step's cost
// varies with the load, an acceptance estimate with few drafts).
const minGain = 1.1

// firstRetest is the rounds before the first retest of costs that forbid
// drafting (each later one waits twice as long, at most maxRetest).
const firstRetest, maxRetest = 128, 4096

// the costs assumed before any is measured, in plain steps
const priorPerToken, priorAfter = 0.5, 0.1

// acceptance counts predicted and mispredicted tokens, decayed (each
// token weighs 3% less than the next).
type acceptance struct{ ok, bad float64 }

func (a *acceptance) p() float64 { return (a.ok + 1) / (a.ok + a.bad + 2) }

func (a *acceptance) add(ok bool) {
	a.ok, a.bad = 0.97*a.ok, 0.97*a.bad
	if ok {
		a.ok++
	} else {
		a.bad++
	}
}

func newLookupGovernor(lk Lookup) *lookupGovernor {
	return &lookupGovernor{always: lk.Always, sh: make([]int, 0, lk.Draft), retest: firstRetest, wait: firstRetest}
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

// median is the median of the costs held (the lower of the middle two:
// a step slowed by another process only raises a cost); def when none.
func (w *costWindow) median(def float64) float64 {
	k := min(w.n, len(w.v))
	if k == 0 {
		return def
	}
	s := w.v // a copy
	slices.Sort(s[:k])
	return s[(k-1)/2]
}

// bucket is the length bucket of a draft of k tokens (a power of two).
func bucket(k int) int { return bits.Len(uint(k)) - 1 }

// cost is the expected cost of a round drafting k tokens (a power of
// two), in plain steps: the step and the plain step after it; with
// measured false, the costs assumed before measuring. A length not
// measured yet costs as assumed but no less than the longest shorter one
// measured (and no more than its cost per token would make it), and no
// more than the shortest longer one.
func (g *lookupGovernor) cost(k int, measured bool) float64 {
	extra, after := priorPerToken*float64(k), priorAfter
	if !measured {
		return 1 + extra + after
	}
	after = max(0, g.after.median(priorAfter))
	b := bucket(k)
	if w := &g.extra[b]; w.n > 0 {
		return 1 + max(0, w.median(0)) + after
	}
	for s := b - 1; s >= 0; s-- {
		if g.extra[s].n > 0 {
			e := max(0, g.extra[s].median(0))
			extra = max(e, min(extra, e*float64(k>>s)))
			break
		}
	}
	for l := b + 1; l < lengthBuckets; l++ {
		if g.extra[l].n > 0 {
			extra = min(extra, max(0, g.extra[l].median(0)))
			break
		}
	}
	return 1 + extra + after
}

// best is the draft length (a power of two) up to k with the most
// expected tokens per plain step, each drafted token accepted with the
// chance learned after runs as long as the one it would extend; 0 when
// none gains more than minGain.
func (g *lookupGovernor) best(k int, measured bool) int {
	bestK, bestG := 0, minGain
	e, pk := 1.0, 1.0
	for i := 1; i <= k; i++ {
		pk *= g.acc[min(g.run+i-1, maxRun)].p()
		e += pk
		if i&(i-1) != 0 {
			continue
		}
		if gain := e / g.cost(i, measured); gain > bestG {
			bestK, bestG = i, gain
		}
	}
	return bestK
}

// shadow opens a shadow draft, the tokens found after a match: the
// tokens emitted next are checked against it.
func (g *lookupGovernor) shadow(draft []int) {
	if len(draft) == 0 {
		return
	}
	g.sh = append(g.sh[:0], draft...)
	g.shAt = 0
}

// observe takes an emitted token: the open shadow draft's next token
// predicted it or not (that closes the draft), counted after the run
// before it; a token no draft predicted ends the run.
func (g *lookupGovernor) observe(id int) {
	if len(g.sh) == 0 {
		g.run = 0
		return
	}
	ok := id == g.sh[g.shAt]
	g.acc[min(g.run, maxRun)].add(ok)
	if !ok {
		g.sh, g.run = g.sh[:0], 0
		return
	}
	g.run++
	if g.shAt++; g.shAt == len(g.sh) {
		g.sh = g.sh[:0]
	}
}

// length is how many of the k tokens found after a match to draft (0:
// none).
func (g *lookupGovernor) length(k int) int {
	if g.always {
		return k
	}
	if g.plain.n == 0 {
		return 0 // the plain step's cost is measured first
	}
	if b := g.best(k, true); b > 0 {
		return b
	}
	if g.retest > 0 {
		return 0
	}
	// the costs measured forbid drafting: retest them where the costs
	// assumed before measuring would draft
	if b := g.best(k, false); b > 0 {
		g.wait = min(maxRetest, 2*g.wait)
		g.retest = g.wait
		return b
	}
	return 0
}

// record adds a round of k drafted tokens (0: a plain step; else a power
// of two unless Always) that took dur.
func (g *lookupGovernor) record(k int, dur time.Duration) {
	prev := g.prevK
	g.prevK = k
	if g.retest > 0 {
		g.retest--
	}
	if g.always || k&(k-1) != 0 {
		return
	}
	b := 0
	if k > 0 {
		b = bucket(k) + 1
	}
	first := !g.seen[b]
	g.seen[b] = true
	switch {
	case first:
		// the first step of a length plans and allocates
	case k == 0 && prev == 0:
		g.plain.add(dur.Seconds())
	case g.plain.n == 0:
	case k == 0:
		g.after.add(dur.Seconds()/g.plain.median(0) - 1)
	default:
		g.extra[b-1].add(dur.Seconds()/g.plain.median(0) - 1)
	}
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
