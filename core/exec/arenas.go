package exec

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// arenaCache keeps a few idle arenas of one shape signature. Unlike a
// sync.Pool it survives garbage collections, so a model's buffers stay
// allocated (and their pages faulted in) between runs: steady-state runs
// allocate nothing for intermediates.
type arenaCache struct {
	mu   sync.Mutex
	free []*arena
	// hot is one more idle arena, taken (get) and put back (put) with one
	// atomic operation each instead of a lock pair: runs one at a time,
	// the common case, take the lock only for their first two runs
	hot atomic.Pointer[arena]
	// evicted: no longer in the program's map: arenas put back are
	// dropped (set under mu; read without it by arenaFor, on every run)
	evicted atomic.Bool
	runs    int         // arenas handed out under mu (runs of the signature)
	many    atomic.Bool // runs reached 2: get may take hot without mu
}

// maxIdleArenas bounds the arenas kept per signature (one per concurrent Run).
const maxIdleArenas = 4

func (c *arenaCache) get(b *Budget, limit int64) *arena {
	if c.many.Load() {
		if a := c.hot.Swap(nil); a != nil {
			return a
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs++
	if c.runs >= 2 {
		c.many.Store(true)
	}
	if a := c.hot.Swap(nil); a != nil {
		return a
	}
	if n := len(c.free); n > 0 {
		a := c.free[n-1]
		c.free = c.free[:n-1]
		return a
	}
	return newArena(b, limit)
}

// adopt moves an idle arena of from (if any) to c when c has none.
func (c *arenaCache) adopt(from *arenaCache) {
	from.mu.Lock()
	a := from.hot.Swap(nil)
	if n := len(from.free); a == nil && n > 0 {
		a = from.free[n-1]
		from.free = from.free[:n-1]
	}
	from.mu.Unlock()
	if a == nil {
		return
	}
	c.mu.Lock()
	if len(c.free) > 0 || c.evicted.Load() {
		c.mu.Unlock()
		from.put(a)
		return
	}
	if !a.classes {
		a.dropFree() // its buffers are of exact sizes, not of classes
		a.classes = true
	}
	a.migrated = true
	c.free = append(c.free, a)
	c.mu.Unlock()
}

func (c *arenaCache) put(a *arena) {
	if !c.evicted.Load() && c.hot.CompareAndSwap(nil, a) {
		// evicted since (dropIdle may have looked at hot before a went
		// in): take it back out, as the locked path would have dropped it
		if c.evicted.Load() && c.hot.CompareAndSwap(a, nil) {
			a.dropFree()
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) < maxIdleArenas && !c.evicted.Load() {
		c.free = append(c.free, a)
		return
	}
	a.dropFree() // its buffers leave the budget with it
}

// dropIdle lets go of the idle arenas' buffers (the arenas stay idle,
// hot's in free when there is room).
func (c *arenaCache) dropIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.hot.Swap(nil); a != nil {
		a.dropFree()
		if len(c.free) < maxIdleArenas && !c.evicted.Load() {
			c.free = append(c.free, a)
		}
	}
	for _, a := range c.free {
		a.dropFree()
	}
}

func (m *Program) arenaPool(sig string) *arenaCache {
	m.arenasMu.Lock()
	defer m.arenasMu.Unlock()
	p, ok := m.arenas[sig]
	if !ok {
		if len(m.arenas) > 64 { // bound the cache for models fed many shapes
			for _, c := range m.arenas {
				c.mu.Lock()
				c.evicted.Store(true)
				c.mu.Unlock()
				c.dropIdle()
			}
			clear(m.arenas)
		}
		p = &arenaCache{}
		m.arenas[sig] = p
	}
	return p
}

// dropIdle lets go of every buffer idle arenas keep for later runs.
func (m *Program) dropIdle() {
	m.arenasMu.Lock()
	caches := make([]*arenaCache, 0, len(m.arenas))
	for _, c := range m.arenas {
		caches = append(caches, c)
	}
	m.arenasMu.Unlock()
	for _, c := range caches {
		c.dropIdle()
	}
}

// Trim drops the buffers kept for later runs (runs in flight keep theirs):
// their memory goes back to the garbage collector and leaves the budget.
func (m *Program) Trim() { m.dropIdle() }

// Budget returns the budget the program's buffers are accounted in (nil:
// none).
func (m *Program) Budget() *Budget { return m.budget }

// checkInputs validates the caller's inputs (feeds, by m.inputs).
func (m *Program) checkInputs(feeds []*graph.Tensor) error {
	type symDim struct {
		name string
		v    int
	}
	var symBuf [4]symDim
	sym := symBuf[:0]
	for i, in := range m.inputs {
		t := feeds[i]
		if t == nil {
			if _, hasDefault := m.g.Initializers[in.Name]; hasDefault {
				continue
			}
			return fmt.Errorf("exec: %w: input %q (%v) is missing", kernels.ErrInvalid, in.Name, in.Type)
		}
		if err := t.Check(); err != nil {
			return fmt.Errorf("exec: %w: input %q: %v", kernels.ErrInvalid, in.Name, err)
		}
		want := in.Type
		if want.DType != graph.Undefined && want.DType != t.DType {
			return fmt.Errorf("exec: %w: input %q is %v, model wants %v", kernels.ErrInvalid, in.Name, t.DType, want.DType)
		}
		if want.Shape == nil {
			continue
		}
		if len(want.Shape) != len(t.Shape) {
			return fmt.Errorf("exec: %w: input %q has shape %v, model wants rank %d %v", kernels.ErrInvalid, in.Name, t.Shape, len(want.Shape), want.Shape)
		}
		for i, d := range want.Shape {
			switch {
			case d.Static() && int(d.Value) != t.Shape[i]:
				return fmt.Errorf("exec: %w: input %q has shape %v, model wants %v (dim %d)", kernels.ErrInvalid, in.Name, t.Shape, want.Shape, i)
			case d.Param != "":
				seen := false
				for _, s := range sym {
					if s.name == d.Param {
						seen = true
						if s.v != t.Shape[i] {
							return fmt.Errorf("exec: %w: input %q dim %d is %d but symbolic dim %q is already %d", kernels.ErrInvalid, in.Name, i, t.Shape[i], d.Param, s.v)
						}
					}
				}
				if !seen {
					sym = append(sym, symDim{d.Param, t.Shape[i]})
				}
			}
		}
	}
	return nil
}

// lastSig is the shape signature of the latest run and its arenas, so
// that runs of one shape build no signature.
type lastSig struct {
	dts    []graph.DType
	shapes [][]int
	cache  *arenaCache
}

func (l *lastSig) matches(feeds []*graph.Tensor) bool {
	if l == nil || len(l.dts) != len(feeds) {
		return false
	}
	for i, t := range feeds {
		if t == nil {
			if l.shapes[i] != nil {
				return false
			}
			continue
		}
		if l.shapes[i] == nil || l.dts[i] != t.DType || !graph.SameShape(l.shapes[i], t.Shape) {
			return false
		}
	}
	return true
}

// arenaFor returns the arena cache of the feeds' concrete shape signature.
func (m *Program) arenaFor(feeds []*graph.Tensor) *arenaCache {
	if l := m.last.Load(); l.matches(feeds) {
		if !l.cache.evicted.Load() {
			return l.cache
		}
	}
	// the signature before it (a decoder's steps of one token and of a
	// few alternate): the two swap; an idle arena moves back as below
	// only from a signature that ran once (a prompt's prefill), so two
	// that alternate keep one each instead of passing one to and fro,
	// dropping the other's buffers each time
	if l := m.prevSig.Load(); l.matches(feeds) {
		if !l.cache.evicted.Load() {
			if prev := m.last.Swap(l); prev != nil {
				once := !prev.cache.many.Load() // ran once at most
				if once {
					l.cache.adopt(prev.cache)
				}
				m.prevSig.Store(prev)
			}
			return l.cache
		}
	}
	var buf [256]byte
	sig := buf[:0]
	l := &lastSig{dts: make([]graph.DType, len(feeds)), shapes: make([][]int, len(feeds))}
	for i, t := range feeds {
		if t == nil {
			sig = append(sig, '-', ';')
			continue
		}
		sig = strconv.AppendInt(sig, int64(t.DType), 10)
		for _, d := range t.Shape {
			sig = append(sig, ',')
			sig = strconv.AppendInt(sig, int64(d), 10)
		}
		sig = append(sig, ';')
		l.dts[i], l.shapes[i] = t.DType, append([]int{}, t.Shape...)
	}
	l.cache = m.arenaPool(string(sig))
	if prev := m.last.Load(); prev != nil && prev.cache != l.cache {
		// a new shape (a decoder's growing cache): an idle arena of the
		// previous shape moves here with its buffers, most of which the
		// new shape needs too; the first run here drops those it did not
		l.cache.adopt(prev.cache)
	}
	m.prevSig.Store(m.last.Swap(l))
	return l.cache
}
