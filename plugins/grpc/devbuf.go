package grpcplugin

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
)

// Device buffers (hal.BufferAllocator): tensors allocated directly in a
// shared region, so Execute passes them to the plugin by descriptor — no
// copy in, and outputs are written in place, no copy out.

type deviceBuf struct {
	hr   *hostRegion
	base uintptr
	size int
}

type deviceBufs struct {
	mu   sync.Mutex
	bufs map[uintptr]*deviceBuf // by base address
}

var _ hal.BufferAllocator = (*Backend)(nil)

// AllocTensor allocates a numeric tensor in shared memory mapped in the
// plugin process.
func (b *Backend) AllocTensor(ctx context.Context, dt graph.DType, shape []int) (*graph.Tensor, error) {
	if dt == graph.String || !dt.Supported() {
		return nil, hal.Errorf(hal.CodeUnsupported, "device buffers hold numeric tensors, not %v", dt)
	}
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.process(ctx, "alloc-tensor")
	if err != nil {
		return nil, err
	}
	size := n * dt.Size()
	hr, err := b.pool.get(ctx, p, max(size, 1))
	if err != nil {
		return nil, err
	}
	t, err := wire.ViewTensor(int32(dt), wire.Dims(shape), hr.r.Mem[:size], false)
	if err != nil {
		b.pool.put(ctx, hr, true)
		return nil, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	clear(hr.r.Mem[:size])
	base := uintptr(unsafe.Pointer(&hr.r.Mem[0]))
	b.dev.mu.Lock()
	if b.dev.bufs == nil {
		b.dev.bufs = map[uintptr]*deviceBuf{}
	}
	b.dev.bufs[base] = &deviceBuf{hr: hr, base: base, size: size}
	b.dev.mu.Unlock()
	return t, nil
}

// FreeTensor returns a device buffer's region for reuse.
func (b *Backend) FreeTensor(t *graph.Tensor) error {
	db := b.deviceBuf(t)
	if db == nil {
		return hal.Errorf(hal.CodeInvalidArgument, "tensor was not allocated by this backend's AllocTensor")
	}
	b.dev.mu.Lock()
	delete(b.dev.bufs, db.base)
	b.dev.mu.Unlock()
	b.pool.put(context.Background(), db.hr, true)
	return nil
}

// deviceBuf returns the device buffer t lives in (from its first byte), or nil.
func (b *Backend) deviceBuf(t *graph.Tensor) *deviceBuf {
	raw, ok := graph.RawBytes(t)
	if !ok || len(raw) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(&raw[0]))
	b.dev.mu.Lock()
	defer b.dev.mu.Unlock()
	db := b.dev.bufs[base]
	if db == nil || len(raw) > db.size {
		return nil
	}
	return db
}

// slice describes the whole of a device buffer holding t.
func (db *deviceBuf) slice(t *graph.Tensor) (uint64, uint64, error) {
	n := wire.ByteSize(t)
	if n > db.size {
		return 0, 0, fmt.Errorf("tensor of %d bytes overruns its %d-byte device buffer", n, db.size)
	}
	return db.hr.r.ID, uint64(n), nil
}
