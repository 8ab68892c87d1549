package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
)

// Options control one generation.
type Options struct {
	// Steps is the number of positions to run, prompt included (BOS is
	// position 0), as llama2.c counts them; 0 means 256.
	Steps int
	// ContextLength, when > 0, is the model's context: Steps beyond it is
	// refused before anything runs. 0 means the context the model's
	// metadata states (Decoder.ContextLength), if any.
	ContextLength int
	// Temperature 0 is greedy (argmax); otherwise logits are divided by it
	// and sampled, restricted to the TopK most likely (0: all) and to the
	// smallest set whose probability reaches TopP (0 or 1: all).
	Temperature float64
	TopK        int
	TopP        float64
	// Seed makes sampling repeatable.
	Seed uint64
}

// Token is one generated position.
type Token struct {
	Pos    int    // the position the token is at (1-based: BOS is 0)
	ID     int    // token id
	Text   string // its text after the previous token
	Prompt bool   // forced from the prompt, not sampled
}

// Result sums up a generation.
type Result struct {
	Tokens       []int         // the ids at positions 1.., prompt included
	PromptTokens []int         // the prompt's ids, BOS first
	Prefill      time.Duration // the first step: BOS and the whole prompt
	Decode       time.Duration // every later step
	Generated    int           // tokens produced by decode steps
	// PrefillTransfers and DecodeTransfers are the host↔device copies of
	// the prefill step and of all decode steps, when TransfersKnown (a
	// shared cache, run as a switchyard.Session: the cache stays where
	// its attention runs, on a device not copied per token).
	PrefillTransfers, DecodeTransfers switchyard.Transfers
	TransfersKnown                    bool
}

// TokensPerSecond is the decode speed.
func (r *Result) TokensPerSecond() float64 {
	if r.Decode <= 0 || r.Generated == 0 {
		return 0
	}
	return float64(r.Generated) / r.Decode.Seconds()
}

// ErrContext is returned when a generation would pass the context length.
var ErrContext = errors.New("llm: context length exceeded")

// Decoder is a loaded decoder model with its KV-cache wiring worked out.
type Decoder struct {
	m       *switchyard.Model
	ids     string            // the token-ids input
	logits  string            // the logits output
	rowsIn  string            // the optional input asking for the last N rows of logits ("": none)
	present map[string]string // past input → the present output feeding it
	pastDim map[string]int    // past input → index of its sequence axis
	pastIn  []switchyard.ValueInfo
	context int // the model's context length from its metadata, 0 if unknown
	// shared: the caches are context-long buffers updated in place (the
	// present outputs bound to the past tensors), pastLen the int32 input
	// saying how many positions they hold (formats/llama's SharedCache)
	shared  bool
	pastLen string
	// pool: a batched decoder's cache slots (batch.go), nil otherwise
	pool *batchPool
	// vocabN is the logits output's last dim, -1 when not fixed (vocab)
	vocabN int
}

// kvCache is a decoder's cache between steps: the past tensors by input
// name and the positions they hold (for a shared cache, a prefix of each
// buffer; otherwise their whole sequence axis).
type kvCache struct {
	t switchyard.Tensors
	n int
	// for a growing float32 cache: two buffers per input, the past in
	// buf[name][slot] (slot -1: in neither, a trimmed or first cache), the
	// next present written into the other, so steps allocate no cache
	buf  map[string]*[2][]float32
	slot int
	// sess carries a shared cache (the past inputs are its state)
	sess *switchyard.Session
	// bs is a batched decoder's cache (batch.go)
	bs *batchState
	// recycle: the owner reads a step's logits before it runs the next
	// step and keeps none of them, so a shared-cache step writes its
	// logits into spare, the previous step's tensor of the same shape
	// (decode's logits are a vocabulary of float32 a token, 0.5-0.6 MB
	// for Llama 3 and Qwen2.5: allocated and cleared every token, they
	// were most of what the garbage collector ran for); a step of another
	// length (prompt lookup's verification steps) makes spare anew over
	// logitBuf, grown to the longest step's logits
	recycle  bool
	spare    *switchyard.Tensor
	logitBuf []float32
	// in is a shared cache's step inputs, kept from step to step (the
	// next cache takes them over), so a decode step builds no map and no
	// tensor for them
	in *stepIn
}

// stepIn is what a shared-cache step feeds and binds, made once a
// session: the feeds map (ids, past length, logits rows) and its
// tensors, refilled in place each step, and the outputs map.
type stepIn struct {
	ids   []int64
	idsT  *switchyard.Tensor // over ids, [1, len(ids)]
	pos   *switchyard.Tensor // int32 [1]
	rows  *switchyard.Tensor // int64 [1], nil without a rows input
	feeds switchyard.Tensors
	outs  switchyard.Tensors
	posV  []int32
	rowsV []int64
}

// feedsFor refills st for a step of ids after n cached positions asking
// for rows logits rows, and returns its feeds (ids, past length, rows).
func (st *stepIn) feedsFor(d *Decoder, ids []int, n, rows int) (switchyard.Tensors, error) {
	if st.idsT == nil || len(st.ids) != len(ids) {
		if cap(st.ids) < len(ids) {
			st.ids = make([]int64, len(ids))
		}
		st.ids = st.ids[:len(ids)]
		t, err := switchyard.NewTensor([]int{1, len(ids)}, st.ids)
		if err != nil {
			return nil, err
		}
		st.idsT = t
		st.feeds[d.ids] = t
	}
	for i, v := range ids {
		st.ids[i] = int64(v)
	}
	st.posV[0] = int32(n)
	if st.rows != nil {
		st.rowsV[0] = int64(rows)
	}
	return st.feeds, nil
}

// newStepIn makes a shared-cache step's inputs (stepIn) for d.
func newStepIn(d *Decoder) (*stepIn, error) {
	st := &stepIn{feeds: switchyard.Tensors{}, outs: switchyard.Tensors{}, posV: []int32{0}, rowsV: []int64{1}}
	var err error
	if st.pos, err = switchyard.NewTensor([]int{1}, st.posV); err != nil {
		return nil, err
	}
	st.feeds[d.pastLen] = st.pos
	if d.rowsIn != "" {
		if st.rows, err = switchyard.NewTensor([]int{1}, st.rowsV); err != nil {
			return nil, err
		}
		st.feeds[d.rowsIn] = st.rows
	}
	return st, nil
}

// close frees the session of a shared cache.
func (c *kvCache) close() {
	if c != nil && c.sess != nil {
		_ = c.sess.Close()
	}
	if c != nil && c.bs != nil {
		c.bs.close()
	}
}

// ContextLength is the model's context length as its metadata states it
// (llama.context_length, which formats/llama records), or 0.
func (d *Decoder) ContextLength() int { return d.context }

// NewDecoder inspects m's inputs and outputs: an int64 input_ids input
// [batch, seq], a logits output [batch, seq, vocab], and for each input
// whose name starts with "past" the output named with "present" instead.
// A past input has one symbolic dim, its sequence axis (the cache grows
// by a new tensor each step), or, when the model has an int32
// past_sequence_length input [1], it is a context-long buffer [batch,
// kv_heads, context, head_size] that the decoder allocates once and binds
// as the present output too, so each step writes only its new positions
// (formats/llama's SharedCache, ONNX Runtime's past_present_share_buffer).
func NewDecoder(m *switchyard.Model) (*Decoder, error) {
	d := &Decoder{m: m, present: map[string]string{}, pastDim: map[string]int{}}
	batched := false
	outs := map[string]bool{}
	for _, o := range m.Outputs() {
		outs[o.Name] = true
		if o.Name == "logits" {
			d.logits = o.Name
		}
	}
	for _, in := range m.Inputs() {
		if in.Name == llama.PastLengthInput {
			if in.DType != switchyard.Int32 || len(in.Shape) != 1 || in.Shape[0] != 1 && in.Shape[0] >= 0 {
				return nil, fmt.Errorf("llm: input %q is %v%v, want int32 [1] (or [batch]: a batched decoder)", in.Name, in.DType, in.Shape)
			}
			batched = in.Shape[0] < 0
			d.shared, d.pastLen = true, in.Name
		}
	}
	for _, in := range m.Inputs() {
		switch {
		case in.Name == "input_ids":
			d.ids = in.Name
		case in.Name == d.pastLen:
		case in.Name == llama.LogitsRowsInput && in.DType == switchyard.Int64:
			d.rowsIn = in.Name
		case strings.HasPrefix(in.Name, "past"):
			out := "present" + strings.TrimPrefix(in.Name, "past")
			out = strings.Replace(out, "present_key_values", "present", 1)
			if !outs[out] {
				return nil, fmt.Errorf("llm: past input %q has no present output %q", in.Name, out)
			}
			axis, err := d.seqAxis(in)
			if err != nil {
				return nil, err
			}
			d.present[in.Name], d.pastDim[in.Name] = out, axis
			d.pastIn = append(d.pastIn, in)
		case in.Optional:
		default:
			return nil, fmt.Errorf("llm: input %q is not input_ids or a past_* cache input (attention masks and position ids are not fed yet)", in.Name)
		}
	}
	if n, err := strconv.Atoi(m.Metadata()["llama.context_length"]); err == nil && n > 0 {
		d.context = n
	}
	d.vocabN = -1
	for _, o := range m.Outputs() {
		if o.Name == d.logits && len(o.Shape) == 3 {
			d.vocabN = o.Shape[2]
		}
	}
	if d.ids == "" || d.logits == "" {
		return nil, errors.New("llm: a decoder needs an input_ids input and a logits output")
	}
	if len(d.pastIn) == 0 {
		return nil, errors.New("llm: the model has no past_* key/value inputs")
	}
	if batched {
		p, err := newBatchPool(d)
		if err != nil {
			return nil, err
		}
		d.pool = p
	}
	if d.shared {
		// the buffers hold the context: no longer one than the shortest
		p := d.pastIn[0].Shape[2]
		for _, in := range d.pastIn {
			p = min(p, in.Shape[2])
		}
		if d.context == 0 || d.context > p {
			d.context = p
		}
	}
	return d, nil
}

// seqAxis is the sequence axis of a past input: its one symbolic dim, or
// for a shared cache buffer (all dims fixed, [batch, kv_heads, context,
// head_size]) dim 2.
func (d *Decoder) seqAxis(in switchyard.ValueInfo) (int, error) {
	if d.shared {
		if d.pastLen != "" && len(in.Shape) == 4 && in.Shape[0] < 0 && slices.Min(in.Shape[1:]) > 0 {
			return 2, nil // batched: newBatchPool checks the rest
		}
		if len(in.Shape) != 4 || slices.Min(in.Shape) <= 0 {
			return 0, fmt.Errorf("llm: shared cache input %q has shape %v, want a fixed [batch, kv_heads, context, head_size]", in.Name, in.Dims)
		}
		return 2, nil
	}
	axis := -1
	for i, n := range in.Shape {
		if n < 0 {
			if axis >= 0 {
				return 0, fmt.Errorf("llm: past input %q has several symbolic dims %v; want only the sequence axis", in.Name, in.Dims)
			}
			axis = i
		}
	}
	if axis < 0 {
		return 0, fmt.Errorf("llm: past input %q has no symbolic sequence axis", in.Name)
	}
	return axis, nil
}

// SharedCache says whether the decoder updates context-long cache buffers
// in place (see NewDecoder) rather than receiving a new cache each step.
func (d *Decoder) SharedCache() bool { return d.shared }

// emptyCache is a cache holding no position: zero-length pasts, or, for
// a shared cache, a session whose state is the cache buffers (zeros),
// kept where the attention computing them runs. The caller closes it.
func (d *Decoder) emptyCache(ctx context.Context) (*kvCache, error) {
	c := &kvCache{t: switchyard.Tensors{}, slot: -1}
	if d.pool != nil {
		c.bs = d.pool.newState()
		return c, nil
	}
	if d.shared {
		pairs := make([]switchyard.StatePair, 0, len(d.pastIn))
		for _, in := range d.pastIn {
			pairs = append(pairs, switchyard.StatePair{Input: in.Name, Output: d.present[in.Name]})
		}
		sess, err := d.m.NewSession(ctx, pairs, nil)
		if err != nil {
			return nil, err
		}
		c.sess = sess
		return c, nil
	}
	for _, in := range d.pastIn {
		shape := append([]int(nil), in.Shape...)
		for i := range shape {
			if shape[i] < 0 {
				shape[i] = 0
			}
		}
		dt := in.DType
		if dt == 0 {
			dt = switchyard.Float32
		}
		t, err := switchyard.Zeros(dt, shape)
		if err != nil {
			return nil, err
		}
		c.t[in.Name] = t
	}
	return c, nil
}

// positions is the number of positions a generation asks for (Steps,
// default 256), checked against the context (o.ContextLength, default the
// model's, filled in).
func (d *Decoder) positions(o *Options) (int, error) {
	steps := o.Steps
	if steps <= 0 {
		steps = 256
	}
	if o.ContextLength == 0 {
		o.ContextLength = d.context
	}
	if o.ContextLength > 0 && steps > o.ContextLength {
		return 0, fmt.Errorf("%w: %d positions asked, the model's context is %d", ErrContext, steps, o.ContextLength)
	}
	return steps, nil
}

// Generate runs the token loop for prompt, calling yield with every token
// as it is known (prompt tokens included, as llama2.c prints them); a
// yield error or ctx ends the generation with that error. A generated BOS
// ends it early.
func (d *Decoder) Generate(ctx context.Context, tok Tokenizer, prompt string, o Options, yield func(Token) error) (*Result, error) {
	steps, err := d.positions(&o)
	if err != nil {
		return nil, err
	}
	p, err := tok.Encode(prompt, true)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return nil, errors.New("llm: an empty prompt and no BOS token: nothing to start from")
	}
	if len(p) > steps {
		return nil, fmt.Errorf("%w: the prompt has %d tokens with BOS, more than the %d positions asked", ErrContext, len(p), steps)
	}
	res := &Result{PromptTokens: p}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	cache, err := d.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	defer cache.close()
	cache.recycle = true // the logits are sampled before the next step and not kept
	var mark switchyard.Transfers
	if cache.sess != nil {
		res.TransfersKnown = true
		mark = cache.sess.Transfers()
	}
	prev := p[0]
	for pos := 1; pos < len(p); pos++ { // the prompt's tokens are forced
		res.Tokens = append(res.Tokens, p[pos])
		if err := yield(Token{Pos: pos, ID: p[pos], Text: tok.Piece(prev, p[pos]), Prompt: true}); err != nil {
			return res, err
		}
		prev = p[pos]
	}
	feed := p
	for pos := len(p); pos <= steps; pos++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		start := time.Now()
		logits, next, err := d.step(ctx, feed, cache)
		if err != nil {
			return res, fmt.Errorf("llm: position %d: %w", pos, err)
		}
		id := sample(logits, o, rng)
		if pos == len(p) {
			res.Prefill = time.Since(start)
		} else {
			res.Decode += time.Since(start)
			res.Generated++
		}
		if cache.sess != nil {
			now := cache.sess.Transfers()
			if pos == len(p) {
				res.PrefillTransfers = now.Sub(mark)
			} else {
				addTransfers(&res.DecodeTransfers, now.Sub(mark))
			}
			mark = now
		}
		cache = next
		if id == tok.BOS() {
			break
		}
		res.Tokens = append(res.Tokens, id)
		if err := yield(Token{Pos: pos, ID: id, Text: tok.Piece(prev, id)}); err != nil {
			return res, err
		}
		prev, feed = id, []int{id}
	}
	return res, nil
}

func addTransfers(t *switchyard.Transfers, d switchyard.Transfers) {
	t.Uploads += d.Uploads
	t.Downloads += d.Downloads
	t.UploadBytes += d.UploadBytes
	t.DownloadBytes += d.DownloadBytes
}

// step runs the decoder on ids after the cache and returns the last
// position's logits and the new cache (for a shared cache, the same
// buffers, updated).
func (d *Decoder) step(ctx context.Context, ids []int, cache *kvCache) ([]float32, *kvCache, error) {
	all, v, next, err := d.stepRows(ctx, ids, cache, 1)
	if err != nil {
		return nil, nil, err
	}
	return all[len(all)-v:], next, nil
}

// stepAll is step returning every position's logits ([len(ids), v]).
func (d *Decoder) stepAll(ctx context.Context, ids []int, cache *kvCache) ([]float32, int, *kvCache, error) {
	return d.stepRows(ctx, ids, cache, 0)
}

// stepRows is step returning the logits of the last rows positions
// ([rows, v]; 0: every position). Where the model takes logits_rows
// (formats/llama's decoders) the others are never computed (the
// classifier over a whole prompt was a third of its prefill); other
// decoders give every position's.
func (d *Decoder) stepRows(ctx context.Context, ids []int, cache *kvCache, rows int) ([]float32, int, *kvCache, error) {
	if rows <= 0 || rows > len(ids) || d.rowsIn == "" {
		rows = len(ids)
	}
	if d.shared && cache.bs == nil && len(cache.t) == 0 {
		if cache.in == nil {
			st, err := newStepIn(d)
			if err != nil {
				return nil, 0, nil, err
			}
			cache.in = st
		}
		feeds, err := cache.in.feedsFor(d, ids, cache.n, rows)
		if err != nil {
			return nil, 0, nil, err
		}
		return d.stepShared(ctx, ids, cache, feeds, rows)
	}
	in := make([]int64, len(ids))
	for i, v := range ids {
		in[i] = int64(v)
	}
	t, err := switchyard.NewTensor([]int{1, len(ids)}, in)
	if err != nil {
		return nil, 0, nil, err
	}
	if cache.bs != nil {
		all, v, err := d.pool.stepOne(ctx, cache.bs, ids, rows)
		if err != nil {
			return nil, 0, nil, err
		}
		return all, v, &kvCache{t: cache.t, n: cache.n + len(ids), bs: cache.bs, slot: -1}, nil
	}
	feeds := switchyard.Tensors{d.ids: t}
	for k, v := range cache.t {
		feeds[k] = v
	}
	if d.rowsIn != "" {
		r, err := switchyard.NewTensor([]int{1}, []int64{int64(rows)})
		if err != nil {
			return nil, 0, nil, err
		}
		feeds[d.rowsIn] = r
	}
	if d.shared {
		return d.stepShared(ctx, ids, cache, feeds, rows)
	}
	if outs, next := d.presentBuffers(cache, len(ids), rows); outs != nil {
		// float32 caches: presents into the spare buffers
		if err := d.m.RunInto(ctx, feeds, outs); err != nil {
			return nil, 0, nil, err
		}
		all, v, err := logitsOf(outs[d.logits], rows)
		if err != nil {
			return nil, 0, nil, err
		}
		return all, v, next, nil
	}
	outs, err := d.m.Run(ctx, feeds)
	if err != nil {
		return nil, 0, nil, err
	}
	all, v, err := logitsOf(outs[d.logits], rows)
	if err != nil {
		return nil, 0, nil, err
	}
	next := &kvCache{t: switchyard.Tensors{}, n: cache.n + len(ids), slot: -1}
	for past, present := range d.present {
		if outs[present] == nil {
			return nil, 0, nil, fmt.Errorf("no %s output", present)
		}
		next.t[past] = outs[present]
	}
	return all, v, next, nil
}

// presentBuffers sets up a step of a growing cache without allocating
// one: each present output goes into the buffer of its input the past is
// not in, grown (doubling) when short, and the cache after the step is
// those tensors. nil when a cache is not float32 or the logits' width is
// not fixed (the step then takes Run's new tensors).
func (d *Decoder) presentBuffers(cache *kvCache, s, rows int) (switchyard.Tensors, *kvCache) {
	v := d.vocab()
	if v <= 0 {
		return nil, nil
	}
	logits, err := switchyard.Zeros(switchyard.Float32, []int{1, rows, v})
	if err != nil {
		return nil, nil
	}
	if cache.buf == nil {
		cache.buf = map[string]*[2][]float32{}
	}
	other := 0
	if cache.slot == 0 {
		other = 1
	}
	outs := switchyard.Tensors{d.logits: logits}
	next := &kvCache{t: switchyard.Tensors{}, n: cache.n + s, buf: cache.buf, slot: other}
	for past, present := range d.present {
		t := cache.t[past]
		ax := d.pastDim[past]
		if t == nil || t.DType() != switchyard.Float32 || ax >= len(t.Shape()) {
			return nil, nil
		}
		shape := append([]int(nil), t.Shape()...)
		shape[ax] += s
		n := 1
		for _, x := range shape {
			n *= x
		}
		b := cache.buf[past]
		if b == nil {
			b = &[2][]float32{}
			cache.buf[past] = b
		}
		if cap(b[other]) < n {
			b[other] = make([]float32, max(n, 2*cap(b[other])))
		}
		p, err := switchyard.NewTensor(shape, b[other][:n])
		if err != nil {
			return nil, nil
		}
		outs[present], next.t[past] = p, p
	}
	return outs, next
}

// stepShared runs a step on shared cache buffers, the state of the
// cache's session: each present output is its past input's buffer, which
// the model updates in place (on the host, or on the device that runs the
// attention), and the logits go into a tensor of their own.
func (d *Decoder) stepShared(ctx context.Context, ids []int, cache *kvCache, feeds switchyard.Tensors, rows int) ([]float32, int, *kvCache, error) {
	if cache.n+len(ids) > d.context {
		return nil, 0, nil, fmt.Errorf("%w: %d positions cached and %d more, the cache holds %d", ErrContext, cache.n, len(ids), d.context)
	}
	if cache.in == nil {
		pos, err := switchyard.NewTensor([]int{1}, []int32{int32(cache.n)})
		if err != nil {
			return nil, 0, nil, err
		}
		feeds[d.pastLen] = pos
	}
	v := d.vocab()
	logits := cache.spare
	if s := shapeOf(logits); !cache.recycle || len(s) != 3 || s[1] != rows || s[2] != v || v < 0 {
		var err error
		switch {
		case cache.recycle && v > 0:
			if cap(cache.logitBuf) < rows*v {
				cache.logitBuf = make([]float32, rows*v)
			}
			logits, err = switchyard.NewTensor([]int{1, rows, v}, cache.logitBuf[:rows*v])
		default:
			logits, err = switchyard.Zeros(switchyard.Float32, []int{1, rows, v})
		}
		if err != nil {
			return nil, 0, nil, err
		}
	}
	var outs switchyard.Tensors
	if cache.in != nil {
		outs = cache.in.outs
		outs[d.logits] = logits
	} else {
		outs = switchyard.Tensors{d.logits: logits}
	}
	if err := cache.sess.RunInto(ctx, feeds, outs); err != nil {
		return nil, 0, nil, err
	}
	all, v, err := logitsOf(logits, rows)
	if err != nil {
		return nil, 0, nil, err
	}
	next := &kvCache{t: cache.t, n: cache.n + len(ids), sess: cache.sess, recycle: cache.recycle, in: cache.in}
	if cache.recycle {
		next.spare, next.logitBuf = logits, cache.logitBuf
	}
	return all, v, next, nil
}

// vocab is the logits output's last dim (-1 when not fixed), looked up
// once by NewDecoder (Model.Outputs copies the outputs' list: a
// decoder's fifty a step).
func (d *Decoder) vocab() int { return d.vocabN }

// logitsOf checks the logits tensor of a step over n ids, [1, n, vocab],
// and returns its values and vocab.
func logitsOf(lt *switchyard.Tensor, n int) ([]float32, int, error) {
	if lt == nil || len(lt.Shape()) != 3 || lt.Shape()[1] != n {
		return nil, 0, fmt.Errorf("logits output has shape %v, want [1,%d,vocab]", shapeOf(lt), n)
	}
	all, err := switchyard.Values[float32](lt)
	if err != nil {
		return nil, 0, fmt.Errorf("logits: %w", err)
	}
	return all, lt.Shape()[2], nil
}

func shapeOf(t *switchyard.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape()
}

// sample picks the next id from logits.
func sample(logits []float32, o Options, rng *rand.Rand) int {
	if o.Temperature <= 0 {
		return argmax(logits)
	}
	type cand struct {
		id int
		p  float64
	}
	max := math.Inf(-1)
	for _, x := range logits {
		max = math.Max(max, float64(x))
	}
	cs := make([]cand, len(logits))
	sum := 0.0
	for i, x := range logits {
		e := math.Exp((float64(x) - max) / o.Temperature)
		cs[i] = cand{i, e}
		sum += e
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].p > cs[j].p || cs[i].p == cs[j].p && cs[i].id < cs[j].id })
	n := len(cs)
	if o.TopK > 0 && o.TopK < n {
		n = o.TopK
	}
	if o.TopP > 0 && o.TopP < 1 {
		acc := 0.0
		for i := 0; i < n; i++ {
			acc += cs[i].p / sum
			if acc >= o.TopP {
				n = i + 1
				break
			}
		}
	}
	total := 0.0
	for _, c := range cs[:n] {
		total += c.p
	}
	r := rng.Float64() * total
	for _, c := range cs[:n] {
		if r -= c.p; r < 0 {
			return c.id
		}
	}
	return cs[n-1].id
}
