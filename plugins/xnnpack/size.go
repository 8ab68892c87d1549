package xnnpack

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// checkSizes bounds every dynamic tensor of the plan (partition inputs and
// outputs, the buffers between stages, the values XNNPACK allocates inside
// a runtime, views) by graph.CheckAlloc, before emit hands any size to
// malloc or XNNPACK: a 10¹²-element input is ResourceExhausted wrapping
// graph.ErrTooLarge, not a 4 TB allocation. Constants need no check: they
// are in memory already.
func (p *plan) checkSizes() error {
	seen := map[*tensor]bool{}
	check := func(t *tensor) error {
		if t == nil || t.static != nil || seen[t] {
			return nil
		}
		seen[t] = true
		if _, err := graph.CheckAlloc(graph.Float32, t.dims); err != nil {
			return &hal.Error{Code: hal.CodeResourceExhausted, Msg: "xnnpack: refusing to allocate", Err: err}
		}
		return nil
	}
	for _, t := range p.tensors {
		if err := check(t); err != nil {
			return err
		}
	}
	for _, st := range p.stages {
		for _, x := range st.ops {
			for _, t := range append([]*tensor{x.out}, x.in...) {
				if err := check(t); err != nil {
					return err
				}
			}
		}
	}
	for i, sz := range p.slots {
		if sz < 0 || int64(sz) > graph.MaxTensorBytes+xnnExtraBytes {
			return hal.Errorf(hal.CodeResourceExhausted, "xnnpack: buffer %d needs %d bytes, limit %d", i, sz, graph.MaxTensorBytes)
		}
	}
	return nil
}

// hostBytes is the C memory an instance of the plan allocates: its value
// buffers and its constants in physical layout.
func (p *plan) hostBytes() int64 {
	var n int64
	for _, sz := range p.slots {
		n += int64(sz)
	}
	seen := map[*tensor]bool{}
	for _, st := range p.stages {
		for _, x := range st.ops {
			for _, t := range x.in {
				if t.static != nil && !seen[t] {
					seen[t] = true
					n += 4*int64(len(t.static)) + xnnExtraBytes
				}
			}
		}
	}
	return n
}

// HostBytes is the C memory the executable's instances hold or will hold
// on their first run (hal.HostMemoryReporter): the runtime counts it
// against the model's memory budget.
func (e *Executable) HostBytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, inst := range e.idle {
		n += inst.plan.hostBytes()
	}
	return n
}
