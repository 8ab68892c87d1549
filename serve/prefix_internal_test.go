package serve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// freeIn is the most m's budget lets be held now.
func freeIn(m *switchyard.Model, budget int64) int64 {
	lo, hi := int64(0), budget+1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if m.HoldMemory(mid) == nil {
			m.ReleaseMemory(mid)
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// TestPrefixCacheHeldInBudget: the prefix cache's entries are held in the
// model's memory budget (what the batched decoder's slots and runs
// share): keeping one takes its bytes from the budget, evicting or
// closing gives them back; an entry that does not fit evicts the least
// recently used ones first, and one that cannot fit even alone is not
// kept.
func TestPrefixCacheHeldInBudget(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/stories260K")
	ctx := context.Background()
	const budget = 64 << 20
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}, MemoryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	seq := func(n int) *llm.Sequence {
		s, err := d.NewSequence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int, n)
		for i := range ids {
			ids[i] = 1 + i%300
		}
		if _, err := s.Feed(ctx, ids); err != nil {
			t.Fatal(err)
		}
		s.Park() // as a finished request's sequence is kept
		return s
	}
	a, b, c, big := seq(100), seq(200), seq(150), seq(450)
	ab, bb, cb := a.Bytes(), b.Bytes(), c.Bytes()
	free0 := freeIn(m, budget)
	p := newPrefixCache(1<<30, 64, m)
	p.headroom = 0 // checked at the end
	evictions := 0
	p.onEvict = func() { evictions++ }
	p.put(a)
	p.put(b)
	if got := free0 - freeIn(m, budget); got != ab+bb || p.used != ab+bb {
		t.Fatalf("two entries of %d and %d bytes: %d held in the budget, %d counted", ab, bb, got, p.used)
	}
	// room for c only once a (the least recently used) is gone
	fill := freeIn(m, budget) - (cb - ab/2)
	if err := m.HoldMemory(fill); err != nil {
		t.Fatal(err)
	}
	p.put(c)
	if p.lru.Len() != 2 || p.lru.Front().Value.(*prefixEntry).seq != c || p.lru.Back().Value.(*prefixEntry).seq != b || evictions != 1 {
		t.Fatalf("after c: %d entries, %d evictions; want c and b kept, a evicted", p.lru.Len(), evictions)
	}
	if a.Err() == nil {
		if _, err := a.Feed(ctx, []int{5}); err == nil {
			t.Fatal("the evicted entry's sequence was not closed")
		}
	}
	// big cannot fit with every entry evicted: not kept, and the entries
	// it evicted trying are gone
	p.put(big)
	if p.lru.Len() != 0 || p.used != 0 {
		t.Fatalf("an entry too big for the budget: %d entries (%d bytes) kept", p.lru.Len(), p.used)
	}
	m.ReleaseMemory(fill)
	if got := freeIn(m, budget); got != free0 {
		t.Fatalf("after every entry went: %d bytes free, %d before", got, free0)
	}
	// evictOne gives an entry's bytes back
	d2 := seq(50)
	p.put(d2)
	if !p.evictOne() || p.evictOne() || freeIn(m, budget) != free0 {
		t.Fatal("evictOne did not give the entry's memory back")
	}
	// the headroom stays free: an entry that would leave less is not kept
	p.headroom = 1 << 20
	fill = freeIn(m, budget) - p.headroom - d2.Bytes()/2
	if err := m.HoldMemory(fill); err != nil {
		t.Fatal(err)
	}
	d3 := seq(50)
	p.put(d3)
	if p.lru.Len() != 0 {
		t.Fatal("an entry was kept in the budget's headroom")
	}
	m.ReleaseMemory(fill)
	d4 := seq(50)
	p.put(d4)
	if p.lru.Len() != 1 || freeIn(m, budget) != free0-d4.Bytes() {
		t.Fatal("with room beyond the headroom, the entry was not kept, or its bytes not held")
	}
	p.close()
}
