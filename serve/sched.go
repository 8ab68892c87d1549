package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// event is what a job hands its HTTP handler: text, then one final event
// (finish set, or err).
type event struct {
	text   string
	finish string // "stop" or "length" on the final event
	err    error
	usage  usage
	lps    []tokenLP // the log probabilities of the tokens in text, when asked
}

// tokenLP is a generated token's log probability and its most likely
// alternatives, of the distribution it was sampled from before the
// temperature (logit_bias and penalties applied).
type tokenLP struct {
	text    string
	logprob float64
	offset  int // where its text starts in the completion
	top     []altLP
}

type altLP struct {
	text    string
	logprob float64
}

// logprobsOf is token id's entry over logits, with the top n (n <= 20):
// a pass for the largest logit, one for the sum of exponentials, one
// keeping the n largest in a small sorted list (most likely first, equal
// ones by id), where a selection per alternative over a 150k vocabulary
// cost n passes and a map.
func logprobsOf(logits []float32, id, n int, piece func(int) string) tokenLP {
	lse := logSumExp(logits)
	e := tokenLP{text: piece(id), logprob: float64(logits[id]) - lse}
	n = min(n, len(logits))
	if n <= 0 {
		return e
	}
	top := make([]int, 0, n)
	for i, x := range logits {
		if len(top) == n && !(x > logits[top[n-1]]) {
			continue
		}
		// insert after the ones at least as large (earlier ids first)
		k := len(top)
		for k > 0 && x > logits[top[k-1]] {
			k--
		}
		if len(top) < n {
			top = append(top, 0)
		}
		copy(top[k+1:], top[k:len(top)-1])
		top[k] = i
	}
	for _, i := range top {
		e.top = append(e.top, altLP{text: piece(i), logprob: float64(logits[i]) - lse})
	}
	return e
}

// logSumExp is log Σ exp(x) over logits (NaN when one is NaN).
func logSumExp(logits []float32) float64 {
	m, nan := float32(math.Inf(-1)), false
	for _, x := range logits {
		if x > m {
			m = x
		}
		nan = nan || x != x
	}
	if nan {
		return math.NaN()
	}
	hi := float64(m)
	if math.IsInf(hi, 0) {
		return hi
	}
	return hi + math.Log(sumExp(logits, hi))
}

// sumExp is Σ exp(x - hi) over xs (each x <= hi), 2^t as 2^n·2^f with
// the degree-7 Taylor polynomial of 2^f for f in [-1/2, 1/2] (relative
// error below 6e-9, beyond float32 logits' own): inlined, about half
// math.Exp's time over a 150k vocabulary, which logprobs pay a token.
func sumExp(xs []float32, hi float64) float64 {
	const (
		log2e = 1.4426950408889634
		c1    = 0.6931471805599453 // ln 2^k / k!
		c2    = 0.2402265069591007
		c3    = 0.05550410866482158
		c4    = 0.009618129107628477
		c5    = 0.0013333558146428443
		c6    = 0.00015403530393381608
		c7    = 1.525273380405984e-05
	)
	var a, b float64
	for i, x := range xs {
		t := (float64(x) - hi) * log2e
		if !(t >= -1000) { // exp below 1e-301 (or NaN): nothing
			continue
		}
		n := math.Floor(t + 0.5)
		f := t - n
		e := 1 + f*(c1+f*(c2+f*(c3+f*(c4+f*(c5+f*(c6+f*c7))))))
		e *= math.Float64frombits(uint64(int64(n)+1023) << 52)
		if i&1 == 0 {
			a += e
		} else {
			b += e
		}
	}
	return a + b
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	cached           int // prompt tokens taken from the prefix cache
}

// job is one request's generation. The handler reads its events; the
// scheduler owns everything else.
type job struct {
	ctx     context.Context
	prompt  []int // BOS first
	maxNew  int   // tokens to generate at most
	arrived time.Time
	topLP   int // logprobs: the alternatives to report; -1: no logprobs

	mu     sync.Mutex
	events []event
	notify chan struct{} // capacity 1: events are waiting
	resume func()        // wakes the scheduler when a held job's events are taken

	// the scheduler's
	seq      *llm.Sequence
	fed      int // prompt tokens in seq
	last     int // the last sampled id (fed next)
	prev     int // the id before it, for Piece
	gen      int
	samp     *sampler
	text     textState
	first    time.Time // first token
	cached   int
	logits   []float32 // this round's step
	stepErr  error
	poisoned bool // a step panicked: the sequence's state is unknown
	// this round's step is the job's first prompt chunk (nothing of its
	// own fed yet)
	firstChunk bool
	held       bool      // this round: not stepped, its client has maxBacklog events waiting
	lps        []tokenLP // logprobs not yet handed out
}

func newJob(ctx context.Context, prompt []int, maxNew int, p sampling, stops []string, topLP int) *job {
	return &job{ctx: ctx, prompt: prompt, maxNew: maxNew, arrived: time.Now(), notify: make(chan struct{}, 1),
		samp: newSampler(p), text: textState{stops: stops}, topLP: topLP}
}

// emit hands ev to the handler; it never blocks the scheduler.
func (j *job) emit(ev event) {
	j.mu.Lock()
	j.events = append(j.events, ev)
	j.mu.Unlock()
	select {
	case j.notify <- struct{}{}:
	default:
	}
}

// maxBacklog is the most events a job keeps waiting for its client: a
// sequence whose client has not taken them is held (it keeps its slot but
// is not stepped) until the client reads, so a stalled reader neither
// makes the server generate ahead without bound nor holds the text of a
// whole generation in memory.
const maxBacklog = 64

// take returns the events waiting.
func (j *job) take() []event {
	j.mu.Lock()
	evs := j.events
	j.events = nil
	resume := j.resume
	j.mu.Unlock()
	if len(evs) >= maxBacklog && resume != nil {
		resume()
	}
	return evs
}

// backlogged reports whether the job's client has maxBacklog events
// waiting.
func (j *job) backlogged() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.events) >= maxBacklog
}

var errShutdown = errors.New("the server is shutting down")

// errQueueFull refuses a request when the queue is at its limit.
var errQueueFull = errors.New("queue full")

// worker schedules one model's jobs: up to MaxBatch sequences hold a
// slot, and each round runs one step of every one of them (a chunk of a
// prompt being prefilled, or one decode step) on the shared model, then
// samples each. A request arriving mid-generation joins at
// the next round; one whose client went away is dropped before its next
// step (a step in flight sees its context cancelled), so it never holds
// the others back for more than one step.
type worker struct {
	s      *Server
	m      *Model
	name   string
	mu     sync.Mutex
	queue  []*job
	closed bool // the scheduler has stopped: submit refuses
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	// ctx runs batched steps (cancelled when the worker stops)
	ctx    context.Context
	prefix *prefixCache
	// prefix cache lookups and hits, for the hit ratio
	lookups, hits int
	// evicted: this round's evictFor gave prefix cache memory back for a
	// job that must still start again (it waits even if alone)
	evicted bool
	// arena holds the logits of a round's runs (arenaFor), arenaAt
	// floats of it taken this round
	arena   []float32
	arenaAt int
	// slotCap, until capUntil, lowers MaxBatch to the sequences the
	// model's memory budget held when one more did not fit
	slotCap  int
	capUntil time.Time
}

// memoryCapFor is how long a lowered slot limit stands before one more
// slot is tried again (the budget's other users, run buffers, vary).
const memoryCapFor = 5 * time.Second

// limit is the sequences that may hold a slot now.
func (w *worker) limit() int {
	if w.slotCap > 0 && time.Now().Before(w.capUntil) {
		return min(w.s.opts.MaxBatch, w.slotCap)
	}
	return w.s.opts.MaxBatch
}

func (w *worker) submit(j *job) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errShutdown
	}
	if len(w.queue) >= w.s.opts.MaxQueue {
		w.mu.Unlock()
		return errQueueFull
	}
	j.mu.Lock()
	j.resume = w.poke
	j.mu.Unlock()
	w.queue = append(w.queue, j)
	n := len(w.queue)
	w.mu.Unlock()
	w.s.met.queue.WithLabelValues(w.name).Set(float64(n))
	w.poke()
	return nil
}

// poke wakes the scheduler if it waits.
func (w *worker) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *worker) run() {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	w.ctx = ctx
	var active []*job
	defer func() {
		for _, j := range active {
			w.end(j, event{err: errShutdown})
		}
		w.mu.Lock()
		w.closed = true
		for _, j := range w.queue {
			j.emit(event{err: errShutdown})
		}
		w.queue = nil
		w.mu.Unlock()
		w.prefix.close()
		w.gauges(nil)
	}()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		active = w.admit(active)
		if len(active) == 0 {
			select {
			case <-w.wake:
			case <-w.stop:
				return
			}
			w.gather()
			continue
		}
		if w.round(active) == 0 {
			// every sequence is held for its client: wait for a reader
			// to take its events, a new request or a cancellation
			// (checked at the next round)
			select {
			case <-w.wake:
			case <-w.stop:
				return
			case <-time.After(heldPoll):
			}
		}
		kept := active[:0]
		for _, j := range active {
			if j.seq != nil {
				kept = append(kept, j)
			}
		}
		clear(active[len(kept):])
		active = kept
		w.gauges(active)
	}
}

// gather waits, on an idle model, for the requests arriving with the
// one that woke it (Options.AdmitWindow), so that they start together.
func (w *worker) gather() {
	win := w.s.opts.AdmitWindow
	if win <= 0 {
		return
	}
	t := time.NewTimer(win)
	defer t.Stop()
	for range 5 {
		w.mu.Lock()
		n := len(w.queue)
		w.mu.Unlock()
		if n >= w.limit() {
			return
		}
		select {
		case <-w.wake: // another arrived: wait once more
			t.Reset(win)
		case <-t.C:
			return
		case <-w.stop:
			return
		}
	}
}

// admit moves queued jobs into free slots, dropping those already
// cancelled, and starts their sequences (from the prefix cache when one
// shares the prompt's start).
func (w *worker) admit(active []*job) []*job {
	limit := w.limit()
	w.s.met.slotLimit.WithLabelValues(w.name).Set(float64(limit))
	w.mu.Lock()
	var start []*job
	rest := w.queue[:0]
	for _, j := range w.queue {
		switch {
		case j.ctx.Err() != nil:
			w.s.met.cancelled.WithLabelValues(w.name).Inc()
			j.emit(event{err: j.ctx.Err()})
		case len(active)+len(start) < limit:
			start = append(start, j)
		default:
			rest = append(rest, j)
		}
	}
	clear(w.queue[len(rest):])
	w.queue = rest
	n := len(rest)
	w.mu.Unlock()
	w.s.met.queue.WithLabelValues(w.name).Set(float64(n))
	for _, j := range start {
		if seq := w.prefix.take(j.prompt); seq != nil {
			j.seq, j.fed, j.cached = seq, seq.Len(), seq.Len()
			w.s.met.prefixLookups.WithLabelValues(w.name, "hit").Inc()
			w.hits++
		} else {
			w.s.met.prefixLookups.WithLabelValues(w.name, "miss").Inc()
			seq, err := w.m.Decoder.NewSequence(j.ctx)
			if err != nil {
				j.emit(event{err: err})
				continue
			}
			j.seq = seq
		}
		w.lookups++
		w.s.met.prefixHitRatio.WithLabelValues(w.name).Set(float64(w.hits) / float64(w.lookups))
		w.s.met.promptTokens.WithLabelValues(w.name).Add(float64(len(j.prompt)))
		j.prev = j.prompt[len(j.prompt)-1]
		active = append(active, j)
	}
	return active
}

// step runs one step of j's sequence; a panic in it fails the sequence,
// not the server.
func (j *job) step(ids []int) {
	defer func() {
		if p := recover(); p != nil {
			j.logits, j.stepErr, j.poisoned = nil, fmt.Errorf("panic in a decode step: %v", p), true
		}
	}()
	j.logits, j.stepErr = j.seq.Feed(j.ctx, ids)
}

// round runs one step of every active job, then samples. With a batched
// decoder (llm.Decoder.Batched) the decode steps of all the jobs past
// their prompt are one run of the model (continuous batching: a job that
// joined since the last round is in it, one that left is not), and the
// prompt chunks of equal length (prompts that arrived together) one run
// more. Otherwise every step runs on its own, one after the other or
// (Options.ParallelSteps) concurrently.
// heldPoll bounds how long a round of held sequences waits before it
// looks at their clients' contexts again.
const heldPoll = 20 * time.Millisecond

// round runs one step of every active job that is not held for its
// client and returns how many it stepped or ended.
func (w *worker) round(active []*job) int {
	w.arenaAt = 0
	var wg sync.WaitGroup
	var decode, prefills []*job
	var chunks [][]int
	batched := w.m.Decoder.Batched()
	for _, j := range active {
		j.logits, j.stepErr, j.held = nil, nil, false
		if err := j.ctx.Err(); err != nil {
			j.stepErr = err
			continue
		}
		ids := []int{j.last}
		prefill := j.fed < len(j.prompt)
		if !prefill && j.backlogged() {
			j.held = true
			continue
		}
		j.firstChunk = prefill && j.fed == j.cached
		if prefill {
			ids = j.prompt[j.fed:min(len(j.prompt), j.fed+w.s.opts.PrefillChunk)]
		}
		switch {
		case batched && prefill:
			prefills, chunks = append(prefills, j), append(chunks, ids)
			continue
		case batched:
			decode = append(decode, j)
			continue
		}
		if w.s.opts.ParallelSteps {
			wg.Go(func() { j.step(ids) })
		} else {
			j.step(ids)
		}
		if prefill {
			j.fed += len(ids)
			w.s.met.prefilled.WithLabelValues(w.name).Add(float64(len(ids)))
		}
	}
	wg.Wait()
	w.prefillBatched(prefills, chunks)
	w.stepBatch(decode)
	// a job whose first step found no memory for its key/value cache
	// waits in the queue while others hold theirs, and the slots are
	// limited to those others for a while
	var wait []*job
	others := 0
	for _, j := range active {
		switch {
		case j.stepErr == nil:
			others++
		case j.firstChunk && !j.poisoned && j.ctx.Err() == nil && errors.Is(j.stepErr, switchyard.ErrResourceExhausted):
			wait = append(wait, j)
		}
	}
	// the prefix cache's entries are held in the same budget: they give
	// way first, least recently used, the step tried again after each
	wait, freed := w.evictFor(wait)
	others += freed
	if others == 0 && len(wait) > 0 && w.prefix.lru.Len() == 0 && !w.evicted {
		wait = nil // nothing to wait for: they fail
	}
	w.evicted = false
	for _, j := range wait {
		w.requeue(j)
	}
	if len(wait) > 0 {
		w.slotCap, w.capUntil = others, time.Now().Add(memoryCapFor)
	}
	ran := 0
	for _, j := range active {
		if !j.held {
			ran++
		}
		switch {
		case j.held: // its client has not read: no step this round
		case j.seq == nil: // back in the queue
		case j.stepErr != nil:
			if j.ctx.Err() != nil {
				w.s.met.cancelled.WithLabelValues(w.name).Inc()
				w.end(j, event{err: j.ctx.Err()})
			} else {
				w.end(j, event{err: j.stepErr})
			}
		case j.fed < len(j.prompt): // prefill continues next round
		default:
			id := j.samp.next(j.logits)
			if j.topLP >= 0 && !w.m.isEnd(id) {
				prev := j.prev
				lp := logprobsOf(j.logits, id, j.topLP, func(id int) string { return w.m.Tokenizer.Piece(prev, id) })
				lp.offset = j.text.text.Len()
				j.lps = append(j.lps, lp)
			}
			w.sampled(j, id)
		}
		j.logits = nil
	}
	if ran > 0 {
		w.s.met.steps.WithLabelValues(w.name).Inc()
		w.s.met.stepSeqs.WithLabelValues(w.name).Observe(float64(ran))
	}
	return ran
}

// evictFor evicts prefix cache entries for jobs whose first prompt chunk
// found no memory for its key/value cache: one entry at a time, the
// chunk run again after each while the job's sequence is still usable
// (a batched decoder's refused step ran nothing). It returns the jobs
// still waiting and how many now ran. A job whose sequence broke goes
// back to the queue to start again, and may wait alone since memory was
// freed for it.
func (w *worker) evictFor(wait []*job) ([]*job, int) {
	kept, ran := wait[:0], 0
	for _, j := range wait {
		for errors.Is(j.stepErr, switchyard.ErrResourceExhausted) && w.prefix.evictOne() {
			w.evicted = true
			if j.seq.Err() != nil {
				break // a broken sequence starts again from the queue
			}
			chunk := j.prompt[j.cached:min(len(j.prompt), j.cached+w.s.opts.PrefillChunk)]
			j.stepErr, j.logits = nil, nil
			if w.m.Decoder.Batched() {
				w.feedGroup(j.ctx, []*job{j}, [][]int{chunk})
			} else {
				j.step(chunk)
			}
		}
		if j.stepErr == nil {
			ran++
		} else {
			kept = append(kept, j)
		}
	}
	return kept, ran
}

// requeue puts a job that has not started (its first prompt chunk failed
// for lack of memory) back at the front of the queue, its sequence (and
// the prefix it may have taken from the cache) closed.
func (w *worker) requeue(j *job) {
	_ = j.seq.Close()
	w.release(j)
	j.seq, j.fed, j.cached, j.stepErr = nil, 0, 0, nil
	w.s.met.memoryWaits.WithLabelValues(w.name).Inc()
	w.mu.Lock()
	w.queue = append([]*job{j}, w.queue...)
	n := len(w.queue)
	w.mu.Unlock()
	w.s.met.queue.WithLabelValues(w.name).Set(float64(n))
}

// prefillBatched runs the prompt chunks of a batched decoder's jobs: the
// chunks of one length in one run (FeedChunks), a chunk of a length no
// other has on its own. A run refused for lack of memory for all of
// them (their caches did not fit together) is tried again one job at a
// time, so that those that fit start and the others wait.
func (w *worker) prefillBatched(js []*job, chunks [][]int) {
	done := make([]bool, len(js))
	for i := range js {
		if done[i] {
			continue
		}
		var g []*job
		var gc [][]int
		for k := i; k < len(js); k++ {
			if !done[k] && len(chunks[k]) == len(chunks[i]) {
				g, gc, done[k] = append(g, js[k]), append(gc, chunks[k]), true
			}
		}
		if len(g) > 1 {
			w.feedGroup(w.ctx, g, gc)
			if errors.Is(g[0].stepErr, switchyard.ErrResourceExhausted) && !g[0].poisoned {
				for _, j := range g {
					j.stepErr = nil
				}
			} else {
				g = nil // done together
			}
		}
		for k, j := range g {
			// alone: its own context (a client going away stops its
			// prefill at once)
			w.feedGroup(j.ctx, []*job{j}, gc[k:k+1])
		}
		for _, c := range gc {
			w.s.met.prefilled.WithLabelValues(w.name).Add(float64(len(c)))
		}
	}
	for k, j := range js {
		j.fed += len(chunks[k])
	}
}

// stepBatch runs one decode step of every job in js in one run of the
// batched decoder.
func (w *worker) stepBatch(js []*job) {
	if len(js) == 0 {
		return
	}
	w.s.met.batchSeqs.WithLabelValues(w.name).Observe(float64(len(js)))
	chunks := make([][]int, len(js))
	for i, j := range js {
		chunks[i] = []int{j.last}
	}
	w.feedGroup(w.ctx, js, chunks)
}

// feedGroup runs chunks[i] on js[i]'s sequence for every i (chunks of one
// length) in one run of the batched decoder, under ctx, setting each
// job's logits or step error. The run writes the logits straight into
// this round's piece of the worker's arena (llm.Decoder.FeedChunksArena):
// the round's runs take disjoint pieces, and the logits are sampled
// before the next round. For several jobs ctx is the worker's, not a
// job's: a client going away does not cancel the others' step (its job
// is dropped after it). A panic in it fails those jobs, not the server.
func (w *worker) feedGroup(ctx context.Context, js []*job, chunks [][]int) {
	seqs := make([]*llm.Sequence, len(js))
	for i, j := range js {
		seqs[i] = j.seq
	}
	arena := w.arenaFor(len(js))
	var ls [][]float32
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic in a decode step: %v", p)
				for _, j := range js {
					j.poisoned = true
				}
			}
		}()
		ls, err = w.m.Decoder.FeedChunksArena(ctx, seqs, chunks, arena)
		return err
	}()
	for i, j := range js {
		if err != nil {
			j.stepErr = err
		} else {
			j.logits = ls[i]
		}
	}
}

// arenaFor is the next piece of this round's logits arena for n
// sequences: MaxBatch vocabularies kept from round to round (written
// again each step, not new memory), a new buffer beyond them (a step
// tried again in the same round).
func (w *worker) arenaFor(n int) []float32 {
	v := w.m.Decoder.Vocab()
	if w.arena == nil {
		w.arena = make([]float32, w.s.opts.MaxBatch*v)
	}
	if w.arenaAt+n*v > len(w.arena) {
		return make([]float32, n*v)
	}
	a := w.arena[w.arenaAt : w.arenaAt+n*v]
	w.arenaAt += n * v
	return a
}

// release drops a finished job's logits.
func (w *worker) release(j *job) { j.logits = nil }

// sampled takes a job's new token: the end of the generation (an end
// token, a stop sequence, max tokens, the context) or text for the
// client.
func (w *worker) sampled(j *job, id int) {
	if j.gen == 0 {
		j.first = time.Now()
		w.s.met.ttft.WithLabelValues(w.name).Observe(j.first.Sub(j.arrived).Seconds())
	}
	if w.m.isEnd(id) {
		w.end(j, event{finish: "stop"})
		return
	}
	j.gen++
	w.s.met.genTokens.WithLabelValues(w.name).Inc()
	piece := w.m.Tokenizer.Piece(j.prev, id)
	j.prev, j.last = id, id
	switch {
	case j.text.add(piece):
		w.end(j, event{finish: "stop"})
	case j.gen >= j.maxNew || j.seq.Len()+1 > w.m.ContextLength:
		w.end(j, event{finish: "length"})
	default:
		if d := j.text.delta(false); d != "" {
			j.emit(event{text: d, lps: j.lps})
			j.lps = nil
		}
	}
}

// end finishes a job: its last text and final event, its sequence kept in
// the prefix cache (when whole), its slot freed.
func (w *worker) end(j *job, ev event) {
	if ev.err == nil {
		ev.text = j.text.delta(true)
		// the tokens a stop sequence cut off entirely are not reported
		n := len(j.text.String())
		for _, lp := range j.lps {
			if lp.offset < n {
				ev.lps = append(ev.lps, lp)
			}
		}
		j.lps = nil
		ev.usage = usage{PromptTokens: len(j.prompt), CompletionTokens: j.gen, TotalTokens: len(j.prompt) + j.gen, cached: j.cached}
		if j.gen > 1 {
			if dt := time.Since(j.first); dt > 0 {
				w.s.met.tokensPerSec.WithLabelValues(w.name).Observe(float64(j.gen-1) / dt.Seconds())
			}
		}
	}
	j.emit(ev)
	w.release(j)
	if j.seq != nil {
		// a failed step leaves the sequence broken: put closes it
		if j.poisoned {
			_ = j.seq.Close()
		} else {
			j.seq.Park() // a batched decoder's slot freed
			w.prefix.put(j.seq)
		}
		j.seq = nil
	}
}

func (w *worker) gauges(active []*job) {
	var b int64
	for _, j := range active {
		b += j.seq.Bytes()
	}
	w.s.met.active.WithLabelValues(w.name).Set(float64(len(active)))
	w.s.met.kvBytes.WithLabelValues(w.name, "active").Set(float64(b))
	w.s.met.kvBytes.WithLabelValues(w.name, "prefix_cache").Set(float64(w.prefix.used))
}

// errorOf is the text of a failed generation for the client.
func errorOf(err error) string {
	if errors.Is(err, llm.ErrContext) {
		return err.Error()
	}
	return fmt.Sprintf("generation failed: %v", err)
}
