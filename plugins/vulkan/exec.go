package vulkan

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
)

// executable is a compiled partition: its nodes, its weights on the
// device (uploaded once, at Compile) and a plan per input-shape
// signature (built at the first call with those shapes).
type executable struct {
	b       *Backend
	d       *device
	g       *graph.Graph // the partition (nodes and boundary; not modified)
	opset   int64
	consts  map[string]*graph.Tensor
	weights map[string]loc // float32 constants and folded parameters in wbuf
	wbuf    *vbuf
	inDT    []graph.DType // the inputs' dtypes (float32 but for indices and sequence lengths)
	pairs   []hal.InPlace // outputs that may be an input's buffer (InPlaceOutputs)

	mu       sync.Mutex
	plans    map[string]*plan
	released bool // no new calls
	freed    bool
	inflight int // submitted jobs not yet finished
}

// begin counts a job of the executable; end, when it finished, frees the
// executable once it was released and nothing of it is pending (a job
// may wait for another backend's fence long after Release).
func (e *executable) begin() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released {
		return hal.Errorf(hal.CodeFailedPrecondition, "vulkan: executable released")
	}
	e.inflight++
	return nil
}

func (e *executable) end() {
	e.mu.Lock()
	e.inflight--
	free := e.released && e.inflight == 0 && !e.freed
	if free {
		e.freed = true
	}
	e.mu.Unlock()
	if free {
		e.freeAll()
	}
}

// Compile uploads the partition's constants and checks every node.
func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	d, err := b.device(opts.Device)
	if err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	// opts.Precision: a reduced precision is allowed, never required;
	// every shader computes in float32.
	if err := sg.Graph.Validate(map[string]bool{}); err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "vulkan: invalid subgraph: %v", err)
	}
	for i, n := range sg.Graph.Nodes {
		if r := verdict(sg, n); r != "" {
			return nil, hal.Errorf(hal.CodeUnsupported, "node %d (%s): %s", i, n.Label(), r)
		}
	}
	e := &executable{b: b, d: d, g: sg.Graph, opset: sg.OpsetVersion(""), consts: map[string]*graph.Tensor{}, weights: map[string]loc{}, plans: map[string]*plan{}}
	for _, vi := range sg.Graph.Inputs {
		dt := vi.Type.DType
		if t, ok := sg.TypeOf(vi.Name); ok && t.DType != graph.Undefined {
			dt = t.DType
		}
		if dt == graph.Undefined {
			dt = graph.Float32
		}
		e.inDT = append(e.inDT, dt)
	}
	e.pairs = inPlacePairs(sg.Graph)
	var blob []byte
	putBytes := func(key string, raw []byte) {
		off := uint64(len(blob))
		blob = append(blob, raw...)
		for uint64(len(blob))%d.g.align != 0 || len(blob) == int(off) {
			blob = append(blob, 0)
		}
		e.weights[key] = loc{kind: locW, off: off, size: uint64(max(len(raw), 4))}
	}
	put := func(key string, vals []float32) {
		putBytes(key, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), 4*len(vals)))
	}
	put("<zero>", make([]float32, 4))
	for _, n := range sg.Graph.Nodes {
		for i, in := range n.Inputs {
			c := sg.ConstOf(in)
			if c == nil {
				continue
			}
			e.consts[in] = c
			if _, done := e.weights[in]; done {
				continue
			}
			if c.DType == graph.Float32 {
				put(in, graph.Data[float32](c))
			} else if isIndexType(c.DType) && (n.OpType == "Gather" && i == 1 || n.OpType == "GroupQueryAttention" && (i == 5 || i == 6)) {
				// indices and sequence lengths the shaders read
				raw, _ := graph.RawBytes(c)
				putBytes(in, raw)
			}
		}
		if n.OpType == "GroupQueryAttention" && n.AttrInt("do_rotary", 0) != 0 {
			// cos_cache then sin_cache, one binding
			rope := append(append([]float32{}, graph.Data[float32](sg.ConstOf(n.Inputs[7]))...), graph.Data[float32](sg.ConstOf(n.Inputs[8]))...)
			put("rope:"+n.Outputs[0], rope)
		}
		if n.OpType == "BatchNormalization" {
			s, t, err := foldBN(n, sg)
			if err != nil {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "%v", err)
			}
			put("bn.scale:"+n.Outputs[0], s)
			put("bn.shift:"+n.Outputs[0], t)
		}
	}
	if uint64(len(blob)) > d.g.maxRange {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "vulkan: %d bytes of weights, over the device's storage buffer range (%d)", len(blob), d.g.maxRange)
	}
	if e.wbuf, err = d.g.alloc(uint64(len(blob)), false); err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	if err := e.uploadWeights(ctx, blob); err != nil {
		d.g.free(e.wbuf)
		return nil, err
	}
	b.mu.Lock()
	if b.exes == nil {
		b.mu.Unlock()
		d.g.free(e.wbuf)
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "vulkan: backend closed")
	}
	b.exes[e] = struct{}{}
	b.mu.Unlock()
	return e, nil
}

func (e *executable) uploadWeights(ctx context.Context, blob []byte) error {
	if e.wbuf.ptr != nil {
		copy(e.wbuf.bytes(), blob)
		return nil
	}
	t, _ := graph.FromSlice([]int{len(blob)}, blob)
	db := &dbuf{d: e.d, dt: graph.Uint8, shape: []int{len(blob)}, vb: e.wbuf, bytes: uint64(len(blob)), refs: 2}
	f, err := e.d.upload(db, t, nil)
	if err != nil {
		return err
	}
	return f.Wait(ctx)
}

func foldBN(n *graph.Node, sg *hal.Subgraph) (scale, shift []float32, err error) {
	get := func(i int) []float64 { return sg.ConstOf(n.Inputs[i]).Float64s() }
	s, b, m, v := get(1), get(2), get(3), get(4)
	if len(b) != len(s) || len(m) != len(s) || len(v) != len(s) {
		return nil, nil, fmt.Errorf("%s: parameters of different lengths", n.Label())
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	scale, shift = make([]float32, len(s)), make([]float32, len(s))
	for i := range s {
		k := s[i] / math.Sqrt(v[i]+eps)
		scale[i], shift[i] = float32(k), float32(b[i]-m[i]*k)
	}
	return scale, shift, nil
}

func (e *executable) Release() error {
	e.b.mu.Lock()
	if e.b.exes == nil { // backend closed: it released us
		e.b.mu.Unlock()
		return nil
	}
	delete(e.b.exes, e)
	e.b.mu.Unlock()
	e.releaseLocked()
	return nil
}

// releaseLocked refuses new calls and frees everything now or, when jobs
// are pending, when the last one finished.
func (e *executable) releaseLocked() {
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return
	}
	e.released = true
	free := e.inflight == 0 && !e.freed
	if free {
		e.freed = true
	}
	e.mu.Unlock()
	if free {
		e.freeAll()
	}
}

func (e *executable) freeAll() {
	for _, p := range e.plans {
		p.free()
	}
	e.d.g.free(e.wbuf)
}

// plan is the lowering of one input-shape signature.
type plan struct {
	e         *executable
	inShapes  [][]int
	outShapes [][]int
	inBytes   []uint64
	inplace   map[int]int // output -> input: one buffer (the in-place pairs aliased in the calls of this plan)
	steps     []step
	checks    []hostCheck // of the input values, on the host path
	tmpOff    []uint64
	tmp       *vbuf

	mu   sync.Mutex
	recs []*recording
}

func signature(shapes [][]int) string {
	var b strings.Builder
	for _, s := range shapes {
		fmt.Fprint(&b, s, ";")
	}
	return b.String()
}

func declined(format string, args ...any) error {
	return &hal.Error{Code: hal.CodeDeclined, Msg: fmt.Sprintf(format, args...)}
}

// plan returns the plan of the input shapes, building it once; inplace
// holds the pairs (e.pairs) whose output is the input's buffer in this
// call.
func (e *executable) plan(shapes [][]int, inplace map[int]int) (*plan, error) {
	key := signature(shapes)
	if len(inplace) > 0 {
		key += fmt.Sprint("inplace", inplace)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "vulkan: executable released")
	}
	if p, ok := e.plans[key]; ok {
		return p, nil
	}
	p, err := e.build(shapes, inplace)
	if err != nil {
		return nil, err
	}
	e.plans[key] = p
	return p, nil
}

func (e *executable) build(shapes [][]int, inplace map[int]int) (*plan, error) {
	g := e.g
	lw := &lowering{exe: e, shapes: map[string][]int{}, dtypes: map[string]graph.DType{}, locs: map[string]loc{}, outIdx: map[string]int{}, inplace: inplace}
	var inBytes []uint64
	for j, o := range g.Outputs {
		if _, dup := lw.outIdx[o.Name]; !dup {
			lw.outIdx[o.Name] = j
		}
	}
	for i, in := range g.Inputs {
		lw.shapes[in.Name] = shapes[i]
		size := uint64(ops.Prod(shapes[i]) * e.inDT[i].Size())
		inBytes = append(inBytes, size)
		if e.inDT[i] != graph.Float32 {
			lw.dtypes[in.Name] = e.inDT[i]
		}
		lw.locs[in.Name] = loc{kind: locIn, idx: i, size: size}
	}
	for name, c := range e.consts {
		lw.shapes[name] = c.Shape
		if c.DType != graph.Float32 {
			lw.dtypes[name] = c.DType
		}
		if w, ok := e.weights[name]; ok {
			lw.locs[name] = w
		}
	}
	for _, n := range g.Nodes {
		in := make([]ops.InferInput, len(n.Inputs))
		for i, name := range n.Inputs {
			if name == "" {
				continue
			}
			s, ok := lw.shapes[name]
			if !ok {
				return nil, hal.Errorf(hal.CodeInternal, "vulkan: %s: input %q has no shape", n.Label(), name)
			}
			dt := graph.Float32
			if d, ok := lw.dtypes[name]; ok {
				dt = d
			}
			in[i] = ops.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(s...)}, Const: e.consts[name]}
		}
		types, ok, err := ops.Infer(n, e.opset, in)
		if err != nil || !ok {
			return nil, declined("vulkan: %s: shape inference: %v", n.Label(), err)
		}
		if n.OpType == "GroupQueryAttention" {
			// the presents are the past's length (gqaVerdict)
			gs, err := gqaShapes(n, lw.shapes[n.Inputs[0]], lw.shapes[n.Input(3)])
			if err != nil {
				return nil, declined("vulkan: %v", err)
			}
			for j := range types {
				if j < len(gs) && gs[j] != nil {
					types[j].Shape = graph.StaticShape(gs[j]...)
				}
			}
		}
		outShapes := make([][]int, len(n.Outputs))
		for j := range n.Outputs {
			if j >= len(types) {
				continue
			}
			s := make([]int, len(types[j].Shape))
			for k, d := range types[j].Shape {
				if !d.Static() {
					return nil, declined("vulkan: %s: output %d has a dimension known only while running", n.Label(), j)
				}
				s[k] = int(d.Value)
			}
			if len(s) > maxRank {
				return nil, declined("vulkan: %s: output of rank %d, over %d", n.Label(), len(s), maxRank)
			}
			outShapes[j] = s
		}
		if err := lw.lowerNode(n, outShapes); err != nil {
			return nil, declined("vulkan: %v", err)
		}
	}
	p := &plan{e: e, inShapes: shapes, inBytes: inBytes, inplace: inplace}
	for j, o := range g.Outputs {
		l, s, err := lw.val(o.Name)
		if err != nil {
			return nil, hal.Errorf(hal.CodeInternal, "vulkan: output %q: %v", o.Name, err)
		}
		p.outShapes = append(p.outShapes, s)
		if l.kind != locOut || l.idx != j {
			// a view, an input or a constant: copied into the output
			dst := loc{kind: locOut, idx: j, size: bytesOf(s)}
			n := &graph.Node{Name: "output " + o.Name, OpType: "Copy"}
			if l.kind == locW && l.size == 0 {
				return nil, declined("vulkan: output %q is a non-float constant", o.Name)
			}
			if err := lw.copyStep(n, l, dst, s, contiguous(s), 0, contiguous(s), 0); err != nil {
				return nil, declined("vulkan: %v", err)
			}
		}
	}
	p.steps, p.checks = lw.steps, lw.checks
	if err := p.placeTmps(lw.tmps); err != nil {
		return nil, err
	}
	for _, s := range p.steps {
		if _, _, err := e.d.g.pipeline(pipeKey{shader: s.shader, spec: [4]uint32{s.wg, s.variant}}); err != nil {
			p.free()
			return nil, hal.Errorf(hal.CodeInternal, "%v", err)
		}
		if len(s.binds) > e.d.g.maxBinds {
			p.free()
			return nil, declined("vulkan: %s: the %s shader binds %d storage buffers, the device %d", s.node, s.shader, len(s.binds), e.d.g.maxBinds)
		}
		for _, bl := range s.binds {
			if bl.size > e.d.g.maxRange {
				p.free()
				return nil, hal.Errorf(hal.CodeResourceExhausted, "vulkan: a %d-byte value is over the device's storage buffer range (%d)", bl.size, e.d.g.maxRange)
			}
		}
	}
	return p, nil
}

// placeTmps gives each scratch value an offset in one buffer: values
// whose lifetimes (first to last step using them) overlap never share
// bytes.
func (p *plan) placeTmps(sizes []uint64) error {
	n := len(sizes)
	first, last := make([]int, n), make([]int, n)
	for i := range first {
		first[i], last[i] = -1, -1
	}
	for si, s := range p.steps {
		for _, b := range s.binds {
			if b.kind != locTmp {
				continue
			}
			if first[b.idx] < 0 {
				first[b.idx] = si
			}
			last[b.idx] = si
		}
	}
	align := p.e.d.g.align
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(sizes[b]) - int(sizes[a]) })
	p.tmpOff = make([]uint64, n)
	type span struct {
		lo, hi uint64
		a, b   int
	}
	var placed []span
	var total uint64
	for _, id := range order {
		if first[id] < 0 {
			continue
		}
		sz := max((sizes[id]+align-1)/align*align, align)
		off := uint64(0)
		for moved := true; moved; {
			moved = false
			for _, s := range placed {
				if s.b < first[id] || s.a > last[id] {
					continue // lifetimes apart
				}
				if off < s.hi && s.lo < off+sz {
					off, moved = s.hi, true
				}
			}
		}
		placed = append(placed, span{off, off + sz, first[id], last[id]})
		p.tmpOff[id] = off
		total = max(total, off+sz)
	}
	if total > 0 {
		var err error
		if p.tmp, err = p.e.d.g.alloc(total, false); err != nil {
			return hal.Errorf(hal.CodeResourceExhausted, "%v", err)
		}
	}
	return nil
}

func (p *plan) free() {
	g := p.e.d.g
	for _, r := range p.recs {
		r.free(g)
	}
	p.recs = nil
	g.free(p.tmp)
	p.tmp = nil
}
