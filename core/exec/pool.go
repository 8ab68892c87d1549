package exec

import (
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
)

type poolKey struct {
	dt graph.DType
	n  int
}

// arena recycles intermediate buffers within a run: a value's buffer goes
// back to the free list when its last consumer has run, and the next
// allocation of the same dtype and size takes it. Arenas are cached per
// concrete input shape signature, so steady-state runs reuse buffers
// across runs too.
type arena struct {
	mu    sync.Mutex
	free  map[poolKey][]any
	owned map[*graph.Tensor]struct{}

	allocs, reuses  int
	liveBytes, peak int64
}

func newArena() *arena {
	return &arena{free: map[poolKey][]any{}, owned: map[*graph.Tensor]struct{}{}}
}

// Alloc implements kernels.Allocator.
func (a *arena) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, err
	}
	k := poolKey{dt, n}
	a.mu.Lock()
	var data any
	if l := a.free[k]; len(l) > 0 {
		data = l[len(l)-1]
		a.free[k] = l[:len(l)-1]
		a.reuses++
	}
	a.mu.Unlock()
	if data != nil {
		clearData(data)
	} else {
		if data, err = graph.MakeSlice(dt, n); err != nil {
			return nil, err
		}
		a.mu.Lock()
		a.allocs++
		a.mu.Unlock()
	}
	t := &graph.Tensor{DType: dt, Shape: append([]int{}, shape...), Data: data}
	a.mu.Lock()
	a.owned[t] = struct{}{}
	a.liveBytes += int64(n * max(dt.Size(), 1))
	if a.liveBytes > a.peak {
		a.peak = a.liveBytes
	}
	a.mu.Unlock()
	return t, nil
}

// release returns t's buffer to the free list if the arena owns it.
func (a *arena) release(t *graph.Tensor) {
	if t == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.owned[t]; !ok {
		return
	}
	delete(a.owned, t)
	n := t.Len()
	a.liveBytes -= int64(n * max(t.DType.Size(), 1))
	if t.DType == graph.String {
		return
	}
	k := poolKey{t.DType, n}
	a.free[k] = append(a.free[k], t.Data)
}

// disown hands t to the caller (a returned output): it is never recycled.
func (a *arena) disown(t *graph.Tensor) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.owned[t]; ok {
		delete(a.owned, t)
		a.liveBytes -= int64(t.Len() * max(t.DType.Size(), 1))
	}
}

// reset forgets ownership of everything (end of run) but keeps free buffers.
func (a *arena) reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for t := range a.owned {
		if t.DType != graph.String {
			k := poolKey{t.DType, t.Len()}
			a.free[k] = append(a.free[k], t.Data)
		}
	}
	clear(a.owned)
	a.liveBytes = 0
	a.allocs, a.reuses, a.peak = 0, 0, 0
}

func clearData(data any) {
	switch d := data.(type) {
	case []float32:
		clear(d)
	case []float64:
		clear(d)
	case []graph.F16:
		clear(d)
	case []graph.BF16:
		clear(d)
	case []int8:
		clear(d)
	case []int16:
		clear(d)
	case []int32:
		clear(d)
	case []int64:
		clear(d)
	case []uint8:
		clear(d)
	case []uint16:
		clear(d)
	case []uint32:
		clear(d)
	case []uint64:
		clear(d)
	case []bool:
		clear(d)
	case []string:
		clear(d)
	}
}

// dataPtr returns the address of a tensor's first element (0 when empty),
// used to detect kernels that alias an input.
func dataPtr(t *graph.Tensor) uintptr {
	if t == nil || t.Len() == 0 {
		return 0
	}
	if s, ok := t.Data.([]string); ok {
		return uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	}
	if b, ok := graph.RawBytes(t); ok && len(b) > 0 {
		return uintptr(unsafe.Pointer(&b[0]))
	}
	return 0
}
