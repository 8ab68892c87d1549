package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// longChain is a chain of the claimed op, long enough to be pending for a
// moment on most devices.
func longChain(op string, binary bool, nodes, n int) *hal.Subgraph {
	g := &graph.Graph{Name: "long_chain", Inputs: []graph.ValueInfo{vi("x", graph.Float32, n)}, Initializers: map[string]*graph.Tensor{}}
	prev := "x"
	for i := 0; i < nodes; i++ {
		out := fmt.Sprintf("v%d", i)
		nd := &graph.Node{Name: out, OpType: op, Inputs: []string{prev}, Outputs: []string{out}}
		if binary {
			nd.Inputs = []string{prev, "x"}
		}
		g.Nodes = append(g.Nodes, nd)
		if i < nodes-1 {
			g.ValueInfo = append(g.ValueInfo, vi(out, graph.Float32, n))
		}
		prev = out
	}
	g.Outputs = []graph.ValueInfo{vi(prev, graph.Float32, n)}
	return &hal.Subgraph{Graph: g, Opsets: opsets}
}

// pendingChain opens a second device, compiles a long chain and enqueues
// it (upload, execute, download) without waiting.
type pendingChain struct {
	d      *hal.Device
	c      *hal.Compiled
	fences []hal.Fence
	bufs   []hal.Buffer
	dst    *graph.Tensor
}

func (m *dmEnv) startChain(ctx context.Context) (*pendingChain, *outcome) {
	op, binary, o := probe(ctx, m.contractEnv)
	if o != nil {
		return nil, o
	}
	d, err := m.r.h.Open(ctx)
	if err != nil {
		f := failf("opening a second device: %v", err)
		return nil, &f
	}
	p := &pendingChain{d: d}
	fail := func(format string, args ...any) (*pendingChain, *outcome) {
		_ = d.Close()
		f := failf(format, args...)
		return nil, &f
	}
	const nodes, n = 100, 1 << 16
	p.c, err = d.Compile(ctx, longChain(op, binary, nodes, n), nil)
	if err != nil {
		return fail("compiling a %d-node chain of claimed %s: %v", nodes, op, err)
	}
	x, _ := graph.New(graph.Float32, []int{n})
	fill(x, 1)
	in, err := d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{n}, Memory: m.kind(0)})
	if err != nil {
		return fail("allocate: %v", err)
	}
	fu, err := d.Upload(ctx, in, x, nil)
	if err != nil {
		return fail("upload: %v", err)
	}
	outs := []hal.Buffer{nil}
	fe, err := p.c.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{fu}, nil)
	if err != nil {
		return fail("enqueue: %v", err)
	}
	p.dst, _ = graph.New(graph.Float32, []int{n})
	fd, err := d.Download(ctx, p.dst, outs[0], []hal.Fence{fe})
	if err != nil {
		return fail("download: %v", err)
	}
	p.fences = []hal.Fence{fu, fe, fd}
	p.bufs = []hal.Buffer{in, outs[0]}
	return p, nil
}

// waitAll waits for every fence with a bound; a fence still unsignalled
// after it is a hang.
func waitAll(ctx context.Context, fences []hal.Fence, bound time.Duration) ([]error, error) {
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	errs := make([]error, len(fences))
	for i, f := range fences {
		errs[i] = safely(func() error { return hal.FenceOf(f).Wait(wctx) })
		if wctx.Err() != nil {
			return nil, fmt.Errorf("fence %d of the pending work had not signalled %v later", i, bound)
		}
		if isPanic(errs[i]) {
			return nil, fmt.Errorf("waiting on fence %d: %v", i, errs[i])
		}
	}
	return errs, nil
}

func dmCloseMidEnqueue(ctx context.Context, m *dmEnv) outcome {
	p, o := m.startChain(ctx)
	if o != nil {
		return *o
	}
	pending, _ := p.fences[2].Poll()
	raw := p.d.Backend()
	if err := safely(p.c.Executable().Release); err != nil {
		return failf("Release with work pending: %v", err)
	}
	for _, b := range p.bufs {
		if err := safely(func() error { return raw.(hal.DeviceMemory).Free(b) }); isPanic(err) {
			return failf("Free with work pending: %v", err)
		}
	}
	if err := safely(raw.Close); err != nil {
		return failf("Close with work pending: %v", err)
	}
	_ = p.d.Close()
	errs, err := waitAll(ctx, p.fences, 20*time.Second)
	if err != nil {
		return failf("closed with work pending: %v", err)
	}
	// the closed backend refuses new work
	dm := raw.(hal.DeviceMemory)
	var b hal.Buffer
	err = safely(func() (err error) {
		b, err = dm.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: m.kind(0)})
		return
	})
	if err == nil {
		_ = safely(func() error { return dm.Free(b) })
		return failf("a closed backend allocated a buffer")
	}
	if isPanic(err) {
		return failf("Allocate on a closed backend: %v", err)
	}
	state := "had finished"
	if !pending {
		state = "was pending"
	}
	return passf("the chain %s when released and closed; fences gave %v; a closed backend refuses Allocate (%v)", state, codes(errs), hal.CodeOf(err))
}

func codes(errs []error) []string {
	var s []string
	for _, e := range errs {
		if e == nil {
			s = append(s, "ok")
		} else {
			s = append(s, hal.CodeOf(e).String())
		}
	}
	return s
}

func dmDeviceLost(ctx context.Context, m *dmEnv) outcome {
	if m.r.h.LoseDevice == nil {
		return skipf("the harness has no LoseDevice: device loss cannot be caused from outside this backend")
	}
	p, o := m.startChain(ctx)
	if o != nil {
		return *o
	}
	defer p.d.Close()
	defer p.c.Release()
	if err := m.r.h.LoseDevice(ctx, p.d); err != nil {
		return failf("Harness.LoseDevice: %v", err)
	}
	errs, err := waitAll(ctx, p.fences, 20*time.Second)
	if err != nil {
		return failf("device lost with work pending: %v", err)
	}
	for i, e := range errs {
		if e != nil && !errors.Is(e, hal.ErrUnavailable) {
			return failf("pending fence %d after the device was lost: %v (code %v), want Unavailable", i, e, hal.CodeOf(e))
		}
	}
	// the lost device's executable and buffers are gone with it
	_, err = p.c.Enqueue(ctx, []hal.Buffer{p.bufs[0]}, []hal.Buffer{nil}, nil, nil)
	if err == nil {
		return failf("Enqueue of the lost device's executable on its buffers succeeded")
	}
	refused := hal.CodeOf(err)
	if refused != hal.CodeUnavailable && refused != hal.CodeFailedPrecondition && refused != hal.CodeInvalidArgument {
		return failf("Enqueue on a lost device: %v (code %v), want Unavailable", err, refused)
	}
	// new work is refused with Unavailable, or runs correctly on a device
	// the backend recovered (a restarted plugin process)
	x, _ := graph.New(graph.Float32, []int{5})
	fill(x, 3)
	newWork := "refused with Unavailable"
	b, err := p.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{5}, Memory: m.kind(0)})
	if err == nil {
		var f hal.Fence
		f, err = p.d.Upload(ctx, b, x, nil)
		if err == nil {
			err = f.Wait(ctx)
		}
		if err == nil {
			got, _ := graph.New(graph.Float32, []int{5})
			if f, err = p.d.Download(ctx, got, b, nil); err == nil {
				if err = f.Wait(ctx); err == nil && !bytes.Equal(rawCopy(got), rawCopy(x)) {
					_ = p.d.Free(b)
					return failf("after the device was lost, a new buffer's round trip gave wrong bytes")
				}
			}
			if err == nil {
				newWork = "ran correctly on the recovered device"
			}
		}
		_ = p.d.Free(b)
	}
	if err != nil && !errors.Is(err, hal.ErrUnavailable) {
		return failf("new work after the device was lost: %v (code %v), want Unavailable or success", err, hal.CodeOf(err))
	}
	return passf("pending fences gave %v; the lost executable refused (%v); new work %s", codes(errs), refused, newWork)
}

func dmDeadline(ctx context.Context, m *dmEnv) outcome {
	op, binary, o := probe(ctx, m.contractEnv)
	if o != nil {
		return *o
	}
	const nodes, n = 100, 1 << 16
	sg := longChain(op, binary, nodes, n)
	c, err := m.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("compiling a %d-node chain of claimed %s: %v", nodes, op, err)
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{n})
	fill(x, 12)
	in, err := m.put(ctx, 0, x)
	if err != nil {
		return failf("%v", err)
	}
	defer m.freeAll(in)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Enqueue(cctx, []hal.Buffer{in}, []hal.Buffer{nil}, nil, nil)
	if !errors.Is(err, hal.ErrCancelled) {
		return failf("Enqueue with a cancelled context: %v (code %v), want Cancelled", err, hal.CodeOf(err))
	}
	outs := []hal.Buffer{nil}
	f, err := c.Enqueue(ctx, []hal.Buffer{in}, outs, nil, nil)
	if err != nil {
		return failf("enqueue: %v", err)
	}
	defer m.freeAll(outs[0])
	dctx, dcancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer dcancel()
	t0 := time.Now()
	rawErr := safely(func() error { return hal.FenceOf(f).Wait(dctx) })
	took := time.Since(t0)
	if isPanic(rawErr) {
		return failf("raw Fence.Wait with an expired deadline: %v", rawErr)
	}
	if took > 2*time.Second {
		return failf("raw Fence.Wait with an expired deadline returned only after %v", took)
	}
	if rawErr != nil && !errors.Is(rawErr, context.DeadlineExceeded) && hal.CodeOf(rawErr) != hal.CodeDeadlineExceeded {
		return failf("raw Fence.Wait with an expired deadline: %v, want the context's error (the work was not failed by a waiter's deadline)", rawErr)
	}
	perr := f.Wait(dctx)
	if perr != nil && !errors.Is(perr, hal.ErrDeadlineExceeded) {
		return failf("Fence.Wait with an expired deadline: %v (code %v), want DeadlineExceeded or the work's result", perr, hal.CodeOf(perr))
	}
	if err := f.Wait(ctx); err != nil {
		return failf("Wait after an earlier Wait's deadline expired: %v (a waiter's deadline must not fail the work)", err)
	}
	got, err := m.get(ctx, outs[0])
	if err != nil {
		return failf("%v", err)
	}
	want, err := reference(ctx, sg, map[string]*graph.Tensor{"x": x})
	if err != nil {
		return failf("%v", err)
	}
	last := sg.Graph.Outputs[0].Name
	if cmp := compareTensors(last, got, want[last], m.bound(op)); cmp.problem != "" {
		return failf("the chain's result after a Wait timed out: %s", cmp.problem)
	}
	state := "the work was still pending"
	if rawErr == nil {
		state = "the work had already finished"
	}
	return passf("%s: cancelled Enqueue → Cancelled; expired Wait returned in %v (%s); a later Wait gave the correct result", op, took.Round(time.Microsecond), state)
}

// gqaCandidate is one GroupQueryAttention on a 4-position cache whose
// present_key/present_value may be past_key/past_value's buffers.
func gqaCandidate() (*hal.Subgraph, map[string]*graph.Tensor) {
	f := func(name string, dims ...int) graph.ValueInfo { return vi(name, graph.Float32, dims...) }
	i32 := func(name string, dims ...int) graph.ValueInfo { return vi(name, graph.Int32, dims...) }
	g := &graph.Graph{
		Name:    "gqa",
		Inputs:  []graph.ValueInfo{f("q", 1, 1, 4), f("k", 1, 1, 2), f("v", 1, 1, 2), f("past_key", 1, 1, 4, 2), f("past_value", 1, 1, 4, 2), i32("seqlens_k", 1), i32("total")},
		Outputs: []graph.ValueInfo{f("out", 1, 1, 4), f("present_key", 1, 1, 4, 2), f("present_value", 1, 1, 4, 2)},
		Nodes: []*graph.Node{{Name: "gqa", OpType: "GroupQueryAttention", Domain: "com.microsoft",
			Inputs:  []string{"q", "k", "v", "past_key", "past_value", "seqlens_k", "total"},
			Outputs: []string{"out", "present_key", "present_value"},
			Attrs: map[string]*graph.Attribute{
				"num_heads":    {Name: "num_heads", Type: graph.AttrInt, I: 2},
				"kv_num_heads": {Name: "kv_num_heads", Type: graph.AttrInt, I: 1}}}},
		Initializers: map[string]*graph.Tensor{},
	}
	pk := graph.MustFromSlice([]int{1, 1, 4, 2}, []float32{0.5, -1, 0.25, 2, 0, 0, 0, 0})
	pv := graph.MustFromSlice([]int{1, 1, 4, 2}, []float32{1, 0.5, -2, 1.5, 0, 0, 0, 0})
	feeds := map[string]*graph.Tensor{
		"q":          graph.MustFromSlice([]int{1, 1, 4}, []float32{1, -1, 0.5, 1}),
		"k":          graph.MustFromSlice([]int{1, 1, 2}, []float32{1, 1}),
		"v":          graph.MustFromSlice([]int{1, 1, 2}, []float32{-1, 2}),
		"past_key":   pk,
		"past_value": pv,
		"seqlens_k":  graph.MustFromSlice([]int{1}, []int32{2}),
		"total":      {DType: graph.Int32, Shape: []int{}, Data: []int32{3}},
	}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}}, feeds
}

func dmInPlace(ctx context.Context, m *dmEnv) outcome {
	type cand struct {
		name  string
		sg    *hal.Subgraph
		feeds map[string]*graph.Tensor
	}
	var cands []cand
	if op, binary, o := probe(ctx, m.contractEnv); o == nil {
		x, _ := graph.New(graph.Float32, []int{4, 6})
		fill(x, 21)
		cands = append(cands, cand{op, oneNode(op, binary, vi("x", graph.Float32, 4, 6)), probeFeeds(binary, x)})
	}
	sg, feeds := gqaCandidate()
	cands = append(cands, cand{"GroupQueryAttention", sg, feeds})
	declaredN, refusedN, tried := 0, 0, 0
	for _, cd := range cands {
		vs, err := m.dev.Supports(ctx, cd.sg)
		if err != nil {
			return failf("%s: Supports: %v", cd.name, err)
		}
		if !vs[0].Supported {
			continue
		}
		c, err := m.dev.Compile(ctx, cd.sg, nil)
		if err != nil {
			return failf("claimed %s, but Compile: %v", cd.name, err)
		}
		o := inPlaceOne(ctx, m, cd.name, cd.sg, cd.feeds, c, &declaredN, &refusedN)
		c.Release()
		if o != nil {
			return *o
		}
		tried++
	}
	if tried == 0 {
		return skipf("the backend claims none of the candidate subgraphs")
	}
	if declaredN == 0 {
		return passf("no in-place pair declared on %d subgraph(s); %d undeclared aliases refused", tried, refusedN)
	}
	return passf("%d declared in-place pair(s) written in place with the reference result; %d undeclared aliases refused", declaredN, refusedN)
}

func inPlaceOne(ctx context.Context, m *dmEnv, name string, sg *hal.Subgraph, feeds map[string]*graph.Tensor, c *hal.Compiled, declaredN, refusedN *int) *outcome {
	fail := func(format string, args ...any) *outcome { o := failf(name+": "+format, args...); return &o }
	if !c.CanEnqueue() {
		return nil
	}
	want, err := reference(ctx, sg, feeds)
	if err != nil {
		return fail("%v", err)
	}
	pairs := c.InPlaceOutputs()
	declared := map[[2]int]bool{}
	for _, p := range pairs {
		declared[[2]int{p.Output, p.Input}] = true
	}
	upload := func() ([]hal.Buffer, error) {
		var bs []hal.Buffer
		for _, in := range sg.Graph.Inputs {
			b, err := m.put(ctx, 0, feeds[in.Name])
			if err != nil {
				m.freeAll(bs...)
				return nil, err
			}
			bs = append(bs, b)
		}
		return bs, nil
	}
	// every undeclared alias of an output and a same-typed input is refused
	for oi, o := range sg.Graph.Outputs {
		for ii, in := range sg.Graph.Inputs {
			if declared[[2]int{oi, ii}] || o.Type.DType != in.Type.DType || !sameStatic(o.Type.Shape, in.Type.Shape) {
				continue
			}
			ins, err := upload()
			if err != nil {
				return fail("%v", err)
			}
			outs := make([]hal.Buffer, len(sg.Graph.Outputs))
			outs[oi] = ins[ii]
			f, err := c.Enqueue(ctx, ins, outs, nil, nil)
			if err == nil {
				f.Wait(ctx)
				m.freeAll(ins...)
				return fail("output %d (%q) given input %d's (%q) buffer, which the executable does not declare in place, was accepted", oi, o.Name, ii, in.Name)
			}
			m.freeAll(ins...)
			if !errors.Is(err, hal.ErrInvalidArgument) {
				return fail("an undeclared alias: %v (code %v), want InvalidArgument", err, hal.CodeOf(err))
			}
			*refusedN++
		}
	}
	// each declared pair, used: the call updates the input's buffer
	for _, p := range pairs {
		ins, err := upload()
		if err != nil {
			return fail("%v", err)
		}
		outs := make([]hal.Buffer, len(sg.Graph.Outputs))
		var extra []hal.Buffer
		for i, o := range sg.Graph.Outputs {
			if i == p.Output {
				outs[i] = ins[p.Input]
				continue
			}
			// the other outputs in buffers of the caller's (their shapes
			// may be known only after running)
			w := want[o.Name]
			b, err := m.alloc(ctx, 0, w.DType, w.Shape)
			if err != nil {
				m.freeAll(append(ins, extra...)...)
				return fail("allocating output %d: %v", i, err)
			}
			outs[i] = b
			extra = append(extra, b)
		}
		f, err := c.Enqueue(ctx, ins, outs, nil, nil)
		if err != nil {
			m.freeAll(append(ins, extra...)...)
			return fail("enqueue with the declared in-place pair output %d = input %d: %v", p.Output, p.Input, err)
		}
		err = f.Wait(ctx)
		if err != nil {
			m.freeAll(append(ins, extra...)...)
			return fail("in-place call: %v", err)
		}
		if !sameBuf(outs[p.Output], ins[p.Input]) {
			m.freeAll(append(ins, extra...)...)
			return fail("the in-place output %d was replaced by another buffer", p.Output)
		}
		oname := sg.Graph.Outputs[p.Output].Name
		got, err := m.get(ctx, ins[p.Input])
		if err == nil {
			if cmp := compareTensors(oname, got, want[oname], m.bound(sg.Graph.Nodes[0].OpType)); cmp.problem != "" {
				err = errors.New(cmp.problem)
			}
		}
		m.freeAll(append(ins, extra...)...)
		if err != nil {
			return fail("declared in-place output %d (%q) written into input %d's buffer: %v", p.Output, oname, p.Input, err)
		}
		*declaredN++
	}
	return nil
}

func sameStatic(a, b graph.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Static() || !b[i].Static() || a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

func dmProfile(ctx context.Context, m *dmEnv) outcome {
	op, binary, o := probe(ctx, m.contractEnv)
	if o != nil {
		return *o
	}
	g := oneNode(op, binary, vi("x", graph.Float32, 32, 32)).Graph
	g.Nodes[0].Name, g.Nodes[0].Outputs[0] = "conformance_first", "mid"
	second := &graph.Node{Name: "conformance_second", OpType: op, Inputs: []string{"mid"}, Outputs: []string{"y"}}
	if binary {
		second.Inputs = []string{"mid", "x"}
	}
	g.Nodes = append(g.Nodes, second)
	g.ValueInfo = append(g.ValueInfo, vi("mid", graph.Float32, 32, 32))
	sg := &hal.Subgraph{Graph: g, Opsets: opsets}
	nodes := map[string]bool{"conformance_first": true, "conformance_second": true}
	dev := len(m.devs) - 1 // the last device, so a profile that always says 0 is seen
	c, err := m.dev.Compile(ctx, sg, &hal.CompileOptions{Device: dev})
	if err != nil {
		return failf("claimed %s, but Compile of two nodes on device %d: %v", op, dev, err)
	}
	defer c.Release()
	x, _ := graph.New(graph.Float32, []int{32, 32})
	fill(x, 13)
	checkProfile := func(what string, p *hal.CallProfile, t0, t1 int64) string {
		if p == nil {
			return what + ": nil profile"
		}
		if p.Device != dev {
			return fmt.Sprintf("%s: profile says device %d, the call ran on device %d", what, p.Device, dev)
		}
		if p.EndNS < p.StartNS {
			return fmt.Sprintf("%s: call ends (%d) before it starts (%d)", what, p.EndNS, p.StartNS)
		}
		named := 0
		for _, k := range p.Kernels {
			if k.EndNS < k.StartNS {
				return fmt.Sprintf("%s: kernel %q ends before it starts", what, k.Name)
			}
			if k.StartNS < p.StartNS || k.EndNS > p.EndNS {
				return fmt.Sprintf("%s: kernel %q [%d, %d] lies outside its call [%d, %d]", what, k.Name, k.StartNS, k.EndNS, p.StartNS, p.EndNS)
			}
			for _, nd := range k.Nodes {
				if !nodes[nd] {
					return fmt.Sprintf("%s: kernel %q names node %q, which is not in the subgraph (%v)", what, k.Name, nd, []string{"conformance_first", "conformance_second"})
				}
				named++
			}
		}
		if len(p.Kernels) > 0 && named == 0 {
			return fmt.Sprintf("%s: %d kernels, none names a node of the subgraph", what, len(p.Kernels))
		}
		return ""
	}
	var notes []string
	if c.CanEnqueue() {
		in, err := m.put(ctx, dev, x)
		if err != nil {
			return failf("%v", err)
		}
		defer m.freeAll(in)
		ins := []hal.Buffer{in}
		if binary {
			ins = append(ins, in)
		}
		outs := []hal.Buffer{nil}
		f, err := c.Enqueue(ctx, ins, outs, nil, &hal.EnqueueOptions{Profile: true})
		if err != nil {
			return failf("profiled Enqueue: %v", err)
		}
		defer m.freeAll(outs[0])
		if err := f.Wait(ctx); err != nil {
			return failf("profiled Enqueue's fence: %v", err)
		}
		pf, ok := f.(interface {
			Profile() (*hal.CallProfile, error)
		})
		if !ok {
			return failf("the portable fence has no Profile")
		}
		p, err := pf.Profile()
		switch {
		case errors.Is(err, hal.ErrUnsupported):
			notes = append(notes, "enqueue fences carry no profile")
		case err != nil:
			return failf("Profile of a profiled Enqueue: %v", err)
		default:
			if s := checkProfile("profiled Enqueue", p, 0, 0); s != "" {
				return failf("%s", s)
			}
			notes = append(notes, fmt.Sprintf("enqueue profile: %d kernels", len(p.Kernels)))
		}
	}
	p, err := c.ExecuteProfiled(ctx, probeInputs(binary, x), []*graph.Tensor{{}})
	switch {
	case errors.Is(err, hal.ErrUnsupported):
		notes = append(notes, "no ExecuteProfiled")
	case err != nil:
		return failf("ExecuteProfiled: %v", err)
	default:
		if s := checkProfile("ExecuteProfiled", p, 0, 0); s != "" {
			return failf("%s", s)
		}
		notes = append(notes, fmt.Sprintf("ExecuteProfiled: %d kernels", len(p.Kernels)))
	}
	return passf("%s×2 on device %d: %s", op, dev, strings.Join(notes, "; "))
}

func dmShapeBounds(ctx context.Context, m *dmEnv) outcome {
	op, binary, o := probe(ctx, m.contractEnv)
	if o != nil {
		return *o
	}
	in := graph.ValueInfo{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}, {Value: 3}}}}
	sg := oneNode(op, binary, in)
	bounds := map[string][]hal.DimRange{"x": {{Min: 1, Max: 4}, {Min: 3, Max: 3}}}
	if binary {
		bounds["b"] = bounds["x"]
	}
	c, err := m.dev.Compile(ctx, sg, &hal.CompileOptions{ShapeBounds: bounds})
	if err != nil {
		if errors.Is(err, hal.ErrUnsupported) {
			return skipf("%s with a symbolic dim and shape bounds is not compiled: %v", op, err)
		}
		return failf("compiling %s with shape bounds: %v", op, err)
	}
	defer c.Release()
	var notes []string
	for _, n := range []int{1, 4, 9} {
		x, _ := graph.New(graph.Float32, []int{n, 3})
		fill(x, n)
		want, err := reference(ctx, sg, probeFeeds(binary, x))
		if err != nil {
			return failf("%v", err)
		}
		inside := n <= 4
		judge := func(what string, got *graph.Tensor, err error) *outcome {
			switch {
			case err == nil:
				if cmp := compareTensors("y", got, want["y"], m.bound(op)); cmp.problem != "" {
					o := failf("%s with x of [%d 3]: %s", what, n, cmp.problem)
					return &o
				}
				if !inside {
					notes = append(notes, fmt.Sprintf("%s ran [%d 3] outside the bounds", what, n))
				}
			case errors.Is(err, hal.ErrDeclined) && !inside:
				if reasonOf(err) == "" {
					o := failf("%s declined [%d 3] without a reason", what, n)
					return &o
				}
				notes = append(notes, fmt.Sprintf("%s declined [%d 3]", what, n))
			case errors.Is(err, hal.ErrDeclined):
				o := failf("%s declined [%d 3], inside the compiled bounds [1,4]×3: %v", what, n, err)
				return &o
			default:
				o := failf("%s with x of [%d 3] (bounds [1,4]×3): %v (code %v), want success or Declined", what, n, err, hal.CodeOf(err))
				return &o
			}
			return nil
		}
		out := &graph.Tensor{}
		if o := judge("Execute", out, c.Execute(ctx, probeInputs(binary, x), []*graph.Tensor{out})); o != nil {
			return *o
		}
		if c.CanEnqueue() {
			b, err := m.put(ctx, 0, x)
			if err != nil {
				return failf("%v", err)
			}
			ins := []hal.Buffer{b}
			if binary {
				ins = append(ins, b)
			}
			outs := []hal.Buffer{nil}
			f, err := c.Enqueue(ctx, ins, outs, nil, nil)
			var got *graph.Tensor
			if err == nil {
				if err = f.Wait(ctx); err == nil {
					got, err = m.get(ctx, outs[0])
				}
			}
			m.freeAll(b, outs[0])
			if o := judge("Enqueue", got, err); o != nil {
				return *o
			}
		}
	}
	return passf("%s: [1 3] and [4 3] ran inside bounds [1,4]×3; %s", op, strings.Join(notes, "; "))
}

func dmDevicesApart(ctx context.Context, m *dmEnv) outcome {
	if len(m.devs) < 2 {
		return skipf("the backend lists one device")
	}
	op, binary, o := probe(ctx, m.contractEnv)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, vi("x", graph.Float32, 32, 32))
	type per struct {
		c    *hal.Compiled
		x    *graph.Tensor
		in   hal.Buffer
		want *graph.Tensor
	}
	ps := make([]per, len(m.devs))
	defer func() {
		for _, p := range ps {
			if p.c != nil {
				p.c.Release()
			}
			m.freeAll(p.in)
		}
	}()
	for i := range ps {
		c, err := m.dev.Compile(ctx, sg, &hal.CompileOptions{Device: i})
		if err != nil {
			return failf("compiling claimed %s on device %d: %v", op, i, err)
		}
		ps[i].c = c
		if !c.CanEnqueue() {
			return skipf("the %s executable cannot be enqueued", op)
		}
		x, _ := graph.New(graph.Float32, []int{32, 32})
		fill(x, 100+i)
		ps[i].x = x
		if ps[i].in, err = m.put(ctx, i, x); err != nil {
			return failf("device %d: %v", i, err)
		}
		if d := ps[i].in.Device(); d != i {
			return failf("a buffer allocated on device %d reports device %d", i, d)
		}
		want, err := reference(ctx, sg, probeFeeds(binary, x))
		if err != nil {
			return failf("%v", err)
		}
		ps[i].want = want["y"]
	}
	// a buffer of another device is refused
	other := ps[1].in
	ins := []hal.Buffer{other}
	if binary {
		ins = append(ins, other)
	}
	outs := []hal.Buffer{nil}
	f, err := ps[0].c.Enqueue(ctx, ins, outs, nil, nil)
	if err == nil {
		f.Wait(ctx)
		m.freeAll(outs[0])
		return failf("device 0's executable accepted an input buffer of device 1")
	}
	if hal.CodeOf(err) == hal.CodeInternal {
		return failf("device 0's executable given device 1's buffer: %v, want a refusal (InvalidArgument)", err)
	}
	// every device computes its own data at once
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i := range ps {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for it := 0; it < 4; it++ {
				ins := []hal.Buffer{ps[i].in}
				if binary {
					ins = append(ins, ps[i].in)
				}
				outs := []hal.Buffer{nil}
				f, err := ps[i].c.Enqueue(ctx, ins, outs, nil, nil)
				if err != nil {
					errs[i] = err
					return
				}
				if outs[0].Device() != i {
					errs[i] = fmt.Errorf("an output allocated by device %d's executable reports device %d", i, outs[0].Device())
					f.Wait(ctx)
					m.freeAll(outs[0])
					return
				}
				got, err := m.get(ctx, outs[0], f)
				m.freeAll(outs[0])
				if err != nil {
					errs[i] = err
					return
				}
				if cmp := compareTensors("y", got, ps[i].want, m.bound(op)); cmp.problem != "" {
					errs[i] = errors.New(cmp.problem)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return failf("device %d: %v", i, err)
		}
	}
	return passf("%d devices computed their own data concurrently; a foreign buffer was refused (%v)", len(ps), hal.CodeOf(err))
}

// precisionProbe is a float32 input whose values float16 and bfloat16
// cannot hold: a backend computing in either is seen.
func precisionProbe(n int) *graph.Tensor {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(1+i%7) + float32(i%13+1)*(1.0/4099) + float32(math.Pow(2, -float64(14+i%5)))
		if i%2 == 1 {
			x[i] = -x[i] / 3
		}
	}
	return graph.MustFromSlice([]int{n}, x)
}
