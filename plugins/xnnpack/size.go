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
