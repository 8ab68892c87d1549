package llm

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchyard-hal/switchyard"
)

// Sequence is one token stream's decoder state — its key/value cache and
// the ids that filled it — for callers that run the token loop themselves
// (a server interleaving many streams, one step each in turn, and keeping
// a finished conversation's cache for its next turn). Feed runs the
// decoder on new ids after the cached ones and returns the last
// position's logits; the caller samples. A Sequence is not safe for
// concurrent use; Sequences of one Decoder run concurrently (Model.Run
// and sessions are). Close it to free a shared cache's session.
type Sequence struct {
	d      *Decoder
	c      *kvCache
	ids    []int
	broken error // a failed step: the cache may hold part of it
}

// NewSequence starts an empty sequence (no position cached).
func (d *Decoder) NewSequence(ctx context.Context) (*Sequence, error) {
	c, err := d.emptyCache(ctx)
	if err != nil {
		return nil, err
	}
	// a shared cache's steps write their logits into one buffer of the
	// cache, which Feed copies out: a fresh tensor a step (Zeros: 0.6 MB
	// cleared, on new pages, before the step began) cost more than the copy
	c.recycle = c.sess != nil
	return &Sequence{d: d, c: c}, nil
}

// Vocab is the width of the decoder's logits (-1 when the model does not
// fix it).
func (d *Decoder) Vocab() int { return d.vocab() }

// Feed runs the decoder on ids at the positions after the cached ones and
// returns the logits of the last of them (a slice the caller owns). The
// first id of a sequence is BOS, as Generate feeds it. A failed step
// leaves the sequence unusable: later calls return the same error.
func (s *Sequence) Feed(ctx context.Context, ids []int) ([]float32, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	if len(ids) == 0 {
		return nil, errors.New("llm: Feed of no ids")
	}
	if s.d.context > 0 && len(s.ids)+len(ids) > s.d.context {
		return nil, fmt.Errorf("%w: %d positions cached and %d more, the context is %d", ErrContext, len(s.ids), len(ids), s.d.context)
	}
	logits, next, err := s.d.step(ctx, ids, s.c)
	if err != nil {
		s.broken = fmt.Errorf("llm: position %d: %w", len(s.ids), err)
		return nil, s.broken
	}
	if next.recycle {
		logits = append([]float32(nil), logits...) // the cache's buffer: the caller gets its own (not cleared first)
	}
	s.c = next
	s.ids = append(s.ids, ids...)
	return logits, nil
}

// Len is the number of positions cached.
func (s *Sequence) Len() int { return len(s.ids) }

// Tokens is the ids cached, in order (the caller must not change them).
func (s *Sequence) Tokens() []int { return s.ids }

// Err is the error of a failed step, or nil.
func (s *Sequence) Err() error { return s.broken }

// Truncate keeps the first n cached positions and drops the rest, so a
// cached prefix can continue differently. A shared cache only forgets
// them (the next step overwrites them); a growing float32 cache is copied
// down to n positions. Other caches are refused.
func (s *Sequence) Truncate(n int) error {
	if s.broken != nil {
		return s.broken
	}
	if n < 0 || n > len(s.ids) {
		return fmt.Errorf("llm: Truncate(%d) of a sequence of %d positions", n, len(s.ids))
	}
	if n == len(s.ids) {
		return nil
	}
	if s.c.bs != nil {
		s.c.bs.truncate(n)
		s.c.n = n
		s.ids = s.ids[:n]
		return nil
	}
	if s.c.sess != nil {
		s.c.n = n
		s.ids = s.ids[:n]
		return nil
	}
	next, err := s.cut(n)
	if err != nil {
		return err
	}
	// the past now lies in neither double buffer; they stay for reuse
	s.c = &kvCache{t: next, n: n, buf: s.c.buf, slot: -1}
	s.ids = s.ids[:n]
	return nil
}

// Fork returns a new sequence holding a copy of the first n cached
// positions (their ids and key/value cache); s is unchanged. A cached
// conversation's shared start can so serve another conversation without
// taking it from its own. A shared cache (a session's state) cannot be
// copied: refused.
func (s *Sequence) Fork(n int) (*Sequence, error) {
	if s.broken != nil {
		return nil, s.broken
	}
	if n < 0 || n > len(s.ids) {
		return nil, fmt.Errorf("llm: Fork(%d) of a sequence of %d positions", n, len(s.ids))
	}
	ids := append([]int(nil), s.ids[:n]...)
	switch {
	case s.c.bs != nil:
		return &Sequence{d: s.d, c: &kvCache{t: switchyard.Tensors{}, n: n, slot: -1, bs: s.c.bs.fork(n)}, ids: ids}, nil
	case s.c.sess != nil:
		return nil, errors.New("llm: a shared cache cannot be forked")
	}
	next, err := s.cut(n)
	if err != nil {
		return nil, err
	}
	return &Sequence{d: s.d, c: &kvCache{t: next, n: n, slot: -1}, ids: ids}, nil
}

// cut is a growing float32 cache's first n positions, copied.
func (s *Sequence) cut(n int) (switchyard.Tensors, error) {
	next := switchyard.Tensors{}
	for past, t := range s.c.t {
		ax := s.d.pastDim[past]
		src, err := switchyard.Values[float32](t)
		if err != nil || ax >= len(t.Shape()) || t.Shape()[ax] != len(s.ids) {
			return nil, fmt.Errorf("llm: cannot cut the %v cache %q of shape %v", t.DType(), past, t.Shape())
		}
		outer, inner := 1, 1
		for i, x := range t.Shape() {
			switch {
			case i < ax:
				outer *= x
			case i > ax:
				inner *= x
			}
		}
		shape := append([]int(nil), t.Shape()...)
		shape[ax] = n
		dst := make([]float32, outer*n*inner)
		for o := range outer {
			copy(dst[o*n*inner:(o+1)*n*inner], src[o*len(s.ids)*inner:])
		}
		if next[past], err = switchyard.NewTensor(shape, dst); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// Bytes is the memory the cache holds: a shared cache's whole buffers,
// or a growing cache's tensors and spare buffers.
func (s *Sequence) Bytes() int64 {
	var n int64
	if s.c.bs != nil {
		return s.c.bs.bytes()
	}
	if s.c.sess != nil {
		for _, in := range s.d.pastIn {
			e := int64(in.DType.Size())
			if e == 0 {
				e = 4
			}
			for _, x := range in.Shape {
				e *= int64(max(x, 0))
			}
			n += e
		}
		return n
	}
	if s.c.buf != nil {
		for _, b := range s.c.buf {
			n += 4 * int64(cap(b[0])+cap(b[1]))
		}
		if s.c.slot >= 0 {
			return n
		}
	}
	for _, t := range s.c.t {
		n += int64(t.Len()) * int64(max(t.DType().Size(), 1))
	}
	return n
}

// Close frees the cache (a shared cache's session). The sequence is not
// usable after.
func (s *Sequence) Close() error {
	if s.broken == nil {
		s.broken = errors.New("llm: sequence closed")
	}
	if s.c != nil && s.c.bs != nil {
		s.c.bs.close()
		return nil
	}
	if s.c != nil && s.c.sess != nil {
		err := s.c.sess.Close()
		s.c.sess = nil
		return err
	}
	return nil
}
