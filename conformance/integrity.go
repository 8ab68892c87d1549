package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// Data-integrity cases (HAL 1.0 and 1.1): a call leaves its inputs and the
// compiled subgraph as they were, writes caller-bound outputs in place,
// computes float32 in float32 unless the caller opted in, and executions
// sharing weights do not interfere.

func integrityCases() []Case {
	mk := func(id, doc string, f func(ctx context.Context, e *contractEnv) outcome) Case {
		return Case{ID: "contract/" + id, Source: SourceContract, Doc: doc, contract: f}
	}
	return []Case{
		mk("inputs-unchanged", "every claimed single-op case (one per op of the generated cases) leaves its input tensors byte-identical after Execute, with outputs left to the backend and with outputs bound by the caller", contractInputsUnchanged),
		mk("subgraph-unchanged", "Compile, Execute and Release leave every claimed single-op subgraph (nodes, attributes, constants, boundary types) exactly as it was", contractSubgraphUnchanged),
		mk("outputs-in-place", "outputs bound by the caller (Data set) are written in place: the same memory, dtype and shape, holding the same values as outputs the backend allocates", contractOutputsInPlace),
		mk("concurrent-weights", "two executables compiled from one subgraph with a constant, run from 8 goroutines at once, give every caller its correct result and leave the constant unchanged", contractConcurrentWeights),
		mk("precision", "with default options the executable reports float32 and computes float32 values within the float32 tolerance (values float16 and bfloat16 cannot hold); a reduced precision the device declares is used only when asked for, and disclosed", contractPrecision),
	}
}

// sweep is what one pass over the claimed single-op cases found, shared by
// the cases that report on it (each case reads its own list).
type sweep struct {
	claimed, probed int
	honest          []string // claimed, but Compile or Execute failed
	inputs          []string // an input changed
	subgraph        []string // the subgraph changed
	inPlace         []string // a bound output was not written in place
	err             error    // the sweep itself could not run
	// per op of the swept cases: the case claimed, or the reason its
	// (float32 where there is one) case was declined
	claimedOps  map[string]string
	declinedOps map[string]sweepDecline
}

// sweepDecline is a swept case the backend declined.
type sweepDecline struct {
	id, dtype, reason string
}

func (r *runner) sweep(ctx context.Context, dev *hal.Device) *sweep {
	r.sweepOnce.Do(func() { r.swept = runSweep(ctx, dev, r.policy, r.h.Profile) })
	return r.swept
}

// digest is the SHA-256 of a subgraph as an ONNX model (sorted maps:
// deterministic), covering nodes, attributes, constants and types.
func digest(sg *hal.Subgraph) [32]byte {
	return sha256.Sum256(onnx.Encode(&graph.Model{IRVersion: 8, Opsets: sg.Opsets, Graph: sg.Graph}))
}

func dataPtr(t *graph.Tensor) uintptr {
	if t == nil || t.Data == nil {
		return 0
	}
	v := reflect.ValueOf(t.Data)
	if v.Kind() != reflect.Slice || v.Len() == 0 {
		return 0
	}
	return v.Pointer()
}

// sweepCase is one single-op case as the sweep uses it: built, with the
// boundary types the runtime infers. Backend-independent, so built once
// per process; every run decodes its own copy of the graph and inputs.
type sweepCase struct {
	id, op  string
	dtype   string
	model   []byte
	inputs  map[string]*graph.Tensor
	outputs []graph.ValueInfo
}

var (
	sweepCasesOnce sync.Once
	sweepCasesList []sweepCase
	sweepCasesErr  error
)

func sweepCases() ([]sweepCase, error) {
	sweepCasesOnce.Do(func() {
		cases, _, err := opCases(Quick)
		if err != nil {
			sweepCasesErr = err
			return
		}
		// one case per op: its base float32 case (the dtype every backend
		// takes first; same shapes, ordinary values), else its first
		score := func(c Case) int {
			n := 0
			if c.DType == "float32" {
				n += 10
			}
			if strings.HasSuffix(c.ID, "/same") {
				n += 5
			}
			for _, x := range []string{"/empty", "/special", "/scalar", "bcast"} {
				if strings.Contains(c.ID, x) {
					n -= 3
				}
			}
			return n
		}
		pick := map[string]int{}
		var order []string
		for i, c := range cases {
			j, ok := pick[c.Op]
			if !ok {
				order = append(order, c.Op)
				pick[c.Op] = i
			} else if score(c) > score(cases[j]) {
				pick[c.Op] = i
			}
		}
		for _, op := range order {
			c := cases[pick[op]]
			mc, err := c.build()
			if err != nil {
				sweepCasesErr = fmt.Errorf("building %s: %v", c.ID, err)
				return
			}
			ir, err := onnx.Decode(mc.model, onnx.Options{})
			if err != nil {
				sweepCasesErr = fmt.Errorf("decoding %s: %v", c.ID, err)
				return
			}
			ref, err := runtime.Prepare(context.Background(), ir, nil)
			if err != nil {
				continue // the reference refuses it: not a contract question
			}
			sweepCasesList = append(sweepCasesList, sweepCase{id: c.ID, op: c.Op, dtype: c.DType, model: mc.model, inputs: mc.inputs, outputs: append([]graph.ValueInfo{}, ref.Outputs()...)})
		}
	})
	return sweepCasesList, sweepCasesErr
}

func runSweep(ctx context.Context, dev *hal.Device, policy *Policy, profile string) *sweep {
	s := &sweep{claimedOps: map[string]string{}, declinedOps: map[string]sweepDecline{}}
	cases, err := sweepCases()
	if err != nil {
		s.err = err
		return s
	}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			s.err = err
			return s
		}
		ir, err := onnx.Decode(c.model, onnx.Options{})
		if err != nil {
			s.err = fmt.Errorf("decoding %s: %v", c.id, err)
			return s
		}
		g := *ir.Graph
		g.Outputs = append([]graph.ValueInfo{}, c.outputs...)
		sg := &hal.Subgraph{Graph: &g, Opsets: ir.Opsets}
		s.probed++
		vs, err := dev.Supports(ctx, sg)
		if err != nil {
			s.honest = append(s.honest, fmt.Sprintf("%s: Supports: %v", c.id, err))
			continue
		}
		if !vs[0].Supported {
			// a backend may take an op only with constant weights: ask
			// again with every input but the first as a constant
			if !supportedWithConstants(ctx, dev, sg, c.inputs) {
				s.declinedOps[c.op] = sweepDecline{c.id, c.dtype, vs[0].Reason}
			}
			continue
		}
		s.claimedOps[c.op] = c.id
		s.claimed++
		before := digest(sg)
		comp, err := dev.Compile(ctx, sg, nil)
		if digest(sg) != before {
			s.subgraph = append(s.subgraph, c.id+": Compile changed the subgraph")
			before = digest(sg)
		}
		if err != nil {
			s.honest = append(s.honest, fmt.Sprintf("%s: claimed, but Compile: %v", c.id, err))
			continue
		}
		var ins []*graph.Tensor
		var snaps [][]byte
		var shapes [][]int
		for _, in := range g.Inputs {
			t := c.inputs[in.Name].Clone()
			ins = append(ins, t)
			snaps = append(snaps, rawCopy(t))
			shapes = append(shapes, append([]int{}, t.Shape...))
		}
		inputsSame := func(when string) {
			for i, t := range ins {
				if !graph.SameShape(t.Shape, shapes[i]) || !bytes.Equal(rawCopy(t), snaps[i]) {
					s.inputs = append(s.inputs, fmt.Sprintf("%s: input %d (%q) changed by Execute %s", c.id, i, g.Inputs[i].Name, when))
					return
				}
			}
		}
		outs := make([]*graph.Tensor, len(g.Outputs))
		for i := range outs {
			outs[i] = &graph.Tensor{}
		}
		if err := comp.Execute(ctx, ins, outs); err != nil {
			s.honest = append(s.honest, fmt.Sprintf("%s: claimed and compiled, but Execute: %v", c.id, err))
			_ = comp.Release()
			continue
		}
		inputsSame("with outputs left to the backend")
		// the same call with outputs bound by the caller
		bound := make([]*graph.Tensor, len(outs))
		ptrs := make([]uintptr, len(outs))
		for i, o := range outs {
			t, err := graph.New(o.DType, o.Shape)
			if err != nil {
				s.err = err
				return s
			}
			fill(t, 31+i)
			bound[i], ptrs[i] = t, dataPtr(t)
		}
		if err := comp.Execute(ctx, ins, bound); err != nil {
			s.inPlace = append(s.inPlace, fmt.Sprintf("%s: Execute into caller-bound outputs: %v", c.id, err))
		} else {
			inputsSame("with outputs bound by the caller")
			for i, t := range bound {
				name := g.Outputs[i].Name
				switch {
				case dataPtr(t) != ptrs[i]:
					s.inPlace = append(s.inPlace, fmt.Sprintf("%s: output %q was given new memory instead of being written in place", c.id, name))
				case !graph.SameShape(t.Shape, outs[i].Shape) || t.DType != outs[i].DType:
					s.inPlace = append(s.inPlace, fmt.Sprintf("%s: bound output %q became %v%v", c.id, name, t.DType, t.Shape))
				default:
					if cmp := compareTensors(name, t, outs[i], policy.For(c.op, outs[i].DType, profile)); cmp.problem != "" {
						s.inPlace = append(s.inPlace, fmt.Sprintf("%s: a caller-bound output differs from one the backend allocated: %s", c.id, cmp.problem))
					}
				}
			}
		}
		_ = comp.Release()
		if digest(sg) != before {
			s.subgraph = append(s.subgraph, c.id+": Execute or Release changed the subgraph")
		}
	}
	return s
}

func sweepReport(s *sweep, list []string, what string) outcome {
	if s.err != nil {
		return failf("%v", s.err)
	}
	if s.claimed == 0 {
		return skipf("the backend claims none of the %d single-op cases", s.probed)
	}
	if len(list) > 0 {
		bad := list
		if len(bad) > 5 {
			bad = append(append([]string{}, bad[:5]...), fmt.Sprintf("… %d more", len(list)-5))
		}
		return failf("%s", strings.Join(bad, "; "))
	}
	return passf("%d claimed ops: %s", s.claimed, what)
}

func contractHonest(ctx context.Context, e *contractEnv) outcome {
	s := e.r.sweep(ctx, e.dev)
	if s.err != nil {
		return failf("%v", s.err)
	}
	if len(s.honest) > 0 {
		bad := s.honest
		if len(bad) > 5 {
			bad = append(append([]string{}, bad[:5]...), fmt.Sprintf("… %d more", len(s.honest)-5))
		}
		return failf("%s", strings.Join(bad, "; "))
	}
	return passf("%d of %d ops claimed; every claim compiled and executed", s.claimed, s.probed)
}

// supportedWithConstants asks for a verdict on sg with its inputs after
// the first turned into initializers holding the case's values.
func supportedWithConstants(ctx context.Context, dev *hal.Device, sg *hal.Subgraph, inputs map[string]*graph.Tensor) bool {
	if len(sg.Graph.Inputs) < 2 {
		return false
	}
	g := *sg.Graph
	g.Inputs = g.Inputs[:1]
	g.Initializers = map[string]*graph.Tensor{}
	for k, v := range sg.Graph.Initializers {
		g.Initializers[k] = v
	}
	for _, in := range sg.Graph.Inputs[1:] {
		t, ok := inputs[in.Name]
		if !ok {
			return false
		}
		g.Initializers[in.Name] = t.Clone()
	}
	vs, err := dev.Supports(ctx, &hal.Subgraph{Graph: &g, Opsets: sg.Opsets})
	return err == nil && len(vs) > 0 && vs[0].Supported
}

// contractCapabilities: Capabilities, the summary, agrees with Supports,
// the verdicts: every op the backend claims in the sweep is declared, and
// no op declared for float32 without attribute or rank conditions is
// declined in its float32 case (with its weights as graph inputs, nor
// with them as constants).
func contractCapabilities(ctx context.Context, e *contractEnv) outcome {
	s := e.r.sweep(ctx, e.dev)
	if s.err != nil {
		return failf("%v", s.err)
	}
	declared := map[string]hal.OpCapability{}
	for _, op := range e.caps.Ops {
		name := op.OpType // the cases name an op of another domain DOMAIN.OP
		if op.Domain != "" && op.Domain != "ai.onnx" {
			name = op.Domain + "." + op.OpType
		}
		declared[name] = op
	}
	var bad []string
	for _, op := range slices.Sorted(maps.Keys(s.claimedOps)) {
		if _, ok := declared[op]; !ok {
			bad = append(bad, fmt.Sprintf("takes %s (%s) but Capabilities does not declare it", op, s.claimedOps[op]))
		}
	}
	for _, op := range slices.Sorted(maps.Keys(s.declinedOps)) {
		d := s.declinedOps[op]
		c, ok := declared[op]
		if !ok || d.dtype != "float32" || len(c.Attrs) > 0 || c.MaxRank > 0 || (len(c.DTypes) > 0 && !slices.Contains(c.DTypes, graph.Float32)) {
			continue
		}
		bad = append(bad, fmt.Sprintf("declares %s for float32 without conditions but declines %s: %s", op, d.id, d.reason))
	}
	if len(bad) > 0 {
		if len(bad) > 8 {
			bad = append(bad[:8], fmt.Sprintf("… %d more", len(bad)-8))
		}
		return failf("%s", strings.Join(bad, "; "))
	}
	return passf("%d ops declared; the %d claimed in the sweep are all declared, and no unconditional float32 declaration is declined", len(declared), len(s.claimedOps))
}

func contractInputsUnchanged(ctx context.Context, e *contractEnv) outcome {
	s := e.r.sweep(ctx, e.dev)
	return sweepReport(s, s.inputs, "inputs byte-identical after every call")
}

func contractSubgraphUnchanged(ctx context.Context, e *contractEnv) outcome {
	s := e.r.sweep(ctx, e.dev)
	return sweepReport(s, s.subgraph, "subgraphs unchanged by Compile, Execute and Release")
}

func contractOutputsInPlace(ctx context.Context, e *contractEnv) outcome {
	s := e.r.sweep(ctx, e.dev)
	return sweepReport(s, s.inPlace, "caller-bound outputs written in place with the same values")
}

func contractConcurrentWeights(ctx context.Context, e *contractEnv) outcome {
	var op string
	var sg *hal.Subgraph
	for _, cand := range binaryProbe {
		g := oneNode(cand, true, vi("x", graph.Float32, 32, 32)).Graph
		g.Inputs = g.Inputs[:1]
		w, _ := graph.New(graph.Float32, []int{32, 32})
		fill(w, 7)
		if cand == "Div" {
			for i, v := range w.Data.([]float32) {
				if v > -0.1 && v < 0.1 {
					w.Data.([]float32)[i] = 0.5
				}
			}
		}
		g.Initializers["b"] = w
		s := &hal.Subgraph{Graph: g, Opsets: opsets}
		vs, err := e.dev.Supports(ctx, s)
		if err != nil {
			return failf("Supports: %v", err)
		}
		if vs[0].Supported {
			op, sg = cand, s
			break
		}
	}
	if sg == nil {
		return skipf("the backend claims none of %v with a constant operand", binaryProbe)
	}
	w := sg.Graph.Initializers["b"]
	wSnap := rawCopy(w)
	before := digest(sg)
	var comps []*hal.Compiled
	for i := 0; i < 2; i++ {
		c, err := e.dev.Compile(ctx, sg, nil)
		if err != nil {
			return failf("claimed %s with a constant, but Compile %d: %v", op, i+1, err)
		}
		defer c.Release()
		comps = append(comps, c)
	}
	ref, err := refProgram(ctx, sg)
	if err != nil {
		return failf("reference: %v", err)
	}
	defer ref.Close()
	const workers, iters = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func(wk int) {
			defer wg.Done()
			for it := 0; it < iters; it++ {
				x, _ := graph.New(graph.Float32, []int{32, 32})
				fill(x, wk*31+it)
				out := &graph.Tensor{}
				if err := comps[(wk+it)%2].Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{out}); err != nil {
					errs <- fmt.Errorf("worker %d call %d: %w", wk, it, err)
					return
				}
				want, err := ref.Run(ctx, map[string]*graph.Tensor{"x": x})
				if err != nil {
					errs <- err
					return
				}
				if c := compareTensors("y", out, want["y"], e.r.policy.For(op, graph.Float32, e.r.h.Profile)); c.problem != "" {
					errs <- fmt.Errorf("worker %d call %d: %s", wk, it, c.problem)
					return
				}
			}
		}(wk)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return failf("%v", err)
	}
	if !bytes.Equal(rawCopy(w), wSnap) {
		return failf("the shared constant changed (%d of %d bytes)", diffCount(rawCopy(w), wSnap), len(wSnap))
	}
	if digest(sg) != before {
		return failf("the shared subgraph changed")
	}
	return passf("%s with a shared constant: 2 executables × %d goroutines × %d calls, all correct; the constant unchanged", op, workers, iters)
}

func contractPrecision(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	const n = 256
	sg := oneNode(op, binary, vi("x", graph.Float32, n))
	x := precisionProbe(n)
	want, err := reference(ctx, sg, probeFeeds(binary, x))
	if err != nil {
		return failf("%v", err)
	}
	run := func(c *hal.Compiled, b Bound, what string) string {
		out := &graph.Tensor{}
		if err := c.Execute(ctx, probeInputs(binary, x), []*graph.Tensor{out}); err != nil {
			return fmt.Sprintf("%s: Execute: %v", what, err)
		}
		if cmp := compareTensors("y", out, want["y"], b); cmp.problem != "" {
			return fmt.Sprintf("%s: %s", what, cmp.problem)
		}
		if !c.CanEnqueue() {
			return ""
		}
		m := &dmEnv{contractEnv: e}
		devs, err := e.dev.Devices(ctx)
		if err != nil {
			return fmt.Sprintf("Devices: %v", err)
		}
		m.devs = devs
		in, err := m.put(ctx, 0, x)
		if err != nil {
			return fmt.Sprintf("%s: %v", what, err)
		}
		defer m.freeAll(in)
		outs := []hal.Buffer{nil}
		f, err := c.Enqueue(ctx, []hal.Buffer{in, in}[:len(probeInputs(binary, x))], outs, nil, nil)
		if err != nil {
			return fmt.Sprintf("%s: Enqueue: %v", what, err)
		}
		got, err := m.get(ctx, outs[0], f)
		m.freeAll(outs[0])
		if err != nil {
			return fmt.Sprintf("%s: %v", what, err)
		}
		if cmp := compareTensors("y", got, want["y"], b); cmp.problem != "" {
			return fmt.Sprintf("%s, enqueued: %s", what, cmp.problem)
		}
		return ""
	}
	c, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile with default options: %v", op, err)
	}
	p := c.Precision()
	msg := run(c, e.r.policy.For(op, graph.Float32, e.r.h.Profile), "default options")
	c.Release()
	if p != hal.PrecisionFloat32 {
		return failf("with default options the executable reports %s, not float32 (the caller did not opt in)", p)
	}
	if msg != "" {
		return failf("%s (the executable reports float32: a reduced precision used silently?)", msg)
	}
	notes := []string{"default: float32"}
	devs, err := e.dev.Devices(ctx)
	if err != nil {
		return failf("Devices: %v", err)
	}
	declared := map[hal.Precision]bool{}
	for _, d := range devs {
		for _, p := range d.Precisions {
			declared[p] = true
		}
	}
	for _, asked := range []hal.Precision{hal.PrecisionFloat16, hal.PrecisionBFloat16} {
		if !declared[asked] {
			continue
		}
		c, err := e.dev.Compile(ctx, sg, &hal.CompileOptions{Precision: asked})
		if err != nil {
			return failf("the device declares %s, but Compile asking for it: %v", asked, err)
		}
		got := c.Precision()
		dt := graph.Float16
		if asked == hal.PrecisionBFloat16 {
			dt = graph.BFloat16
		}
		b := e.r.policy.For(op, graph.Float32, e.r.h.Profile)
		if got == asked {
			b = e.r.policy.For(op, dt, e.r.h.Profile)
		}
		msg := run(c, b, fmt.Sprintf("asked for %s, reports %s", asked, got))
		c.Release()
		if got != asked && got != hal.PrecisionFloat32 {
			return failf("asked for %s, the executable reports %s", asked, got)
		}
		if msg != "" {
			return failf("%s", msg)
		}
		notes = append(notes, fmt.Sprintf("asked %s: reports %s", asked, got))
	}
	return passf("%s: %s", op, strings.Join(notes, "; "))
}

// reasonOf is the text a backend gave with an error (the messages of the
// *hal.Error chain).
func reasonOf(err error) string {
	var parts []string
	for err != nil {
		var he *hal.Error
		if !errors.As(err, &he) {
			parts = append(parts, err.Error())
			break
		}
		if he.Msg != "" {
			parts = append(parts, he.Msg)
		}
		err = he.Err
	}
	return strings.TrimSpace(strings.Join(parts, ": "))
}
