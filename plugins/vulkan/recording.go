package vulkan

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
)

// recording is one recorded command buffer of a plan, bound to one set
// of input and output buffers, replayed while they stay the same.
type recording struct {
	key     string // the bound buffers
	cb      uintptr
	pool    uintptr // descriptor pool
	qpool   uintptr // timestamp queries (0 without timestamps)
	own     bool    // bound to its own io buffers (Execute)
	ins     []*vbuf // own io: device buffers
	outs    []*vbuf
	stgIn   []*vbuf // own io without host-visible device memory
	stgOut  []*vbuf
	pending bool

	gpuDone, abandoned bool
}

func (r *recording) free(g *gpu) {
	g.recMu.Lock()
	if r.cb != 0 {
		g.l.freeCmdBufs(g.handle, g.cmdPool, 1, &r.cb)
	}
	g.recMu.Unlock()
	if r.pool != 0 {
		g.l.destroyDescPool(g.handle, r.pool, 0)
	}
	if r.qpool != 0 {
		g.l.destroyQueryPool(g.handle, r.qpool, 0)
	}
	for _, l := range [][]*vbuf{r.ins, r.outs, r.stgIn, r.stgOut} {
		for _, b := range l {
			g.free(b)
		}
	}
}

// take returns an idle recording bound to bufs (nil: its own io
// buffers), recording one when needed, and marks it pending.
func (p *plan) take(ins, outs []*vbuf) (*recording, error) {
	key := "own"
	if ins != nil {
		var b strings.Builder
		for _, v := range append(append([]*vbuf{}, ins...), outs...) {
			fmt.Fprintf(&b, "%d,", v.id) // not the handle: a new buffer may get a freed one's
		}
		key = b.String()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var idle *recording
	for _, r := range p.recs {
		if r.pending {
			continue
		}
		if r.key == key {
			r.pending, r.gpuDone, r.abandoned = true, false, false
			return r, nil
		}
		if idle == nil && !r.own && ins != nil {
			idle = r
		}
	}
	g := p.e.d.g
	r := idle
	if r == nil {
		if len(p.recs) >= 8 && ins != nil {
			// bound to buffers gone by now: re-record the oldest idle one
			for _, o := range p.recs {
				if !o.pending && !o.own {
					r = o
					break
				}
			}
		}
	}
	if r != nil {
		g.recMu.Lock()
		g.l.resetCmdBuf(r.cb, 0)
		g.recMu.Unlock()
		g.l.destroyDescPool(g.handle, r.pool, 0)
		r.pool = 0
	} else {
		r = &recording{}
		if ins == nil {
			r.own = true
			for i, size := range p.inBytes {
				b, err := g.alloc(size, false)
				if err != nil {
					r.free(g)
					return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
				}
				r.ins = append(r.ins, b)
				if !g.mapped {
					st, err := g.alloc(p.inBytes[i], true)
					if err != nil {
						r.free(g)
						return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
					}
					r.stgIn = append(r.stgIn, st)
				}
			}
			for j, s := range p.outShapes {
				if i, ok := p.inplace[j]; ok {
					// the input's own buffers (freed once: free is idempotent)
					r.outs = append(r.outs, r.ins[i])
					if !g.mapped {
						r.stgOut = append(r.stgOut, r.stgIn[i])
					}
					continue
				}
				b, err := g.alloc(bytesOf(s), false)
				if err != nil {
					r.free(g)
					return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
				}
				r.outs = append(r.outs, b)
				if !g.mapped {
					st, err := g.alloc(bytesOf(s), true)
					if err != nil {
						r.free(g)
						return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
					}
					r.stgOut = append(r.stgOut, st)
				}
			}
		}
		p.recs = append(p.recs, r)
	}
	r.key = key
	if ins == nil {
		ins, outs = r.ins, r.outs
	}
	if err := p.record(r, ins, outs); err != nil {
		p.recs = slices.DeleteFunc(p.recs, func(x *recording) bool { return x == r })
		r.free(g)
		return nil, err
	}
	r.pending = true
	return r, nil
}

// record fills r's command buffer: a barrier, every dispatch with a
// barrier and a timestamp after it, and the staging copies of its own io.
func (p *plan) record(r *recording, ins, outs []*vbuf) error {
	g := p.e.d.g
	var ps pins
	defer ps.done()
	nb := 0
	for _, s := range p.steps {
		nb += len(s.binds)
	}
	nsets := max(len(p.steps), 1)
	psz := &vkDescriptorPoolSize{Type: vkDescriptorStorageBuffer, DescriptorCount: uint32(max(nb, 1))}
	dpi := &vkDescriptorPoolCreateInfo{SType: vkStructDescPoolCreate, MaxSets: uint32(nsets), PoolSizeCount: 1, PPoolSizes: pin(&ps, psz)}
	if err := check("vkCreateDescriptorPool", g.l.createDescPool(g.handle, unsafe.Pointer(dpi), 0, &r.pool)); err != nil {
		return hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	nq := uint32(len(p.steps) + 1)
	if r.qpool == 0 && g.phys.tsBits > 0 {
		qci := &vkQueryPoolCreateInfo{SType: vkStructQueryPoolCreate, QueryType: vkQueryTypeTimestamp, QueryCount: nq}
		if g.l.createQueryPool(g.handle, unsafe.Pointer(qci), 0, &r.qpool) != vkSuccess {
			r.qpool = 0
		}
	}
	g.recMu.Lock()
	defer g.recMu.Unlock()
	if r.cb == 0 {
		ai := &vkCommandBufferAllocateInfo{SType: vkStructCmdBufAllocate, CommandPool: g.cmdPool, Level: vkCmdBufLevelPrimary, CommandBufferCount: 1}
		if err := check("vkAllocateCommandBuffers", g.l.allocateCmdBufs(g.handle, unsafe.Pointer(ai), &r.cb)); err != nil {
			return hal.Errorf(hal.CodeResourceExhausted, "%v", err)
		}
	}
	bi := &vkCommandBufferBeginInfo{SType: vkStructCmdBufBegin}
	if err := check("vkBeginCommandBuffer", g.l.beginCmdBuf(r.cb, unsafe.Pointer(bi))); err != nil {
		return hal.Errorf(hal.CodeInternal, "%v", err)
	}
	cb := r.cb
	if r.qpool != 0 {
		g.l.cmdResetQueryPool(cb, r.qpool, 0, nq)
	}
	if r.own {
		for i, st := range r.stgIn {
			g.copyBuf(cb, st.buf, r.ins[i].buf, 0, 0, st.size)
		}
	}
	g.barrier(cb)
	if r.qpool != 0 {
		g.l.cmdWriteTimestamp(cb, vkStageBottomOfPipe, r.qpool, 0)
	}
	resolve := func(l loc) (uintptr, uint64) {
		switch l.kind {
		case locIn:
			return ins[l.idx].buf, l.off
		case locOut:
			return outs[l.idx].buf, l.off
		case locW:
			return p.e.wbuf.buf, l.off
		}
		return p.tmp.buf, p.tmpOff[l.idx] + l.off
	}
	for si, s := range p.steps {
		pipe, layout, err := g.pipeline(pipeKey{shader: s.shader, spec: [4]uint32{s.wg, s.variant}})
		if err != nil {
			g.l.endCmdBuf(cb)
			return hal.Errorf(hal.CodeInternal, "%v", err)
		}
		g.pipeMu.Lock()
		sl := g.setLayout[len(s.binds)]
		g.pipeMu.Unlock()
		ai := &vkDescriptorSetAllocateInfo{SType: vkStructDescSetAllocate, DescriptorPool: r.pool, DescriptorSetCount: 1, PSetLayouts: pin(&ps, &sl)}
		var set uintptr
		if err := check("vkAllocateDescriptorSets", g.l.allocateDescSets(g.handle, unsafe.Pointer(ai), &set)); err != nil {
			g.l.endCmdBuf(cb)
			return hal.Errorf(hal.CodeResourceExhausted, "%v", err)
		}
		infos := make([]vkDescriptorBufferInfo, len(s.binds))
		writes := make([]vkWriteDescriptorSet, len(s.binds))
		for i, bl := range s.binds {
			buf, off := resolve(bl)
			infos[i] = vkDescriptorBufferInfo{Buffer: buf, Offset: off, Range: max((bl.size+3)&^3, 4)}
			writes[i] = vkWriteDescriptorSet{SType: vkStructWriteDescriptorSet, DstSet: set, DstBinding: uint32(i), DescriptorCount: 1, DescriptorType: vkDescriptorStorageBuffer, PBufferInfo: pin(&ps, &infos[i])}
		}
		g.l.updateDescSets(g.handle, uint32(len(writes)), unsafe.Pointer(&writes[0]), 0, 0)
		runtime.KeepAlive(infos)
		runtime.KeepAlive(writes)
		g.l.cmdBindPipeline(cb, vkPipelineBindCompute, pipe)
		g.l.cmdBindDescSets(cb, vkPipelineBindCompute, layout, 0, 1, &set, 0, 0)
		push := s.push
		g.l.cmdPushConstants(cb, layout, vkShaderStageCompute, 0, pushBytes, unsafe.Pointer(&push[0]))
		g.l.cmdDispatch(cb, s.groups[0], s.groups[1], s.groups[2])
		g.barrier(cb)
		if r.qpool != 0 {
			g.l.cmdWriteTimestamp(cb, vkStageBottomOfPipe, r.qpool, uint32(si+1))
		}
	}
	if r.own {
		for i, st := range r.stgOut {
			g.copyBuf(cb, r.outs[i].buf, st.buf, 0, 0, st.size)
		}
		g.barrier(cb)
	}
	if err := check("vkEndCommandBuffer", g.l.endCmdBuf(cb)); err != nil {
		return hal.Errorf(hal.CodeInternal, "%v", err)
	}
	return nil
}

// finished is called by the reaper; release by the caller. A recording
// is idle again once both happened (or the caller gave up waiting).
func (p *plan) finished(r *recording) {
	p.mu.Lock()
	r.gpuDone = true
	if r.abandoned || !r.own {
		r.pending = false
	}
	p.mu.Unlock()
}

func (p *plan) release(r *recording, abandon bool) {
	p.mu.Lock()
	if abandon && !r.gpuDone {
		r.abandoned = true
	} else {
		r.pending = false
	}
	p.mu.Unlock()
}

// profile reads r's timestamps (after its work completed).
func (p *plan) profile(r *recording) *hal.CallProfile {
	prof := &hal.CallProfile{Device: p.e.d.index, Queue: "compute"}
	if r.qpool == 0 {
		return prof
	}
	g := p.e.d.g
	nq := len(p.steps) + 1
	ts := make([]uint64, nq)
	if g.l.getQueryPoolResults(g.handle, r.qpool, 0, uint32(nq), uintptr(8*nq), unsafe.Pointer(&ts[0]), 8, vkQueryResult64|vkQueryResultWait) != vkSuccess {
		return prof
	}
	ns := func(t uint64) int64 { return int64(float64(t&g.tsMask) * g.tsPeriod) }
	prof.StartNS, prof.EndNS = ns(ts[0]), ns(ts[nq-1])
	for i, s := range p.steps {
		prof.Kernels = append(prof.Kernels, hal.KernelTiming{Name: s.shader, Nodes: []string{s.node}, StartNS: ns(ts[i]), EndNS: ns(ts[i+1])})
	}
	return prof
}

// Execute runs on host tensors: inputs copied into the recording's own
// buffers, one submission, outputs copied back.
func (e *executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	_, err := e.run(ctx, inputs, outputs, false)
	return err
}

// ExecuteProfiled is Execute with the device timestamps of the call.
func (e *executable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	return e.run(ctx, inputs, outputs, true)
}

// checkArgs checks the call's arity and the inputs against the declared
// boundary: dtype, rank, static dims, and the device's buffer range.
func (e *executable) checkArgs(nin, nout int, dt func(i int) graph.DType, shape func(i int) []int) error {
	if nin != len(e.g.Inputs) || nout != len(e.g.Outputs) {
		return hal.Errorf(hal.CodeInvalidArgument, "vulkan: %d inputs and %d outputs, the partition has %d and %d", nin, nout, len(e.g.Inputs), len(e.g.Outputs))
	}
	for i, vi := range e.g.Inputs {
		if dt(i) != e.inDT[i] {
			return hal.Errorf(hal.CodeInvalidArgument, "vulkan: input %q is %v, not %v", vi.Name, dt(i), e.inDT[i])
		}
		s := shape(i)
		if vi.Type.Shape != nil {
			bad := len(vi.Type.Shape) != len(s)
			for k := 0; !bad && k < len(s); k++ {
				bad = vi.Type.Shape[k].Static() && int(vi.Type.Shape[k].Value) != s[k]
			}
			if bad {
				return hal.Errorf(hal.CodeInvalidArgument, "vulkan: input %q has shape %v, the partition declares %v", vi.Name, s, vi.Type.Shape)
			}
		}
		if b := uint64(ops.Prod(s) * e.inDT[i].Size()); b > e.d.g.maxRange {
			return hal.Errorf(hal.CodeResourceExhausted, "vulkan: input %q holds %d bytes, over the device's storage buffer range (%d)", vi.Name, b, e.d.g.maxRange)
		}
	}
	return nil
}

func (e *executable) run(ctx context.Context, inputs, outputs []*graph.Tensor, profile bool) (*hal.CallProfile, error) {
	for i, t := range inputs {
		if t == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: input %d is nil", i)
		}
	}
	for j, o := range outputs {
		if o == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: output %d is nil", j)
		}
	}
	if err := e.checkArgs(len(inputs), len(outputs), func(i int) graph.DType { return inputs[i].DType }, func(i int) []int { return inputs[i].Shape }); err != nil {
		return nil, err
	}
	shapes := make([][]int, len(inputs))
	for i, t := range inputs {
		shapes[i] = t.Shape
	}
	// in-place pairs whose output tensor is the input's memory: the
	// recording's own buffer is shared too, only the new rows written
	var inplace map[int]int
	for _, pr := range e.pairs {
		if o := outputs[pr.Output]; o.Data != nil && sameData(o, inputs[pr.Input]) {
			if inplace == nil {
				inplace = map[int]int{}
			}
			inplace[pr.Output] = pr.Input
		}
	}
	p, err := e.plan(shapes, inplace)
	if err != nil {
		return nil, err
	}
	for _, c := range p.checks {
		if err := c.run(inputs); err != nil {
			return nil, err
		}
	}
	for j, o := range outputs {
		if o.Data != nil && (o.DType != graph.Float32 || !graph.SameShape(o.Shape, p.outShapes[j])) {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: output %d is %v%v, the partition makes float32%v", j, o.DType, o.Shape, p.outShapes[j])
		}
	}
	r, err := p.take(nil, nil)
	if err != nil {
		return nil, err
	}
	for i, t := range inputs {
		dst := r.ins[i]
		if len(r.stgIn) > 0 {
			dst = r.stgIn[i]
		}
		src, _ := graph.RawBytes(t)
		copy(dst.bytes(), src)
	}
	if err := e.begin(); err != nil {
		p.release(r, false)
		return nil, err
	}
	e.d.count(func() { e.d.traffic.executes++ })
	f, err := e.d.submit(&job{cb: r.cb, done: func(error) { p.finished(r); e.end() }})
	if err != nil {
		p.release(r, false)
		e.end()
		return nil, err
	}
	if err := f.Wait(ctx); err != nil {
		p.release(r, ctx.Err() != nil)
		return nil, err
	}
	for j, o := range outputs {
		if o.Data == nil {
			t, err := graph.New(graph.Float32, p.outShapes[j])
			if err != nil {
				p.release(r, false)
				return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
			}
			*o = *t
		}
		src := r.outs[j]
		if len(r.stgOut) > 0 {
			src = r.stgOut[j]
		}
		dst, _ := graph.RawBytes(o)
		copy(dst, src.bytes())
	}
	var prof *hal.CallProfile
	if profile {
		prof = p.profile(r)
	}
	p.release(r, false)
	return prof, nil
}

// Enqueue runs on device buffers after the fences (HAL 1.1).
func (e *executable) Enqueue(ctx context.Context, inputs, outputs []hal.Buffer, after []hal.Fence, opts hal.EnqueueOptions) (hal.Fence, error) {
	if len(inputs) != len(e.g.Inputs) || len(outputs) != len(e.g.Outputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: %d inputs and %d outputs, the partition has %d and %d", len(inputs), len(outputs), len(e.g.Inputs), len(e.g.Outputs))
	}
	shapes := make([][]int, len(inputs))
	ins := make([]*dbuf, len(inputs))
	for i, b := range inputs {
		db, err := e.b.own(b)
		if err != nil {
			return nil, err
		}
		if db.d != e.d {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: input %d is on device %d, the executable on %d", i, db.d.index, e.d.index)
		}
		if db.dt != e.inDT[i] {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: input %d is %v, not %v", i, db.dt, e.inDT[i])
		}
		ins[i], shapes[i] = db, db.shape
	}
	if err := e.checkArgs(len(inputs), len(outputs), func(i int) graph.DType { return ins[i].dt }, func(i int) []int { return ins[i].shape }); err != nil {
		return nil, err
	}
	// the in-place pairs whose output is the input's own buffer
	var inplace map[int]int
	for _, pr := range e.pairs {
		if outputs[pr.Output] != nil && outputs[pr.Output] == inputs[pr.Input] {
			if inplace == nil {
				inplace = map[int]int{}
			}
			inplace[pr.Output] = pr.Input
		}
	}
	for j, b := range outputs {
		for i, in := range inputs {
			if b != nil && b == in && inplace[j] != i {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: output %d is input %d's buffer, not an in-place pair (InPlaceOutputs)", j, i)
			}
		}
	}
	p, err := e.plan(shapes, inplace)
	if err != nil {
		return nil, err
	}
	outs := make([]*dbuf, len(outputs))
	var made []*dbuf
	cleanup := func() {
		for _, b := range made {
			b.release()
		}
	}
	for j, b := range outputs {
		if b == nil {
			nb, err := e.d.newBuf(graph.Float32, p.outShapes[j])
			if err != nil {
				cleanup()
				return nil, err
			}
			outs[j] = nb
			made = append(made, nb)
			continue
		}
		db, err := e.b.own(b)
		if err != nil {
			cleanup()
			return nil, err
		}
		if db.d != e.d || db.dt != graph.Float32 || !graph.SameShape(db.shape, p.outShapes[j]) {
			cleanup()
			return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: output %d is %v%v on device %d, the partition makes float32%v on %d", j, db.dt, db.shape, db.d.index, p.outShapes[j], e.d.index)
		}
		outs[j] = db
	}
	vin, vout := make([]*vbuf, len(ins)), make([]*vbuf, len(outs))
	for i, b := range ins {
		vin[i] = b.vb
	}
	for j, b := range outs {
		vout[j] = b.vb
	}
	r, err := p.take(vin, vout)
	if err != nil {
		cleanup()
		return nil, err
	}
	all := append(append([]*dbuf{}, ins...), outs...)
	for _, b := range all {
		b.acquire()
	}
	j := &job{after: after, cb: r.cb}
	j.done = func(err error) {
		if err == nil && opts.Profile {
			j.prof = p.profile(r) // handed to the fence when it signals
		}
		p.finished(r)
		for _, b := range all {
			b.release()
		}
		e.end()
	}
	if err := e.begin(); err != nil {
		p.release(r, false)
		for _, b := range all {
			b.release()
		}
		cleanup()
		return nil, err
	}
	e.d.count(func() { e.d.traffic.enqueues++ })
	f, err := e.d.submit(j)
	if err != nil {
		e.end()
		p.release(r, false)
		for _, b := range all {
			b.release()
		}
		cleanup()
		return nil, err
	}
	for j2, b := range outputs {
		if b == nil {
			outputs[j2] = outs[j2]
		}
	}
	return f, nil
}

// sameData reports whether a and b are the same memory from the same
// first byte (and the same dtype and shape).
func sameData(a, b *graph.Tensor) bool {
	x, okA := graph.RawBytes(a)
	y, okB := graph.RawBytes(b)
	return okA && okB && len(x) > 0 && len(x) == len(y) && &x[0] == &y[0] && a.DType == b.DType && graph.SameShape(a.Shape, b.Shape)
}
