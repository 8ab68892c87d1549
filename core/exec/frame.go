package exec

import (
	"context"
	"errors"
	"fmt"
	rt "runtime"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// frame is one execution of a plan: its scope, the inputs of the step
// being run and the context its kernels get (reused from node to node).
// An arena keeps a frame per plan for its runs.
type frame struct {
	r    *run
	s    scope
	ins  []*graph.Tensor
	res  []*graph.Tensor // the main graph's outputs (nested runs allocate theirs)
	cc   callCtx
	sub  kernels.SubgraphRunner // f.subgraph, bound once
	done <-chan struct{}        // the run's ctx.Done(), read once a run
	busy bool
}

// frame returns a's idle frame of plan p (a new one if it is in use).
func (a *arena) frame(p *plan) *frame {
	a.mu.Lock()
	f := a.frames[p]
	if f != nil && !f.busy {
		f.busy = true
		a.mu.Unlock()
		return f
	}
	a.mu.Unlock()
	f = &frame{s: scope{p: p, vals: make([]*graph.Tensor, len(p.slots))}, ins: make([]*graph.Tensor, p.maxIns), busy: true}
	f.cc.kc.Alloc = &f.cc.na
	f.sub = f.subgraph
	a.mu.Lock()
	if a.frames[p] == nil {
		a.frames[p] = f
	}
	a.mu.Unlock()
	return f
}

// mainFrame is a's frame of the main plan p, for start: the arena is the
// run's alone from arenaCache.get until finish, and no kernel runs yet
// (nor any more when putMainFrame is called), so its main frame is taken
// and given back without a.mu (a nested plan's frames, which kernels ask
// for, go through frame).
func (a *arena) mainFrame(p *plan) *frame {
	if f := a.main; f != nil && f.s.p == p && !f.busy {
		f.busy = true
		return f
	}
	f := a.frame(p)
	a.main = f
	return f
}

// putMainFrame gives back a frame from mainFrame.
func (a *arena) putMainFrame(f *frame) {
	f.busy = false
	f.r = nil
	f.s.parent = nil
	f.cc.kc.Context = nil
	f.done = nil
}

func (a *arena) putFrame(f *frame) {
	a.mu.Lock()
	f.busy = false
	f.r = nil
	f.s.parent = nil
	f.cc.kc.Context = nil
	f.done = nil
	a.mu.Unlock()
}

// exec runs the frame's plan (its scope's vals already hold the graph
// inputs and constants) and returns the graph outputs.
func (f *frame) exec(ctx context.Context) ([]*graph.Tensor, error) {
	r, s, p := f.r, &f.s, f.s.p
	f.cc.kc.Context, f.cc.kc.RunSubgraph = ctx, f.sub
	f.cc.na.a = r.arena
	done := ctx.Done()
	f.done = done
	for i, n := range p.order {
		// before the first node; after each, call has looked (the same
		// channel)
		if i == 0 && kernels.Done(done) {
			return nil, fmt.Errorf("exec: stopped before %s: %w", n.Label(), ctx.Err())
		}
		st := &p.steps[i]
		ins := f.ins[:len(st.in)]
		vals := s.vals
		for j, ref := range st.in {
			if ref >= 0 && ref < len(vals) && vals[ref] != nil {
				ins[j] = vals[ref] // a value of this scope (s.get's first case, inline)
				continue
			}
			if ref == -1 {
				ins[j] = nil
				continue
			}
			t, ok := s.get(ref)
			if !ok {
				return nil, fmt.Errorf("exec: %s: input %q has no value", n.Label(), n.Inputs[j])
			}
			ins[j] = t
		}
		var t0 time.Time
		if r.opts.Profile {
			t0 = time.Now()
		}
		var bound []*graph.Tensor
		if r.bound != nil && s.parent == nil {
			bound = r.bound[i]
		}
		f.cc.na.view = st.view
		f.cc.kc.Memo, f.cc.kc.Const = &st.memo, st.konst
		outs, err := f.call(ctx, st, n, ins, bound)
		f.cc.na.view, f.cc.kc.Memo, f.cc.kc.Const = false, nil, 0
		clear(ins)
		if err != nil {
			return nil, err
		}
		if r.opts.Profile {
			r.mu.Lock()
			name := n.Name
			if name == "" && len(n.Outputs) > 0 {
				name = n.Outputs[0] // an unnamed node goes by its output
			}
			r.stats.Nodes = append(r.stats.Nodes, NodeTiming{Node: name, OpType: n.OpType, Start: t0.Sub(r.start), Duration: time.Since(t0), Depth: r.depth})
			r.mu.Unlock()
		}
		for j, ref := range st.out {
			if ref >= 0 {
				s.vals[ref] = outs[j]
			}
		}
		for _, dead := range st.free {
			if t := s.vals[dead]; t != nil {
				r.arena.release(t)
				s.vals[dead] = nil
			}
		}
	}
	var res []*graph.Tensor
	if s.parent == nil {
		if len(f.res) != len(p.outs) {
			f.res = make([]*graph.Tensor, len(p.outs))
		}
		res = f.res
	} else {
		res = make([]*graph.Tensor, len(p.outs))
	}
	for i, ref := range p.outs {
		t, ok := s.get(ref)
		if !ok {
			return nil, fmt.Errorf("exec: output %q was not produced", p.g.Outputs[i].Name)
		}
		// an output that is an input, initializer, outer value or a repeat
		// of another output is copied so that callers own what they get
		repeat := false
		for _, u := range res[:i] {
			repeat = repeat || u == t
		}
		if !p.produced[i] || repeat {
			c, err := r.arena.AllocUninit(t.DType, t.Shape)
			if err != nil {
				return nil, err
			}
			graph.CopyData(c.Data, t.Data)
			t = c
		}
		res[i] = t
	}
	return res, nil
}

// call runs one kernel (step st of node n), turning panics into errors
// and checking its outputs. bound are the caller's tensors for n's
// outputs (nil: none).
func (f *frame) call(ctx context.Context, st *step, n *graph.Node, ins, bound []*graph.Tensor) (outs []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 4096)
			buf = buf[:rt.Stack(buf, false)]
			err = fmt.Errorf("exec: internal error in %s: %v\n%s", n.Label(), p, buf)
		}
	}()
	r := f.r
	na := &f.cc.na
	f.cc.kc.Opset, na.n = st.opset, n
	na.bound, na.taken = bound, nil
	if bound != nil {
		if len(bound) <= len(na.takenBuf) {
			na.taken = na.takenBuf[:len(bound)]
			clear(na.taken)
		} else {
			if len(bound) > len(na.takenBig) {
				na.takenBig = make([]bool, len(bound))
			}
			na.taken = na.takenBig[:len(bound)]
			clear(na.taken)
		}
	}
	na.nfresh = 0
	outs, err = st.kernel(&f.cc.kc, n, ins)
	if err == nil && bound != nil {
		err = na.unbind(n, outs)
	}
	na.bound, na.taken = nil, nil
	if err == nil && kernels.Done(f.done) {
		// long kernels stop early once the context is done, leaving their
		// outputs incomplete: nothing they return after that is used
		return nil, fmt.Errorf("exec: stopped in %s: %w", n.Label(), ctx.Err())
	}
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, n.OpType) || n.Name != "" && strings.Contains(msg, n.Name) {
			return nil, err // already names the node
		}
		return nil, fmt.Errorf("%s: %w", n.Label(), err)
	}
	if len(outs) < st.nOut {
		// trailing optional outputs may be omitted by the kernel
		for j := len(outs); j < st.nOut; j++ {
			if st.namedOut(n, j) {
				return nil, fmt.Errorf("exec: %s returned %d outputs, node needs %d", n.Label(), len(outs), len(n.Outputs))
			}
		}
	}
	for j := range st.nOut {
		if !st.namedOut(n, j) {
			continue
		}
		o := outs[j]
		if o == nil {
			return nil, fmt.Errorf("exec: %s produced no value for output %q", n.Label(), n.Outputs[j])
		}
		if err := o.Check(); err != nil {
			return nil, fmt.Errorf("exec: %s output %q: %v", n.Label(), n.Outputs[j], err)
		}
		// a kernel that hands back an input (or a view of one) breaks
		// buffer recycling: copy it (unless the plan made it a view, or
		// it is the caller's tensor bound to the output, which bind let
		// share an input's memory: written in place of that input)
		if na.view || j < len(bound) && bound[j] == o || na.isFresh(o) {
			continue
		}
		p := dataPtr(o)
		for _, in := range ins {
			if in != nil && (in == o || p != 0 && p == dataPtr(in)) {
				c, err := r.arena.AllocUninit(o.DType, o.Shape)
				if err != nil {
					return nil, err
				}
				graph.CopyData(c.Data, o.Data)
				outs[j] = c
				break
			}
		}
	}
	return outs, nil
}

// subgraph implements kernels.SubgraphRunner for If/Loop bodies run by the
// frame's kernels: the body's scope encloses in the frame's.
func (f *frame) subgraph(ctx context.Context, g *graph.Graph, inputs []*graph.Tensor) ([]*graph.Tensor, error) {
	r := f.r
	if r == nil {
		return nil, errors.New("exec: subgraph run outside a model run")
	}
	p, ok := r.m.subplans[g]
	if !ok {
		return nil, errors.New("exec: unknown subgraph (not part of the loaded model)")
	}
	if len(inputs) != len(g.Inputs) {
		return nil, fmt.Errorf("exec: subgraph %q takes %d inputs, got %d", g.Name, len(g.Inputs), len(inputs))
	}
	sf := r.arena.frame(p)
	defer r.arena.putFrame(sf)
	sf.r, sf.s.parent = r, &f.s
	vals := sf.s.vals
	copy(vals, p.init)
	defer clear(vals)
	for i, in := range g.Inputs {
		vals[p.slots[in.Name]] = inputs[i]
	}
	r.mu.Lock()
	r.depth++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.depth--
		r.mu.Unlock()
	}()
	return sf.exec(ctx)
}

// callCtx is what one kernel call gets: its context and its allocator.
type callCtx struct {
	kc kernels.Context
	na nodeAlloc
}
