package serve

import (
	"container/list"

	"github.com/switchyard-hal/switchyard/llm"
)

// prefixCache keeps the key/value caches of finished sequences, keyed by
// the tokens that filled them, so a request that starts with the same
// tokens (a conversation's next turn: the same rendered history, then
// the new message) prefills only what is new. An entry is taken out
// whole by the request that uses it (a sequence's cache has one owner)
// and cut back to the common prefix; finished sequences go back in.
// Memory is bounded by bytes and entries, least recently used evicted.
// Only the model's scheduler goroutine uses it.
type prefixCache struct {
	limit      int64 // bytes; <= 0: disabled
	maxEntries int
	used       int64
	lru        *list.List // of *llm.Sequence, most recent first
}

func newPrefixCache(limit int64, maxEntries int) *prefixCache {
	return &prefixCache{limit: limit, maxEntries: maxEntries, lru: list.New()}
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
		ids := e.Value.(*llm.Sequence).Tokens()
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
	if e := best.Value.(*llm.Sequence); bestN < e.Len() {
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
// exceeds the limit), evicting the least recently used beyond the limits.
func (p *prefixCache) put(s *llm.Sequence) {
	b := s.Bytes()
	if p.limit <= 0 || s.Err() != nil || s.Len() < 2 || b > p.limit {
		_ = s.Close()
		return
	}
	p.lru.PushFront(s)
	p.used += b
	for p.used > p.limit || p.lru.Len() > p.maxEntries {
		_ = p.remove(p.lru.Back()).Close()
	}
}

func (p *prefixCache) remove(e *list.Element) *llm.Sequence {
	s := p.lru.Remove(e).(*llm.Sequence)
	p.used -= s.Bytes()
	return s
}

// close frees every entry.
func (p *prefixCache) close() {
	for p.lru.Len() > 0 {
		_ = p.remove(p.lru.Front()).Close()
	}
}
