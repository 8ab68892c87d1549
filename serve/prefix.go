package serve

import (
	"container/list"
	"errors"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// prefixCache keeps the key/value caches of finished sequences, keyed by
// the tokens that filled them, so a request that starts with the same
// tokens (a conversation's next turn: the same rendered history, then
// the new message) prefills only what is new. An entry is taken out
// whole by the request that uses it (a sequence's cache has one owner)
// and cut back to the common prefix; finished sequences go back in.
// Memory is bounded by bytes and entries, least recently used evicted,
// and the entries' bytes are held against the model's memory budget
// (switchyard.Model.HoldMemory, which the key/value caches of the
// sequences running and the model's runs share): an entry that does not
// fit evicts older ones, and a request that finds no memory for its
// cache evicts entries before it waits (evictOne). Only the model's
// scheduler goroutine uses it.
type prefixCache struct {
	limit      int64 // bytes; <= 0: disabled
	maxEntries int
	used       int64
	lru        *list.List // of *prefixEntry, most recent first
	// budget, when set, is the model whose budget the entries are held in
	budget *switchyard.Model
	// headroom is the budget an entry may not take: the model's runs
	// reserve their buffers in the same budget as they go, and a run
	// refused half-way breaks the sequences it steps, so the cache never
	// fills the budget to its end
	headroom int64
	// evictions for the budget (the metric counts them)
	onEvict func()
}

// prefixEntry is a kept sequence, its bytes, and whether they are held
// in the budget.
type prefixEntry struct {
	seq   *llm.Sequence
	bytes int64
	held  bool
}

// prefixHeadroom is the budget the prefix cache leaves free (a batched
// step of a 0.5B model holds a few MiB of buffers; a 1B model's 128k
// logits for 16 sequences 8 MiB).
const prefixHeadroom = 32 << 20

func newPrefixCache(limit int64, maxEntries int, budget *switchyard.Model) *prefixCache {
	return &prefixCache{limit: limit, maxEntries: maxEntries, lru: list.New(), budget: budget, headroom: prefixHeadroom}
}

// take returns a sequence holding the longest prefix prompt shares with a
// cached one, at most len(prompt)-1 positions (the last prompt token is
// always fed, for its logits), or nil when none shares more than BOS.
// An entry that prompt continues whole is taken out of the cache; one it
// shares only a start with (another conversation with the same system
// prompt, a reply being regenerated) stays, and the request gets a copy
// of the shared positions (llm.Sequence.Fork), so a new conversation
// never takes an older one's cache away. Where a cache cannot be copied,
// the entry is taken and cut back.
func (p *prefixCache) take(prompt []int) *llm.Sequence {
	var best *list.Element
	bestN := 1
	for e := p.lru.Front(); e != nil; e = e.Next() {
		ids := e.Value.(*prefixEntry).seq.Tokens()
		n := 0
		for n < len(ids) && n < len(prompt)-1 && ids[n] == prompt[n] {
			n++
		}
		if n > bestN {
			best, bestN = e, n
		}
	}
	if best == nil {
		return nil
	}
	if e := best.Value.(*prefixEntry).seq; bestN < e.Len() {
		if f, err := e.Fork(bestN); err == nil {
			p.lru.MoveToFront(best)
			return f
		}
	}
	s := p.remove(best)
	if err := s.Truncate(bestN); err != nil {
		_ = s.Close()
		return nil
	}
	return s
}

// put keeps s (or closes it when the cache is off, s failed, or it alone
// exceeds the limit or cannot be held in the budget, with the headroom
// left free, with every other entry evicted), evicting the least
// recently used beyond the limits.
func (p *prefixCache) put(s *llm.Sequence) {
	b := s.Bytes()
	if p.limit <= 0 || s.Err() != nil || s.Len() < 2 || b > p.limit {
		_ = s.Close()
		return
	}
	for p.budget != nil {
		err := p.budget.HoldMemory(b + p.headroom)
		if err == nil {
			p.budget.ReleaseMemory(p.headroom)
			break
		}
		if !errors.Is(err, switchyard.ErrResourceExhausted) || !p.evictOne() {
			_ = s.Close()
			return
		}
	}
	p.lru.PushFront(&prefixEntry{seq: s, bytes: b, held: p.budget != nil})
	p.used += b
	for p.used > p.limit || p.lru.Len() > p.maxEntries {
		_ = p.remove(p.lru.Back()).Close()
	}
}

// evictOne closes the least recently used entry, giving its memory back;
// false when the cache is empty.
func (p *prefixCache) evictOne() bool {
	if p.lru.Len() == 0 {
		return false
	}
	_ = p.remove(p.lru.Back()).Close()
	if p.onEvict != nil {
		p.onEvict()
	}
	return true
}

func (p *prefixCache) remove(e *list.Element) *llm.Sequence {
	en := p.lru.Remove(e).(*prefixEntry)
	p.used -= en.bytes
	if en.held {
		p.budget.ReleaseMemory(en.bytes)
	}
	return en.seq
}

// close frees every entry.
func (p *prefixCache) close() {
	for p.lru.Len() > 0 {
		_ = p.remove(p.lru.Front()).Close()
	}
}
