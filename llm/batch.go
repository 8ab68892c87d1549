package llm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
)

// Batched decoding.
//
// A batched decoder (formats/llama's BuildBatch, loaded with
// LoadOptions{Method: llama.BatchMethod}) has a symbolic batch dim in
// front of every input: input_ids [batch, seq], past_sequence_length
// [batch], caches [batch, kv_heads, context, head_size]. Its sequences
// live in the slots of one pool: per cache input a host buffer of
// slots × kv_heads × context × head_size float32, slot i a whole
// [1, kv_heads, context, head_size] block of it. A prompt runs on its
// sequence's slot alone (batch 1, the slot's block as the cache); a
// decode step of B sequences (FeedBatch) moves them into slots 0..B-1
// (a move copies the positions a sequence holds, and happens only when
// the set of sequences stepped changes) and runs once with batch B over
// the first B blocks: every weight read once for all B tokens, each
// token at its own position, the attention of each over its own cache.
// The presents are bound to the pasts' very tensors, so the caches are
// written in place. A sequence that stops being stepped (a finished one
// the prefix cache keeps: Sequence.Park) gives its slot back, its
// positions copied out into a buffer of their own size. The slots are
// counted against the model's memory budget (Model.HoldMemory): a pool
// that would grow beyond it refuses with switchyard.ErrResourceExhausted
// (the parked buffers are not counted: their owner bounds them).

// batchPool holds a batched decoder's slots.
type batchPool struct {
	d  *Decoder
	mu sync.Mutex // runs and slot moves
	// kv, ctx: a cache input's dims 1 and 2; hs the bytes of its rows
	// (dim 3 × the element size: float32, float16 or Q8_0 blocks); per
	// the bytes of one slot
	kv, ctx, hs, per int
	dt               switchyard.DType
	buf              map[string][]byte // by past input, len(slots)·per
	slots            []*batchState     // nil: free
	// outs are logits tensors [b, 1, vocab] kept for runs into caller
	// buffers (FeedChunksInto), by b: the run writes into memory already
	// touched, where a fresh 0.6 MB a sequence each step cost page faults
	outs map[int]*switchyard.Tensor
}

// batchState is one sequence's cache in a pool: in a slot, or parked.
type batchState struct {
	p      *batchPool
	slot   int // -1: parked
	n      int // positions held
	parked map[string][]byte
	closed bool
}

// newBatchPool checks the batched decoder's cache inputs: float32,
// float16 or uint8 (Q8_0 rows), all of one dtype and shape [batch, kv,
// ctx, row].
func newBatchPool(d *Decoder) (*batchPool, error) {
	p := &batchPool{d: d, buf: map[string][]byte{}}
	for i, in := range d.pastIn {
		dt := in.DType
		if dt == switchyard.Undefined {
			dt = switchyard.Float32
		}
		if dt != switchyard.Float32 && dt != switchyard.Float16 && dt != switchyard.Uint8 || i > 0 && dt != p.dt {
			return nil, fmt.Errorf("llm: batched cache %q is %v; float32, float16 and uint8 (q8_0) caches of one type are batched", in.Name, in.DType)
		}
		p.dt = dt
		if len(in.Shape) != 4 || in.Shape[0] >= 0 || slices.Min(in.Shape[1:]) <= 0 {
			return nil, fmt.Errorf("llm: batched cache %q has shape %v, want [batch, kv_heads, context, head_size]", in.Name, in.Dims)
		}
		if i == 0 {
			p.kv, p.ctx, p.hs = in.Shape[1], in.Shape[2], in.Shape[3]*dt.Size()
		} else if in.Shape[1] != p.kv || in.Shape[2] != p.ctx || in.Shape[3]*dt.Size() != p.hs {
			return nil, fmt.Errorf("llm: batched caches of different shapes: %q is %v", in.Name, in.Shape)
		}
	}
	p.per = p.kv * p.ctx * p.hs
	// one sequence's slot now: a cache that cannot hold even one
	// sequence within the model's memory budget is refused at load
	if err := p.grow(1); err != nil {
		return nil, err
	}
	return p, nil
}

// Batched reports whether the decoder is a batched one (FeedBatch runs its
// sequences in one pass).
func (d *Decoder) Batched() bool { return d.pool != nil }

// Model is the model the decoder runs: a caller keeping sequences' caches
// (a server's prefix cache) accounts them against its memory budget
// (Model.HoldMemory).
func (d *Decoder) Model() *switchyard.Model { return d.m }

// newState is an empty parked state.
func (p *batchPool) newState() *batchState { return &batchState{p: p, slot: -1} }

// grow makes room for n slots (the pool only grows, to the most
// sequences stepped at once; a slot is reused once free).
func (p *batchPool) grow(n int) error {
	if n <= len(p.slots) {
		return nil
	}
	if int64(n)*int64(p.per)*int64(len(p.d.pastIn)) > 1<<40 {
		return fmt.Errorf("llm: %d cache slots of %d bytes: too large", n, p.per)
	}
	// the slots are host memory the model's budget counts (its runs
	// share it): growing beyond it is refused, not an out-of-memory
	slot := int64(p.per) * int64(len(p.d.pastIn)) // per is bytes
	if err := p.d.m.HoldMemory(int64(n-len(p.slots)) * slot); err != nil {
		return fmt.Errorf("llm: the key/value cache of %d sequences at once (%.1f MiB each at context %d): %w",
			n, float64(slot)/(1<<20), p.ctx, err)
	}
	for _, in := range p.d.pastIn {
		b := make([]byte, n*p.per)
		copy(b, p.buf[in.Name])
		p.buf[in.Name] = b
	}
	p.slots = append(p.slots, make([]*batchState, n-len(p.slots))...)
	return nil
}

// rows copies n positions of every head from src's block at slot s (or a
// parked [kv, n, hs] buffer when s < 0) to dst's at slot t (likewise).
func (p *batchPool) rows(dst []byte, t int, src []byte, s int, n int) {
	for h := 0; h < p.kv; h++ {
		var si, ti int
		if s >= 0 {
			si = s*p.per + h*p.ctx*p.hs
		} else {
			si = h * n * p.hs
		}
		if t >= 0 {
			ti = t*p.per + h*p.ctx*p.hs
		} else {
			ti = h * n * p.hs
		}
		copy(dst[ti:ti+n*p.hs], src[si:si+n*p.hs])
	}
}

// attach puts a parked state in slot t (free), copying its positions in.
func (p *batchPool) attach(st *batchState, t int) {
	for name, b := range p.buf {
		if st.n > 0 {
			p.rows(b, t, st.parked[name], -1, st.n)
		}
	}
	st.parked, st.slot = nil, t
	p.slots[t] = st
}

// park moves a state out of its slot into buffers of its own size.
func (p *batchPool) park(st *batchState) {
	if st.slot < 0 {
		return
	}
	st.parked = map[string][]byte{}
	for name, b := range p.buf {
		pb := make([]byte, p.kv*st.n*p.hs)
		p.rows(pb, -1, b, st.slot, st.n)
		st.parked[name] = pb
	}
	p.slots[st.slot] = nil
	st.slot = -1
}

// free is a free slot, the pool grown if none is.
func (p *batchPool) free() (int, error) {
	for i, s := range p.slots {
		if s == nil {
			return i, nil
		}
	}
	i := len(p.slots)
	return i, p.grow(i + 1)
}

// place gives st a slot when it is parked.
func (p *batchPool) place(st *batchState) error {
	if st.closed {
		return errors.New("llm: sequence closed")
	}
	if st.slot >= 0 {
		return nil
	}
	t, err := p.free()
	if err != nil {
		return err
	}
	p.attach(st, t)
	return nil
}

// arrange puts sts in consecutive slots and returns them in slot order
// with the first slot. Where they already hold consecutive slots (in any
// order: the sequences stepped last round, those that joined since in the
// free slots after them) nothing moves; otherwise they are put in slots
// 0..len(sts)-1 (in the order of their slots now: a sequence keeps its
// slot while the set stepped stays the same), a sequence in the way
// parked.
func (p *batchPool) arrange(sts []*batchState) ([]*batchState, int, error) {
	if err := p.grow(len(sts)); err != nil {
		return nil, 0, err
	}
	for _, st := range sts {
		if err := p.place(st); err != nil {
			return nil, 0, err
		}
	}
	order := slices.Clone(sts)
	sort.Slice(order, func(i, j int) bool { return order[i].slot < order[j].slot })
	if lo := order[0].slot; order[len(order)-1].slot-lo == len(order)-1 {
		return order, lo, nil // distinct slots spanning len(order): consecutive
	}
	for i, st := range order {
		if st.slot == i {
			continue
		}
		// slot i holds another sequence (not stepped: those before i are
		// in place) or none: that one moves out, st moves in
		if o := p.slots[i]; o != nil {
			p.park(o)
		}
		from := st.slot
		for _, b := range p.buf {
			p.rows(b, i, b, from, st.n)
		}
		p.slots[from], p.slots[i], st.slot = nil, st, i
	}
	return order, 0, nil
}

// views are the cache tensors of slots [from, from+b): both the pasts fed
// and the presents bound (the same tensors: in place).
func (p *batchPool) views(from, b int) (switchyard.Tensors, error) {
	ts := switchyard.Tensors{}
	for _, in := range p.d.pastIn {
		t, err := p.view([]int{b, p.kv, p.ctx, p.hs / p.dt.Size()}, p.buf[in.Name][from*p.per:(from+b)*p.per])
		if err != nil {
			return nil, err
		}
		ts[in.Name] = t
	}
	return ts, nil
}

// run runs the batched decoder on ids [b, s] over slots from..from+b-1
// with the positions cached ns, and returns the logits of the last rows
// positions of each sequence [b, rows, vocab] (rows 0: all s; the
// classifier is computed only for those where the model takes
// logits_rows, else every position's are returned).
func (p *batchPool) run(ctx context.Context, from int, ids [][]int, ns []int, rows int) ([]float32, int, error) {
	return p.runKeep(ctx, from, ids, ns, rows, false, nil)
}

// maxKeptBatch bounds the batch sizes whose logits tensors a pool keeps.
const maxKeptBatch = 64

// runKeep is run; with keep, the logits are written into a tensor the
// pool keeps for the next run of the same batch size (valid until then,
// under p.mu) instead of a new one; with into (b·vocab floats or more)
// and one row a sequence, into the caller's into.
func (p *batchPool) runKeep(ctx context.Context, from int, ids [][]int, ns []int, rows int, keep bool, into []float32) ([]float32, int, error) {
	d := p.d
	b, s := len(ids), len(ids[0])
	in := make([]int64, 0, b*s)
	pl := make([]int32, b)
	for i, row := range ids {
		if len(row) != s {
			return nil, 0, errors.New("llm: a batched step of rows of different lengths")
		}
		if ns[i]+s > p.ctx {
			return nil, 0, fmt.Errorf("%w: %d positions cached and %d more, the cache holds %d", ErrContext, ns[i], s, p.ctx)
		}
		for _, id := range row {
			in = append(in, int64(id))
		}
		pl[i] = int32(ns[i])
	}
	idt, err := switchyard.NewTensor([]int{b, s}, in)
	if err != nil {
		return nil, 0, err
	}
	plt, err := switchyard.NewTensor([]int{b}, pl)
	if err != nil {
		return nil, 0, err
	}
	v := d.vocab()
	if v <= 0 {
		return nil, 0, errors.New("llm: the batched decoder's logits have no static vocabulary size")
	}
	if rows <= 0 || rows > s || d.rowsIn == "" {
		rows = s
	}
	keep = keep && rows == 1 && b <= maxKeptBatch
	logits := p.outs[b]
	if rows == 1 && len(into) >= b*v {
		// the caller's memory (FeedChunksArena)
		if logits, err = switchyard.NewTensor([]int{b, 1, v}, into[:b*v:b*v]); err != nil {
			return nil, 0, err
		}
	} else if !keep || logits == nil {
		if logits, err = switchyard.Zeros(switchyard.Float32, []int{b, rows, v}); err != nil {
			return nil, 0, err
		}
		if keep {
			if p.outs == nil {
				p.outs = map[int]*switchyard.Tensor{}
			}
			p.outs[b] = logits
		}
	}
	caches, err := p.views(from, b)
	if err != nil {
		return nil, 0, err
	}
	feeds := switchyard.Tensors{d.ids: idt, d.pastLen: plt}
	if d.rowsIn != "" {
		r, err := switchyard.NewTensor([]int{1}, []int64{int64(rows)}) // the last rows of each
		if err != nil {
			return nil, 0, err
		}
		feeds[d.rowsIn] = r
	}
	outs := switchyard.Tensors{d.logits: logits}
	for past, t := range caches {
		feeds[past], outs[d.present[past]] = t, t
	}
	if err := d.m.RunInto(ctx, feeds, outs); err != nil {
		return nil, 0, err
	}
	all, err := switchyard.Values[float32](logits)
	if err != nil {
		return nil, 0, err
	}
	return all, v, nil
}

// stepOne runs ids on one state's slot (a prompt chunk, or a lone
// decode step) and returns the logits of the last rows positions (0:
// every position's).
func (p *batchPool) stepOne(ctx context.Context, st *batchState, ids []int, rows int) ([]float32, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.place(st); err != nil {
		return nil, 0, err
	}
	all, v, err := p.run(ctx, st.slot, [][]int{ids}, []int{st.n}, rows)
	if err != nil {
		return nil, 0, err
	}
	st.n += len(ids)
	return all, v, nil
}

// bytes is the memory a state holds: its slot's block, or its parked
// positions.
func (st *batchState) bytes() int64 {
	p := st.p
	if st.slot >= 0 {
		return int64(p.per) * int64(len(p.d.pastIn))
	}
	return int64(p.kv*st.n*p.hs) * int64(len(st.parked))
}

// close frees a state's slot or parked buffers.
func (st *batchState) close() {
	p := st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if st.slot >= 0 {
		p.slots[st.slot] = nil
	}
	st.slot, st.parked, st.closed = -1, nil, true
}

// Park gives a sequence's slot in a batched decoder's pool back, its
// cached positions copied into memory of their own size (Bytes then
// counts only those); its next step takes a slot again. A sequence
// kept but not stepped for a while (a finished conversation kept for
// its next turn) is parked so that slots are not held for it. It does
// nothing for other decoders.
func (s *Sequence) Park() {
	if s.c == nil || s.c.bs == nil {
		return
	}
	p := s.c.bs.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.park(s.c.bs)
}

// FeedBatch runs one decode step of every sequence in seqs, ids[i] after
// seqs[i]'s cached positions, and returns each one's logits (slices the
// caller owns). For a batched decoder (Batched) it is one run of the
// model over all of them: the weights are read once for the whole batch;
// otherwise it is each sequence's Feed in turn. The sequences must be
// distinct sequences of d. A failed step leaves every one of them broken
// (their caches may hold part of it), except one refused before it ran
// (see FeedChunks).
func (d *Decoder) FeedBatch(ctx context.Context, seqs []*Sequence, ids []int) ([][]float32, error) {
	if len(seqs) != len(ids) {
		return nil, fmt.Errorf("llm: FeedBatch of %d sequences and %d ids", len(seqs), len(ids))
	}
	chunks := make([][]int, len(ids))
	for i := range ids {
		chunks[i] = ids[i : i+1 : i+1]
	}
	return d.FeedChunks(ctx, seqs, chunks)
}

// FeedChunks is FeedBatch with a chunk of ids per sequence (prompt chunks
// of several sequences prefilled together), all chunks of one length: it
// runs chunks[i] after seqs[i]'s cached positions and returns the logits
// of the last position of each (the classifier runs for those rows only
// where the model allows). For a batched decoder it is one run of the
// model over every chunk ([len(seqs), len(chunk)] ids); otherwise each
// sequence's Feed in turn. A failed run leaves every sequence broken; a
// step refused before it ran (no room for the sequences' caches within
// the model's memory budget: switchyard.ErrResourceExhausted, or a
// sequence at the end of its context: ErrContext) leaves them as they
// were.
func (d *Decoder) FeedChunks(ctx context.Context, seqs []*Sequence, chunks [][]int) ([][]float32, error) {
	v := d.vocab()
	if d.pool == nil || v <= 0 {
		return d.feedEach(ctx, seqs, chunks)
	}
	dst := make([][]float32, len(seqs))
	for i := range dst {
		dst[i] = make([]float32, v)
	}
	if err := d.FeedChunksInto(ctx, seqs, chunks, dst); err != nil {
		return nil, err
	}
	return dst, nil
}

// feedEach is each sequence's Feed in turn.
func (d *Decoder) feedEach(ctx context.Context, seqs []*Sequence, chunks [][]int) ([][]float32, error) {
	if len(seqs) != len(chunks) {
		return nil, fmt.Errorf("llm: FeedChunks of %d sequences and %d chunks", len(seqs), len(chunks))
	}
	out := make([][]float32, len(seqs))
	for i, sq := range seqs {
		l, err := sq.Feed(ctx, chunks[i])
		if err != nil {
			return nil, err
		}
		out[i] = l
	}
	return out, nil
}

// FeedChunksInto is FeedChunks writing each sequence's logits into dst[i]
// (Vocab long): a server stepping the same sequences again and again
// reuses its buffers, and a batched decoder's run writes into a logits
// tensor it keeps, not new memory each step.
func (d *Decoder) FeedChunksInto(ctx context.Context, seqs []*Sequence, chunks [][]int, dst [][]float32) error {
	if len(dst) != len(seqs) {
		return fmt.Errorf("llm: FeedChunks of %d sequences, %d chunks and %d buffers", len(seqs), len(chunks), len(dst))
	}
	_, err := d.feedChunks(ctx, seqs, chunks, dst, nil)
	return err
}

// FeedChunksArena is FeedChunksInto without the copy: a batched decoder's
// run writes the logits of all the sequences straight into arena (at
// least len(seqs)·Vocab floats, the caller's, kept from step to step as
// FeedChunksInto's buffers are), and it returns each sequence's logits as
// a Vocab-long piece of arena (seqs[i]'s first; the pieces lie in the
// order the run took the sequences). A decoder that is not batched
// returns the sequences' own logits (Feed's), as FeedChunks does.
func (d *Decoder) FeedChunksArena(ctx context.Context, seqs []*Sequence, chunks [][]int, arena []float32) ([][]float32, error) {
	if v := d.vocab(); d.pool != nil && len(arena) < len(seqs)*v {
		return nil, fmt.Errorf("llm: FeedChunksArena of %d floats for %d sequences of %d logits", len(arena), len(seqs), v)
	}
	return d.feedChunks(ctx, seqs, chunks, nil, arena)
}

// feedChunks is FeedChunksInto (dst) or FeedChunksArena (arena).
func (d *Decoder) feedChunks(ctx context.Context, seqs []*Sequence, chunks [][]int, dst [][]float32, arena []float32) ([][]float32, error) {
	if len(seqs) != len(chunks) {
		return nil, fmt.Errorf("llm: FeedChunks of %d sequences and %d chunks", len(seqs), len(chunks))
	}
	if len(seqs) == 0 {
		return nil, nil
	}
	s := len(chunks[0])
	for _, c := range chunks {
		if len(c) != s || s == 0 {
			return nil, errors.New("llm: FeedChunks of empty chunks or chunks of different lengths")
		}
	}
	v := d.vocab()
	for _, b := range dst {
		if len(b) != v {
			return nil, fmt.Errorf("llm: FeedChunksInto buffer of %d logits, the vocabulary is %d", len(b), v)
		}
	}
	if d.pool == nil {
		ls, err := d.feedEach(ctx, seqs, chunks)
		if err != nil || dst == nil {
			return ls, err
		}
		for i, l := range ls {
			copy(dst[i], l)
		}
		return dst, nil
	}
	sts := make([]*batchState, len(seqs))
	at := make(map[*batchState]int, len(seqs))
	for i, sq := range seqs {
		switch {
		case sq.d != d:
			return nil, errors.New("llm: FeedChunks of a sequence of another decoder")
		case sq.broken != nil:
			return nil, sq.broken
		case sq.c.bs == nil:
			return nil, errors.New("llm: FeedChunks of a sequence without a batched cache")
		}
		if _, dup := at[sq.c.bs]; dup {
			return nil, errors.New("llm: FeedChunks of one sequence twice")
		}
		if d.context > 0 && len(sq.ids)+s > d.context {
			return nil, fmt.Errorf("%w: %d positions cached and %d more, the context is %d", ErrContext, len(sq.ids), s, d.context)
		}
		sts[i], at[sq.c.bs] = sq.c.bs, i
	}
	p := d.pool
	p.mu.Lock()
	order, from, err := p.arrange(sts)
	if err != nil {
		// nothing ran: the sequences are as they were (some perhaps
		// moved to other slots)
		p.mu.Unlock()
		return nil, err
	}
	rows, ns := make([][]int, len(order)), make([]int, len(order))
	for j, st := range order {
		rows[j], ns[j] = chunks[at[st]], st.n
	}
	out := dst
	if out == nil {
		out = make([][]float32, len(seqs))
	}
	all, v, err := p.runKeep(ctx, from, rows, ns, 1, true, arena)
	if err == nil {
		for _, st := range order {
			st.n += s
		}
		r := len(all) / (len(order) * v) // rows of logits per sequence: 1, or s without logits_rows
		inArena := arena != nil && len(all) > 0 && &all[0] == &arena[0]
		for j, st := range order {
			k := (j*r + r - 1) * v
			i := at[st]
			switch {
			case inArena: // written there by the run: no copy
				out[i] = all[k : k+v : k+v]
			case dst == nil:
				out[i] = arena[j*v : (j+1)*v : (j+1)*v]
				copy(out[i], all[k:k+v])
			default:
				copy(out[i], all[k:k+v])
			}
		}
	}
	p.mu.Unlock()
	if err != nil {
		for _, sq := range seqs {
			sq.broken = fmt.Errorf("llm: position %d: %w", len(sq.ids), err)
		}
		return nil, seqs[0].broken
	}
	for i, sq := range seqs {
		sq.ids = append(sq.ids, chunks[i]...)
	}
	return out, nil
}

// truncate keeps the first n positions (the later ones are overwritten
// by the next steps).
func (st *batchState) truncate(n int) {
	p := st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if st.slot < 0 && st.parked != nil {
		for name, b := range st.parked {
			nb := make([]byte, p.kv*n*p.hs)
			for h := 0; h < p.kv; h++ {
				copy(nb[h*n*p.hs:(h+1)*n*p.hs], b[h*st.n*p.hs:])
			}
			st.parked[name] = nb
		}
	}
	st.n = n
}

// fork is a new parked state holding a copy of st's first n positions.
func (st *batchState) fork(n int) *batchState {
	p := st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	out := &batchState{p: p, slot: -1, n: n, parked: map[string][]byte{}}
	for _, in := range p.d.pastIn {
		var src []byte
		base, stride := 0, st.n*p.hs // a parked [kv, st.n, hs bytes] buffer
		if st.slot >= 0 {
			src, base, stride = p.buf[in.Name], st.slot*p.per, p.ctx*p.hs
		} else {
			src = st.parked[in.Name]
		}
		dst := make([]byte, p.kv*n*p.hs)
		for h := 0; h < p.kv; h++ {
			copy(dst[h*n*p.hs:(h+1)*n*p.hs], src[base+h*stride:])
		}
		out.parked[in.Name] = dst
	}
	return out
}

// view is a tensor of the pool's dtype over b (not copied).
func (p *batchPool) view(shape []int, b []byte) (*switchyard.Tensor, error) {
	if len(b) == 0 {
		return switchyard.Zeros(p.dt, shape)
	}
	switch p.dt {
	case switchyard.Float16:
		return switchyard.NewTensor(shape, unsafe.Slice((*graph.F16)(unsafe.Pointer(&b[0])), len(b)/2))
	case switchyard.Uint8:
		return switchyard.NewTensor(shape, b)
	}
	return switchyard.NewTensor(shape, unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4))
}
