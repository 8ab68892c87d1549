package exec

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Budget bounds the memory a model's runs hold in buffers the executor
// allocates (intermediates and outputs, including the idle buffers kept for
// the next run), across every concurrent Run of every Program that shares
// it (a model's main program and its partitions re-placed on the reference
// kernels). Every new buffer is reserved against the limit before it is
// allocated; when the reservation fails, idle buffers are dropped and the
// reservation is tried again, and if it still fails the allocation is
// refused with a *BudgetError. A nil *Budget is unlimited.
type Budget struct {
	limit int64
	held  atomic.Int64
	peak  atomic.Int64

	mu       sync.Mutex
	programs []*Program // whose idle arenas can be trimmed under pressure
}

// NewBudget returns a budget of limit bytes (limit <= 0: unlimited, only
// accounted).
func NewBudget(limit int64) *Budget {
	if limit < 0 {
		limit = 0
	}
	return &Budget{limit: limit}
}

// Limit is the budget in bytes (0: unlimited).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Held is the number of bytes buffers hold now.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}

// Peak is the most bytes buffers ever held at once.
func (b *Budget) Peak() int64 {
	if b == nil {
		return 0
	}
	return b.peak.Load()
}

// reserve accounts n more bytes if they fit.
func (b *Budget) reserve(n int64) bool {
	if b == nil {
		return true
	}
	for {
		cur := b.held.Load()
		next := cur + n
		if b.limit > 0 && next > b.limit {
			return false
		}
		if b.held.CompareAndSwap(cur, next) {
			for {
				p := b.peak.Load()
				if next <= p || b.peak.CompareAndSwap(p, next) {
					break
				}
			}
			return true
		}
	}
}

// Hold accounts n bytes held outside the executor's buffers (a
// backend's own memory for a compiled partition, a decoder's key/value
// caches) if they fit, dropping idle buffers first when they do not;
// Release gives them back.
func (b *Budget) Hold(n int64) bool {
	if b.reserve(n) {
		return true
	}
	b.trim()
	return b.reserve(n)
}

// Release gives back n bytes accounted by Hold.
func (b *Budget) Release(n int64) { b.release(n) }

func (b *Budget) release(n int64) {
	if b != nil && n != 0 {
		b.held.Add(-n)
	}
}

func (b *Budget) register(p *Program) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.programs = append(b.programs, p)
}

// trim drops the idle buffers of every program sharing the budget.
func (b *Budget) trim() {
	if b == nil {
		return
	}
	b.mu.Lock()
	progs := append([]*Program{}, b.programs...)
	b.mu.Unlock()
	for _, p := range progs {
		p.dropIdle()
	}
}

// BudgetError is a buffer refused because the model's memory budget would
// be exceeded. errors.Is(err, kernels.ErrResourceExhausted) holds.
type BudgetError struct {
	Node  string // the node whose output it was ("" when not known)
	DType graph.DType
	Shape []int
	Bytes int64 // the request
	Held  int64 // bytes the model's runs held when it was refused
	Limit int64 // the budget
}

func (e *BudgetError) Error() string {
	who := "a buffer"
	if e.Node != "" {
		who = e.Node
	}
	return fmt.Sprintf("exec: %s: memory budget exhausted: needs %s for %v%v while this model's runs hold %s of a %s budget (raise it with runtime.Options.MemoryBudget or --memory-budget): %v",
		who, FormatBytes(e.Bytes), e.DType, e.Shape, FormatBytes(e.Held), FormatBytes(e.Limit), kernels.ErrResourceExhausted)
}

// Unwrap makes errors.Is(err, kernels.ErrResourceExhausted) true.
func (e *BudgetError) Unwrap() error { return kernels.ErrResourceExhausted }

// FormatBytes writes a byte count for people: "1.5 GiB", "512 B".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
