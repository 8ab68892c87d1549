package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard"
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
	present map[string]string // past input → the present output feeding it
	pastDim map[string]int    // past input → index of its sequence axis
	pastIn  []switchyard.ValueInfo
	context int // the model's context length from its metadata, 0 if unknown
}

// ContextLength is the model's context length as its metadata states it
// (llama.context_length, which core/llama records), or 0.
func (d *Decoder) ContextLength() int { return d.context }

// NewDecoder inspects m's inputs and outputs: an int64 input_ids input
// [batch, seq], a logits output [batch, seq, vocab], and for each input
// whose name starts with "past" the output named with "present" instead.
func NewDecoder(m *switchyard.Model) (*Decoder, error) {
	d := &Decoder{m: m, present: map[string]string{}, pastDim: map[string]int{}}
	outs := map[string]bool{}
	for _, o := range m.Outputs() {
		outs[o.Name] = true
		if o.Name == "logits" {
			d.logits = o.Name
		}
	}
	for _, in := range m.Inputs() {
		switch {
		case in.Name == "input_ids":
			d.ids = in.Name
		case strings.HasPrefix(in.Name, "past"):
			out := "present" + strings.TrimPrefix(in.Name, "past")
			out = strings.Replace(out, "present_key_values", "present", 1)
			if !outs[out] {
				return nil, fmt.Errorf("llm: past input %q has no present output %q", in.Name, out)
			}
			axis := -1
			for i, n := range in.Shape {
				if n < 0 {
					if axis >= 0 {
						return nil, fmt.Errorf("llm: past input %q has several symbolic dims %v; want only the sequence axis", in.Name, in.Dims)
					}
					axis = i
				}
			}
			if axis < 0 {
				return nil, fmt.Errorf("llm: past input %q has no symbolic sequence axis", in.Name)
			}
			d.present[in.Name], d.pastDim[in.Name] = out, axis
			d.pastIn = append(d.pastIn, in)
		case in.Optional:
		default:
			return nil, fmt.Errorf("llm: input %q is not input_ids or a past_* cache input (attention masks and position ids are not fed yet)", in.Name)
		}
	}
	if rt := m.Runtime(); rt != nil && rt.IR() != nil {
		if n, err := strconv.Atoi(rt.IR().Metadata["llama.context_length"]); err == nil && n > 0 {
			d.context = n
		}
	}
	if d.ids == "" || d.logits == "" {
		return nil, errors.New("llm: a decoder needs an input_ids input and a logits output")
	}
	if len(d.pastIn) == 0 {
		return nil, errors.New("llm: the model has no past_* key/value inputs")
	}
	return d, nil
}

// emptyCache is a zero-length past for every cache input.
func (d *Decoder) emptyCache() (switchyard.Tensors, error) {
	feeds := switchyard.Tensors{}
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
		feeds[in.Name] = t
	}
	return feeds, nil
}

// Generate runs the token loop for prompt, calling yield with every token
// as it is known (prompt tokens included, as llama2.c prints them); a
// yield error or ctx ends the generation with that error. A generated BOS
// ends it early.
func (d *Decoder) Generate(ctx context.Context, tok Tokenizer, prompt string, o Options, yield func(Token) error) (*Result, error) {
	steps := o.Steps
	if steps <= 0 {
		steps = 256
	}
	if o.ContextLength == 0 {
		o.ContextLength = d.context
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
	res := &Result{PromptTokens: p}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	cache, err := d.emptyCache()
	if err != nil {
		return nil, err
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

// step runs the decoder on ids after the cache and returns the last
// position's logits and the new cache.
func (d *Decoder) step(ctx context.Context, ids []int, cache switchyard.Tensors) ([]float32, switchyard.Tensors, error) {
	all, v, next, err := d.stepAll(ctx, ids, cache)
	if err != nil {
		return nil, nil, err
	}
	return all[len(all)-v:], next, nil
}

// stepAll is step returning every position's logits ([len(ids), v]).
func (d *Decoder) stepAll(ctx context.Context, ids []int, cache switchyard.Tensors) ([]float32, int, switchyard.Tensors, error) {
	in := make([]int64, len(ids))
	for i, v := range ids {
		in[i] = int64(v)
	}
	t, err := switchyard.NewTensor([]int{1, len(ids)}, in)
	if err != nil {
		return nil, 0, nil, err
	}
	feeds := switchyard.Tensors{d.ids: t}
	for k, v := range cache {
		feeds[k] = v
	}
	outs, err := d.m.Run(ctx, feeds)
	if err != nil {
		return nil, 0, nil, err
	}
	lt := outs[d.logits]
	if lt == nil || len(lt.Shape) != 3 || lt.Shape[1] != len(ids) {
		return nil, 0, nil, fmt.Errorf("logits output has shape %v, want [1,%d,vocab]", shapeOf(lt), len(ids))
	}
	all, err := switchyard.Values[float32](lt)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("logits: %w", err)
	}
	v := lt.Shape[2]
	next := switchyard.Tensors{}
	for past, present := range d.present {
		if outs[present] == nil {
			return nil, 0, nil, fmt.Errorf("no %s output", present)
		}
		next[past] = outs[present]
	}
	return all, v, next, nil
}

func shapeOf(t *switchyard.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}

// sample picks the next id from logits.
func sample(logits []float32, o Options, rng *rand.Rand) int {
	if o.Temperature <= 0 {
		best := 0
		for i, x := range logits {
			if x > logits[best] {
				best = i
			}
		}
		return best
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
