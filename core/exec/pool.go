package exec

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// poolKey is a buffer's dtype and element count in one word (the dtype
// in the top byte), so that the free lists hash a plain integer.
type poolKey uint64

// freeBuf is a free buffer and its length (its capacity is its key's
// count).
type freeBuf struct {
	data any
	n    int
	v    *bufViews // nil until the buffer is taken at another length
}

// bufViews are a buffer's data at each length it has been handed out at
// (a buffer taken by fit serves values of several sizes): kept with the
// buffer, so that a length it had before needs no new slice header (an
// interface holding a slice is one allocation), and steady-state runs
// allocate nothing.
type bufViews struct {
	n    []int
	data []any
	next int // the view replaced next once there are maxViews
}

// maxViews bounds a buffer's views: a server whose prompts have every
// length would otherwise add one per length, without end, and scan them
// all on each allocation.
const maxViews = 16

// at is the buffer's data at count elements (b's own data when its
// length is count).
func (b *freeBuf) at(count int) any {
	if b.n == count {
		return b.data
	}
	if b.v == nil {
		b.v = &bufViews{n: []int{b.n}, data: []any{b.data}}
	}
	for i, n := range b.v.n {
		if n == count {
			return b.v.data[i]
		}
	}
	d := graph.SliceData(b.data, 0, count) // within its capacity
	if len(b.v.n) < maxViews {
		b.v.n, b.v.data = append(b.v.n, count), append(b.v.data, d)
		return d
	}
	i := 1 + b.v.next%(maxViews-1) // the first view is the buffer's own
	b.v.n[i], b.v.data[i] = count, d
	b.v.next++
	return d
}

// ownedBuf is what the arena knows of a tensor it handed out: its
// buffer's free list (key, and the list itself, so that a release looks
// nothing up) and the buffer's views.
type ownedBuf struct {
	k poolKey
	l *freeList
	v *bufViews
}

// freeList holds the free buffers of one key. The arena's map keeps a
// list once made while tensors of its key are out (dropping buffers
// empties lists in place), so an owned tensor's list is the map's.
type freeList []freeBuf

// class is the count of the buffer an allocation of n elements takes:
// n itself, or in an arena that has run more than one shape signature (a
// decoder's growing cache; classes set by arenaCache.adopt) n rounded up
// to an eighth of its power of two, so that a value one position longer
// than the last run's reuses its buffer.
func (a *arena) class(n int) int {
	if !a.classes || n <= 64 {
		return n
	}
	step := 1 << (bits.Len(uint(n-1)) - 3)
	return (n + step - 1) &^ (step - 1)
}

func keyOf(dt graph.DType, n int) poolKey { return poolKey(uint64(dt)<<56 | uint64(n)) }

func (k poolKey) dt() graph.DType { return graph.DType(k >> 56) }
func (k poolKey) n() int          { return int(k & (1<<56 - 1)) }

// arena recycles intermediate buffers within a run: a value's buffer goes
// back to the free list when its last consumer has run, and the next
// allocation of the same dtype and size takes it. Arenas are cached per
// concrete input shape signature, so steady-state runs reuse buffers
// across runs too. Every buffer an arena holds, in use or free, is
// reserved in the program's Budget before it is allocated.
//
// An arena is one run's alone from arenaCache.get to finish, and the
// run's kernels allocate and release on the run's goroutine (the
// nodeAlloc a kernel call gets is not safe for concurrent use either), so
// alloc and release, which run for every value of every run, take no
// lock; mu guards what a kernel's nested runs (frames) and views share,
// and the idle arena's buffers that Trim drops (dropFree).
type arena struct {
	mu   sync.Mutex
	free map[poolKey]*freeList
	// owned are the tensors handed out this run, each with the key of its
	// buffer's free list (its capacity: with fit, a larger one than the
	// tensor's class)
	owned ownedSet

	budget *Budget
	limit  int64 // per-tensor byte limit (0: graph.MaxTensorBytes)
	held   int64 // bytes of every buffer held (owned or free), reserved in budget

	allocs, reuses  int
	liveBytes, peak int64

	// what the runs on this arena reuse: a frame per plan, the run's
	// state and (when the caller asks for none) its statistics
	frames map[*plan]*frame
	main   *frame // the main plan's (also in frames), see mainFrame
	run    run
	stats  Stats
	// tensors are the headers of released values, reused for the next
	// allocations (their shapes are not: a kernel may share a shape slice)
	tensors []*graph.Tensor
	// views are this run's view headers (nodeAlloc.View): owned by no
	// one, recycled at reset
	views []*graph.Tensor
	// shapes is where this run's tensor shapes are carved from (shapeOf),
	// from the start again after each run; tensors handed to the caller
	// get their own copy (disown)
	shapes   []int
	shapeOff int
	// bound is the table of caller tensors bound to the main plan's
	// steps (run.bound), kept for the next run
	bound [][]*graph.Tensor
	// ptrs backs dataPtrs' list
	ptrs []uintptr
	// migrated marks an arena moved from another shape signature
	// (arenaCache.adopt): its next run notes the sizes it uses (used)
	// and, at reset, drops the free buffers of the others
	migrated bool
	used     map[poolKey]bool
	// classes: buffers come in size classes (see class)
	classes bool
}

func newArena(b *Budget, limit int64) *arena {
	return &arena{free: map[poolKey]*freeList{}, frames: map[*plan]*frame{}, budget: b, limit: limit}
}

// elemBytes is the accounted size of one element (a string counts its
// header).
func elemBytes(dt graph.DType) int64 {
	if dt == graph.String {
		return 16
	}
	return int64(max(dt.Size(), 1))
}

// Alloc implements kernels.Allocator.
func (a *arena) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	return a.alloc(dt, shape, nil, true)
}

// AllocUninit implements kernels.UninitAllocator.
func (a *arena) AllocUninit(dt graph.DType, shape []int) (*graph.Tensor, error) {
	return a.alloc(dt, shape, nil, false)
}

// Release implements kernels.Releaser.
func (a *arena) Release(t *graph.Tensor) { a.release(t) }

// alloc hands out a buffer for node n's output (n may be nil), zeroed
// unless zero is false (the kernel writes every element; strings are
// always cleared, so that no old string stays reachable).
func (a *arena) alloc(dt graph.DType, shape []int, n *graph.Node, zero bool) (*graph.Tensor, error) {
	count, err := graph.CheckAllocLimit(dt, shape, a.limit)
	if err != nil {
		return nil, err
	}
	cls := a.class(count)
	bytes := int64(cls) * elemBytes(dt)
	k := keyOf(dt, cls)
	if a.migrated {
		if a.used == nil {
			a.used = map[poolKey]bool{}
		}
		a.used[k] = true
	}
	var data any
	if l := a.free[k]; l != nil && len(*l) > 0 {
		b := l.take(count)
		a.reuses++
		data = b.at(count)
		// a recycled buffer (this runs for every value of every run)
		t := a.header(dt, shape, data, k, l, b.v)
		if zero || dt == graph.String {
			clearData(data)
		}
		return t, nil
	}
	if fk, ok := a.fit(dt, cls); ok {
		// no free buffer of this size: the smallest larger one
		l := a.free[fk]
		b := l.take(count)
		if a.migrated {
			a.used[fk] = true
		}
		a.reuses++
		data = b.at(count)
		t := a.header(dt, shape, data, fk, l, b.v)
		if zero {
			clearData(data)
		}
		return t, nil
	}
	a.dropSmaller(dt, cls)
	if err := a.reserve(bytes, dt, shape, n); err != nil {
		return nil, err
	}
	if data, err = graph.MakeSlice(dt, cls); err != nil {
		a.budget.release(bytes)
		return nil, err
	}
	if cls != count {
		data = graph.SliceData(data, 0, count)
	}
	a.allocs++
	a.held += bytes
	l := a.free[k]
	if l == nil {
		l = new(freeList)
		a.free[k] = l
	}
	t := a.header(dt, shape, data, k, l, nil)
	return t, nil
}

// take removes a buffer from the free list (the arena's run's goroutine;
// the list is not empty): one last used at count elements
// where there is one, so that its data needs no new slice header (a run
// repeating the last run's allocations allocates nothing).
func (fl *freeList) take(count int) freeBuf {
	l := *fl
	i := len(l) - 1
	for j := i; j >= 0; j-- {
		if l[j].n == count {
			i = j
			break
		}
	}
	b := l[i]
	l[i] = l[len(l)-1]
	l[len(l)-1] = freeBuf{}
	*fl = l[:len(l)-1]
	return b
}

// put adds a buffer to the free list (the arena's run's goroutine).
func (fl *freeList) put(b freeBuf) { *fl = append(*fl, b) }

// dropSmaller lets go of the largest free buffer of dt with fewer than
// cls elements (at least minFit; the caller is about to
// allocate cls, fit having found no larger one): the new buffer takes its
// place, so a run's buffers grow to the sizes their values need instead
// of multiplying, and over a few runs the arena settles on about as many
// buffers as values live at once.
func (a *arena) dropSmaller(dt graph.DType, cls int) {
	if cls < minFit || dt == graph.String {
		return
	}
	var best poolKey
	found := false
	for k, l := range a.free {
		if len(*l) > 0 && k.dt() == dt && k.n() >= minFit && k.n() < cls && (!found || k.n() > best.n()) {
			best, found = k, true
		}
	}
	if !found {
		return
	}
	l := a.free[best]
	(*l)[len(*l)-1] = freeBuf{}
	*l = (*l)[:len(*l)-1]
	bytes := int64(best.n()) * elemBytes(dt)
	a.held -= bytes
	a.budget.release(bytes)
}

// minFit is the least element count an allocation takes a larger free
// buffer for (below it, a buffer of its own size costs little memory).
const minFit = 4096

// fit is the key of the smallest free buffer of dt holding more than cls
// elements (the caller found none of cls itself), for an
// allocation of at least minFit elements; false when there is none. A
// value's buffer is then one a dead value of another size left: without
// it, every distinct size of a run has buffers of its own, and a
// MobileNet-style model's run (pose_detection: 19 MB of buffers for
// 4 MB live at most) spreads its activations over several times the
// memory, out of the caches, where a planned arena reuses it.
func (a *arena) fit(dt graph.DType, cls int) (poolKey, bool) {
	if cls < minFit || dt == graph.String {
		return 0, false
	}
	var best poolKey
	found := false
	for k, l := range a.free {
		if len(*l) > 0 && k.dt() == dt && k.n() > cls && (!found || k.n() < best.n()) {
			best, found = k, true
		}
	}
	return best, found
}

// header makes the tensor of a buffer just handed out: a recycled header, the shape in the run's slab, owned by a.
func (a *arena) header(dt graph.DType, shape []int, data any, k poolKey, l *freeList, v *bufViews) *graph.Tensor {
	bytes := int64(k.n()) * elemBytes(k.dt())
	sh := a.shapeOf(shape)
	var t *graph.Tensor
	if n := len(a.tensors); n > 0 {
		t = a.tensors[n-1]
		a.tensors = a.tensors[:n-1]
		*t = graph.Tensor{DType: dt, Shape: sh, Data: data}
	} else {
		t = &graph.Tensor{DType: dt, Shape: sh, Data: data}
	}
	a.owned.add(t, ownedBuf{k, l, v})
	a.liveBytes += bytes
	if a.liveBytes > a.peak {
		a.peak = a.liveBytes
	}
	return t
}

// maxShapeSlab caps a shape slab's length: a run that fills one (a Loop
// of 2^62 iterations, each allocating) moves on to a new slab of at most
// this size, leaving the full one to the garbage collector once no tensor
// uses its shapes. Doubling without a cap grew memory outside the budget
// every iteration.
const maxShapeSlab = 1 << 14

// shapeOf copies shape into the run's shape slab.
// Shapes are not recycled within a run (a kernel may share a released
// tensor's shape slice); the slab starts over at reset.
func (a *arena) shapeOf(shape []int) []int {
	n := len(shape)
	if a.shapeOff+n > len(a.shapes) {
		a.shapes = make([]int, max(256, min(2*len(a.shapes), maxShapeSlab), n))
		a.shapeOff = 0
	}
	sh := a.shapes[a.shapeOff : a.shapeOff+n : a.shapeOff+n]
	a.shapeOff += n
	copy(sh, shape)
	return sh
}

// reserve takes bytes from the budget, dropping idle buffers (this arena's
// first, then those of idle arenas) when they do not fit.
func (a *arena) reserve(bytes int64, dt graph.DType, shape []int, n *graph.Node) error {
	b := a.budget
	if b.reserve(bytes) {
		return nil
	}
	a.dropFree()
	if b.reserve(bytes) {
		return nil
	}
	b.trim()
	if b.reserve(bytes) {
		return nil
	}
	e := &BudgetError{DType: dt, Shape: append([]int{}, shape...), Bytes: bytes, Held: b.Held(), Limit: b.Limit()}
	if n != nil {
		e.Node = n.Label()
	}
	return e
}

// dropFree lets go of every free buffer (their bytes leave the budget).
// The lists are emptied in place: tensors out in a run (ownedBuf) hold
// them.
func (a *arena) dropFree() {
	a.mu.Lock()
	defer a.mu.Unlock()
	var bytes int64
	for k, l := range a.free {
		bytes += int64(len(*l)) * int64(k.n()) * elemBytes(k.dt())
		clear(*l)
		*l = (*l)[:0]
	}
	a.held -= bytes
	a.budget.release(bytes)
}

// release returns t's buffer to the free list if the arena owns it.
func (a *arena) release(t *graph.Tensor) {
	if t == nil {
		return
	}
	ob, ok := a.owned.remove(t)
	if !ok {
		return
	}
	k := ob.k
	bytes := int64(k.n()) * elemBytes(k.dt())
	a.liveBytes -= bytes
	if t.DType == graph.String {
		a.held -= bytes // not recycled: strings keep their contents alive
		a.budget.release(bytes)
		return
	}
	ob.l.put(freeBuf{t.Data, t.Len(), ob.v})
	a.recycle(t)
}

// recycle keeps a released tensor's header for a later allocation (a
// released value is dead: no step reads it again).
func (a *arena) recycle(t *graph.Tensor) {
	*t = graph.Tensor{}
	a.tensors = append(a.tensors, t)
}

// disown hands t to the caller (a returned output): it is never recycled,
// and its bytes leave the budget.
func (a *arena) disown(t *graph.Tensor) {
	if ob, ok := a.owned.remove(t); ok {
		t.Shape = append([]int(nil), t.Shape...) // off the run's shape slab
		bytes := int64(ob.k.n()) * elemBytes(ob.k.dt())
		a.liveBytes -= bytes
		a.held -= bytes
		a.budget.release(bytes)
	}
}

// reset forgets ownership of everything (end of run) but keeps free buffers.
func (a *arena) reset() {
	// (finish, on the run's goroutine: no lock, as alloc and release)
	a.owned.drain(func(t *graph.Tensor, ob ownedBuf) {
		if t.DType != graph.String {
			ob.l.put(freeBuf{t.Data, t.Len(), ob.v})
			a.recycle(t)
		} else {
			bytes := int64(ob.k.n()) * elemBytes(ob.k.dt())
			a.held -= bytes
			a.budget.release(bytes)
		}
	})
	for _, v := range a.views {
		a.recycle(v)
	}
	clear(a.views)
	a.views = a.views[:0]
	if a.migrated {
		var bytes int64
		// (nothing is owned now: no ownedBuf holds a list deleted here)
		for k, l := range a.free {
			if !a.used[k] {
				bytes += int64(len(*l)) * int64(k.n()) * elemBytes(k.dt())
				delete(a.free, k)
			}
		}
		a.held -= bytes
		a.budget.release(bytes)
		clear(a.used)
		a.migrated = false
	}
	a.shapeOff = 0
	a.liveBytes = 0
	a.allocs, a.reuses, a.peak = 0, 0, 0
}

// nodeAlloc is the allocator one kernel call gets: the run's arena, with
// the node named in budget errors, and the caller's tensors bound to the
// node's outputs (RunOptions.Into).
type nodeAlloc struct {
	a     *arena
	n     *graph.Node
	bound []*graph.Tensor // by output index; nil: none
	taken []bool          // bound[j] was handed out
	view  bool            // the node's output may be a view of its input (plan.view)
	// takenBuf backs taken for nodes of few outputs; takenBig for more
	// (a delegated partition's node: a decoder's every present output),
	// grown once and kept with the frame
	takenBuf [4]bool
	takenBig []bool
	// boundPtrs backs unbind's data pointers of bound
	boundPtrs []uintptr
	// fresh are the first tensors the arena handed out in this call
	// (nfresh of them, counting past len(fresh)): a buffer no live
	// value holds, so a kernel output among them shares no input's
	// memory
	fresh  [4]*graph.Tensor
	nfresh int
}

// allocated notes t, handed out by the arena in this call.
func (na *nodeAlloc) allocated(t *graph.Tensor) {
	if na.nfresh < len(na.fresh) {
		na.fresh[na.nfresh] = t
	}
	na.nfresh++
}

// isFresh reports whether t was handed out by the arena in this call
// (false when unsure: more allocations than fresh holds).
func (na *nodeAlloc) isFresh(t *graph.Tensor) bool {
	for _, f := range na.fresh[:min(na.nfresh, len(na.fresh))] {
		if f == t {
			return true
		}
	}
	return false
}

// Alloc hands out a caller tensor bound to one of the node's outputs when
// its dtype and shape are those asked for (zeroed, as New promises), an
// arena buffer otherwise.
func (na *nodeAlloc) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if t := na.take(dt, shape); t != nil {
		clearData(t.Data)
		return t, nil
	}
	t, err := na.a.alloc(dt, shape, na.n, true)
	if err == nil {
		na.allocated(t)
	}
	return t, err
}

// AllocUninit is Alloc without zeroing (kernels.UninitAllocator).
func (na *nodeAlloc) AllocUninit(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if t := na.take(dt, shape); t != nil {
		return t, nil
	}
	t, err := na.a.alloc(dt, shape, na.n, false)
	if err == nil {
		na.allocated(t)
	}
	return t, err
}

// View implements kernels.Viewer: where the plan allows it for the node
// (plan.view), a header from the arena sharing t's data; the plan keeps
// t's buffer alive while the view is.
func (na *nodeAlloc) View(t *graph.Tensor, shape []int) *graph.Tensor {
	if !na.view || t.Data == nil {
		return nil
	}
	if n, err := graph.NumElements(shape); err != nil || n != t.Len() {
		return nil
	}
	a := na.a
	a.mu.Lock()
	defer a.mu.Unlock()
	var v *graph.Tensor
	if n := len(a.tensors); n > 0 {
		v = a.tensors[n-1]
		a.tensors = a.tensors[:n-1]
	} else {
		v = &graph.Tensor{}
	}
	*v = graph.Tensor{DType: t.DType, Shape: a.shapeOf(shape), Data: t.Data}
	a.views = append(a.views, v)
	return v
}

// take hands out the first caller tensor bound to one of the node's
// outputs, not yet handed out, of dtype dt and this shape (nil: none).
func (na *nodeAlloc) take(dt graph.DType, shape []int) *graph.Tensor {
	for j, dst := range na.bound {
		if dst != nil && !na.taken[j] && dst.DType == dt && graph.SameShape(dst.Shape, shape) {
			na.taken[j] = true
			return dst
		}
	}
	return nil
}

// unbind checks where the caller tensors handed out went: one returned as
// the output it is bound to was written in place; one returned as another
// output (a kernel allocating its outputs in another order) is copied to
// an arena buffer, so that the copy into the caller tensors after the run
// reads the right values. A handed-out tensor not returned was scratch.
func (na *nodeAlloc) unbind(n *graph.Node, outs []*graph.Tensor) error {
	// the bound tensors' data pointers, read once (a partition's node
	// binds a decoder's 50 outputs: 2500 pairs)
	if cap(na.boundPtrs) < len(na.bound) {
		na.boundPtrs = make([]uintptr, len(na.bound))
	}
	bp := na.boundPtrs[:len(na.bound)]
	for k, dst := range na.bound {
		bp[k] = dataPtr(dst)
	}
	for j, o := range outs {
		if o == nil || j >= len(na.bound) {
			continue
		}
		p := dataPtr(o)
		for k, dst := range na.bound {
			if k == j || dst == nil || !na.taken[k] || (o != dst && (p == 0 || p != bp[k])) {
				continue
			}
			c, err := na.a.alloc(o.DType, o.Shape, n, false)
			if err != nil {
				return err
			}
			graph.CopyData(c.Data, o.Data)
			outs[j] = c
			break
		}
	}
	return nil
}

func (na *nodeAlloc) Release(t *graph.Tensor) { na.a.release(t) }

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
	if t == nil {
		return 0
	}
	// the common dtypes first, without Len's and RawBytes' switches (a
	// decode step asks this some thousand times: frame.call, unbind,
	// bind's alias checks)
	switch d := t.Data.(type) {
	case []float32:
		if len(d) == 0 {
			return 0
		}
		return uintptr(unsafe.Pointer(&d[0]))
	case []int64:
		if len(d) == 0 {
			return 0
		}
		return uintptr(unsafe.Pointer(&d[0]))
	}
	if t.Len() == 0 {
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
