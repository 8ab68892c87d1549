package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// contractEnv is what a contract case gets: the device under test (as the
// runtime reaches it), its capabilities, and the runner (to open more).
type contractEnv struct {
	r    *runner
	dev  *hal.Device
	caps hal.Capabilities
}

type outcome struct {
	status Status
	msg    string
}

func passf(format string, args ...any) outcome { return outcome{Pass, fmt.Sprintf(format, args...)} }
func failf(format string, args ...any) outcome { return outcome{Fail, fmt.Sprintf(format, args...)} }
func skipf(format string, args ...any) outcome { return outcome{Skipped, fmt.Sprintf(format, args...)} }

// safely runs f, turning a panic into an error (raw backend calls bypass
// the portable layer's recovery on purpose).
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("PANIC: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

func isPanic(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "PANIC: ") }

func contractCases() []Case {
	mk := func(id, doc string, f func(ctx context.Context, e *contractEnv) outcome) Case {
		return Case{ID: "contract/" + id, Source: SourceContract, Doc: doc, contract: f}
	}
	cases := []Case{
		mk("info", "Info is complete and its HAL range includes this host's version; Capabilities succeeds and names real ops", contractInfo),
		mk("supports-verdicts", "Supports returns one verdict per node, declines an unknown op, and gives every decline a reason", contractVerdicts),
		mk("capabilities-agree", "Capabilities agrees with Supports: every op claimed in the sweep is declared, and no op declared for float32 without conditions is declined in its float32 case", contractCapabilities),
		mk("supports-honest", "every single-op subgraph the backend claims compiles and executes (one per op of the generated cases)", contractHonest),
		mk("invalid-subgraph", "a subgraph reading an undefined value is refused with InvalidArgument, through the portable layer and by the raw backend, without a panic", contractInvalid),
		mk("wrong-input-shape", "Execute with inputs of the wrong shape returns an error (InvalidArgument through the portable layer), never a crash", contractWrongShape),
		mk("concurrent-execute", "one executable run from 8 goroutines at once gives every caller its own correct result", contractConcurrent),
		mk("close-twice", "Backend.Close and Executable.Release are safe to call twice; a closed device refuses work with FailedPrecondition", contractCloseTwice),
		mk("cancelled", "Execute with a cancelled context returns Cancelled", contractCancelled),
		mk("deadline", "Execute with an expired deadline returns DeadlineExceeded, and a long execution stops soon after its deadline", contractDeadline),
		mk("input-over-limit", "an input larger than the backend's declared MaxTensorBytes is refused with an error, not run and not a crash", contractOverLimit),
	}
	cases = append(cases, integrityCases()...)
	return append(cases, devmemCases()...)
}

func contractInfo(ctx context.Context, e *contractEnv) outcome {
	info := e.r.dev.Info()
	var probs []string
	if strings.TrimSpace(info.Name) == "" {
		probs = append(probs, "empty name")
	}
	if info.Version == "" {
		probs = append(probs, "empty version")
	}
	if info.Vendor == "" {
		probs = append(probs, "empty vendor")
	}
	if _, err := hal.Negotiate(hal.Current, info.HAL); err != nil {
		probs = append(probs, err.Error())
	}
	switch info.Device {
	case hal.DeviceCPU, hal.DeviceGPU, hal.DeviceNPU, hal.DeviceDSP, hal.DeviceSimulated:
	default:
		probs = append(probs, fmt.Sprintf("unknown device kind %q", info.Device))
	}
	for _, op := range e.caps.Ops {
		if op.OpType == "" {
			probs = append(probs, "a capability with an empty op type")
			break
		}
	}
	if e.caps.MaxTensorBytes < 0 {
		probs = append(probs, "negative MaxTensorBytes")
	}
	if len(probs) > 0 {
		return failf("%s", strings.Join(probs, "; "))
	}
	return passf("%s %s by %s, HAL %s, %d ops declared", info.Name, info.Version, info.Vendor, info.HAL, len(e.caps.Ops))
}

func vi(name string, dt graph.DType, dims ...int) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(dims...)}}
}

func dynVI(name string, dt graph.DType) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.Shape{{Param: "n"}}}}
}

var opsets = []graph.Opset{{Domain: "", Version: 18}}

// unaryProbe and binaryProbe are ops tried, in order, to find one the
// backend claims for float32 (contract cases need some op to compile).
var unaryProbe = []string{"Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Exp", "Sqrt", "Identity"}
var binaryProbe = []string{"Add", "Mul", "Sub", "Max", "Min", "Div"}

func oneNode(op string, binary bool, in graph.ValueInfo) *hal.Subgraph {
	n := &graph.Node{Name: "n0", OpType: op, Inputs: []string{"x"}, Outputs: []string{"y"}}
	ins := []graph.ValueInfo{in}
	if binary {
		n.Inputs = []string{"x", "b"}
		b := in
		b.Name = "b"
		ins = append(ins, b)
	}
	out := in
	out.Name = "y"
	return &hal.Subgraph{Graph: &graph.Graph{Name: "probe_" + op, Inputs: ins, Outputs: []graph.ValueInfo{out}, Initializers: map[string]*graph.Tensor{}, Nodes: []*graph.Node{n}}, Opsets: opsets}
}

// claimed finds an op of the list the backend claims; binary says which list.
func claimed(ctx context.Context, d *hal.Device, list []string, binary bool) (string, error) {
	for _, op := range list {
		vs, err := d.Supports(ctx, oneNode(op, binary, vi("x", graph.Float32, 2, 3)))
		if err != nil {
			return "", err
		}
		if vs[0].Supported {
			return op, nil
		}
	}
	return "", nil
}

func probe(ctx context.Context, e *contractEnv) (op string, binary bool, o *outcome) {
	op, err := claimed(ctx, e.dev, unaryProbe, false)
	if err != nil {
		f := failf("Supports: %v", err)
		return "", false, &f
	}
	if op != "" {
		return op, false, nil
	}
	op, err = claimed(ctx, e.dev, binaryProbe, true)
	if err != nil {
		f := failf("Supports: %v", err)
		return "", false, &f
	}
	if op == "" {
		s := skipf("the backend claims none of %v or %v for float32; nothing to compile", unaryProbe, binaryProbe)
		return "", false, &s
	}
	return op, true, nil
}

func contractVerdicts(ctx context.Context, e *contractEnv) outcome {
	g := &graph.Graph{Name: "verdicts", Inputs: []graph.ValueInfo{vi("x", graph.Float32, 2, 3)}, Outputs: []graph.ValueInfo{vi("z", graph.Float32, 2, 3)}, Initializers: map[string]*graph.Tensor{},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y0"}},
			{Name: "b", OpType: "NoSuchOp", Domain: "switchyard.conformance", Inputs: []string{"y0"}, Outputs: []string{"y1"}},
			{Name: "c", OpType: "Add", Inputs: []string{"y1", "x"}, Outputs: []string{"z"}},
		}}
	sg := &hal.Subgraph{Graph: g, Opsets: append(append([]graph.Opset{}, opsets...), graph.Opset{Domain: "switchyard.conformance", Version: 1})}
	var vs []hal.Verdict
	err := safely(func() (err error) { vs, err = e.r.dev.Backend().Supports(ctx, sg); return })
	if err != nil {
		return failf("raw Supports: %v", err)
	}
	if len(vs) != 3 {
		return failf("raw Supports returned %d verdicts for 3 nodes", len(vs))
	}
	if vs[1].Supported {
		return failf("claims the unknown op switchyard.conformance:NoSuchOp")
	}
	for i, v := range vs {
		if !v.Supported && strings.TrimSpace(v.Reason) == "" {
			return failf("node %d (%s) declined without a reason", i, g.Nodes[i].OpType)
		}
	}
	return passf("verdicts %v; unknown op declined: %q", []bool{vs[0].Supported, vs[1].Supported, vs[2].Supported}, vs[1].Reason)
}

func contractInvalid(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, vi("x", graph.Float32, 2, 3))
	sg.Graph.Nodes[0].Inputs[0] = "undefined_value"
	_, err := e.dev.Compile(ctx, sg, nil)
	if !errors.Is(err, hal.ErrInvalidArgument) {
		return failf("portable Compile of an invalid %s subgraph: got %v, want InvalidArgument", op, err)
	}
	// the raw backend (what a plugin server receives) must not crash: it
	// refuses with InvalidArgument, or accepts and then fails to execute
	var exe hal.Executable
	rawErr := safely(func() (err error) { exe, err = e.r.dev.Backend().Compile(ctx, sg, hal.CompileOptions{}); return })
	switch {
	case isPanic(rawErr):
		return failf("raw Compile panicked on an invalid subgraph: %v", rawErr)
	case rawErr != nil && hal.CodeOf(rawErr) != hal.CodeInvalidArgument:
		return failf("raw Compile of an invalid subgraph: code %v (%v), want InvalidArgument", hal.CodeOf(rawErr), rawErr)
	case rawErr != nil:
		return passf("%s reading an undefined value: portable %v; raw %v", op, hal.CodeOf(err), rawErr)
	}
	defer exe.Release()
	in := graph.MustFromSlice([]int{2, 3}, make([]float32, 6))
	ins := []*graph.Tensor{in}
	if binary {
		ins = append(ins, in)
	}
	xerr := safely(func() error { return exe.Execute(ctx, ins, []*graph.Tensor{{}}) })
	switch {
	case isPanic(xerr):
		return failf("raw Compile accepted an invalid subgraph and Execute panicked: %v", xerr)
	case xerr == nil:
		return failf("raw Compile accepted a %s node reading an undefined value and Execute succeeded", op)
	}
	return passf("%s reading an undefined value: portable Compile %v; the raw backend relies on the portable layer's validation (accepted, then Execute failed: %v)", op, hal.CodeOf(err), xerr)
}

func contractWrongShape(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, vi("x", graph.Float32, 2, 3))
	comp, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile: %v", op, err)
	}
	defer comp.Release()
	bad := graph.MustFromSlice([]int{3, 2}, make([]float32, 6))
	ins := []*graph.Tensor{bad}
	if binary {
		ins = append(ins, bad)
	}
	err = comp.Execute(ctx, ins, []*graph.Tensor{{}})
	if !errors.Is(err, hal.ErrInvalidArgument) {
		return failf("portable Execute with a [3 2] input for a [2 3] subgraph: got %v, want InvalidArgument", err)
	}
	// raw: incompatible or mis-sized inputs must be an error, not a crash
	raw := comp.Executable()
	wrong := [][]*graph.Tensor{{graph.MustFromSlice([]int{4, 5}, make([]float32, 20))}}
	if binary {
		wrong = [][]*graph.Tensor{{graph.MustFromSlice([]int{2, 3}, make([]float32, 6)), graph.MustFromSlice([]int{4, 5}, make([]float32, 20))}}
	}
	wrong = append(wrong, nil) // too few inputs
	for _, in := range wrong {
		err := safely(func() error { return raw.Execute(ctx, in, []*graph.Tensor{{}}) })
		if isPanic(err) {
			return failf("raw Execute with %d wrong input(s) panicked: %v", len(in), err)
		}
		if len(in) == 0 && err == nil {
			return failf("raw Execute with no inputs succeeded")
		}
		if binary && len(in) == 2 && err == nil {
			return failf("raw Execute of %s with incompatible shapes [2 3] and [4 5] succeeded", op)
		}
	}
	return passf("%s: %v", op, err)
}

func contractConcurrent(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, vi("x", graph.Float32, 64, 64))
	comp, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile: %v", op, err)
	}
	defer comp.Release()
	ref, err := refProgram(ctx, sg)
	if err != nil {
		return failf("reference: %v", err)
	}
	defer ref.Close()
	const workers, iters = 8, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for it := 0; it < iters; it++ {
				x := make([]float32, 64*64)
				for i := range x {
					x[i] = float32((i*7+w*131+it*17)%97)/24 - 2
				}
				in := graph.MustFromSlice([]int{64, 64}, x)
				ins := []*graph.Tensor{in}
				feeds := map[string]*graph.Tensor{"x": in}
				if binary {
					ins = append(ins, in)
					feeds["b"] = in
				}
				out := &graph.Tensor{}
				if err := comp.Execute(ctx, ins, []*graph.Tensor{out}); err != nil {
					errs <- fmt.Errorf("worker %d call %d: %w", w, it, err)
					return
				}
				want, err := ref.Run(ctx, feeds)
				if err != nil {
					errs <- err
					return
				}
				if c := compareTensors("y", out, want["y"], DefaultPolicy().For(op, graph.Float32, "")); c.problem != "" {
					errs <- fmt.Errorf("worker %d call %d: %s", w, it, c.problem)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return failf("%v", err)
	}
	return passf("%s: %d goroutines × %d calls, all correct", op, workers, iters)
}

// refProgram loads a subgraph as a model on the reference kernels.
func refProgram(ctx context.Context, sg *hal.Subgraph) (*runtime.Model, error) {
	return runtime.LoadBytes(ctx, onnx.Encode(&graph.Model{IRVersion: 8, Opsets: sg.Opsets, Graph: sg.Graph}), nil)
}

func contractCloseTwice(ctx context.Context, e *contractEnv) outcome {
	d, err := e.r.h.Open(ctx)
	if err != nil {
		return failf("opening a second device: %v", err)
	}
	t, err := underTest(d)
	if err != nil {
		return failf("%v", err)
	}
	op, binary, o := probe(ctx, &contractEnv{r: e.r, dev: t, caps: e.caps})
	if o != nil && o.status == Fail {
		return *o
	}
	if op != "" {
		sg := oneNode(op, binary, vi("x", graph.Float32, 2, 3))
		var exe hal.Executable
		err := safely(func() (err error) { exe, err = d.Backend().Compile(ctx, sg, hal.CompileOptions{}); return })
		if err != nil {
			return failf("raw Compile of claimed %s: %v", op, err)
		}
		for i := 1; i <= 2; i++ {
			if err := safely(exe.Release); err != nil {
				return failf("Executable.Release call %d: %v", i, err)
			}
		}
	}
	b := d.Backend()
	for i := 1; i <= 2; i++ {
		if err := safely(b.Close); err != nil {
			return failf("Backend.Close call %d: %v", i, err)
		}
	}
	_ = d.Close()
	_, err = d.Capabilities(ctx)
	if !errors.Is(err, hal.ErrFailedPrecondition) {
		return failf("a closed device answered Capabilities with %v, want FailedPrecondition", err)
	}
	return passf("Close ×2 and Release ×2 returned nil")
}

func contractCancelled(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, vi("x", graph.Float32, 2, 3))
	comp, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile: %v", op, err)
	}
	defer comp.Release()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	in := graph.MustFromSlice([]int{2, 3}, make([]float32, 6))
	ins := []*graph.Tensor{in}
	if binary {
		ins = append(ins, in)
	}
	err = safely(func() error { return comp.Executable().Execute(cctx, ins, []*graph.Tensor{{}}) })
	if hal.CodeOf(err) != hal.CodeCancelled {
		return failf("raw Execute with a cancelled context: %v (code %v), want Cancelled", err, hal.CodeOf(err))
	}
	return passf("%s: %v", op, err)
}

func contractDeadline(ctx context.Context, e *contractEnv) outcome {
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	in := graph.MustFromSlice([]int{2, 3}, make([]float32, 6))
	sg := oneNode(op, binary, vi("x", graph.Float32, 2, 3))
	comp, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile: %v", op, err)
	}
	defer comp.Release()
	dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	ins := []*graph.Tensor{in}
	if binary {
		ins = append(ins, in)
	}
	err = safely(func() error { return comp.Executable().Execute(dctx, ins, []*graph.Tensor{{}}) })
	if hal.CodeOf(err) != hal.CodeDeadlineExceeded {
		return failf("raw Execute with an expired deadline: %v (code %v), want DeadlineExceeded", err, hal.CodeOf(err))
	}
	// a long chain with a short deadline must stop soon after it
	const chain, n = 300, 1 << 16
	sg = longChain(op, binary, chain, n)
	lc, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return passf("%s: expired deadline → %v (the %d-node chain was not compiled: %v)", op, hal.CodeOf(err), chain, err)
	}
	defer lc.Release()
	big := graph.MustFromSlice([]int{n}, make([]float32, n))
	const budget = 5 * time.Millisecond
	lctx, lcancel := context.WithTimeout(ctx, budget)
	defer lcancel()
	t0 := time.Now()
	err = lc.Execute(lctx, []*graph.Tensor{big}, []*graph.Tensor{{}})
	took := time.Since(t0)
	if err == nil {
		return passf("%s: expired deadline → DeadlineExceeded; the %d-node chain finished in %v, inside its %v deadline", op, chain, took, budget)
	}
	if hal.CodeOf(err) != hal.CodeDeadlineExceeded {
		return failf("a %d-node chain under a %v deadline: %v (code %v), want DeadlineExceeded", chain, budget, err, hal.CodeOf(err))
	}
	if took > budget+3*time.Second {
		return failf("a %d-node chain under a %v deadline returned only after %v", chain, budget, took)
	}
	return passf("%s: expired deadline → DeadlineExceeded; %d-node chain stopped %v after start (deadline %v)", op, chain, took.Round(time.Millisecond), budget)
}

func contractOverLimit(ctx context.Context, e *contractEnv) outcome {
	lim := e.caps.MaxTensorBytes
	if lim <= 0 {
		return skipf("the backend declares no MaxTensorBytes")
	}
	if lim > 256<<20 {
		return skipf("the declared limit (%d bytes) is too large to exceed here", lim)
	}
	op, binary, o := probe(ctx, e)
	if o != nil {
		return *o
	}
	sg := oneNode(op, binary, dynVI("x", graph.Float32))
	comp, err := e.dev.Compile(ctx, sg, nil)
	if err != nil {
		return failf("claimed %s, but Compile: %v", op, err)
	}
	defer comp.Release()
	n := int(lim/4) + 1
	in := graph.MustFromSlice([]int{n}, make([]float32, n))
	ins := []*graph.Tensor{in}
	if binary {
		ins = append(ins, in)
	}
	err = comp.Execute(ctx, ins, []*graph.Tensor{{}})
	if err == nil {
		return failf("an input of %d bytes ran although the declared limit is %d", n*4, lim)
	}
	c := hal.CodeOf(err)
	if c != hal.CodeResourceExhausted && c != hal.CodeInvalidArgument {
		return failf("an input over the limit: %v (code %v), want ResourceExhausted or InvalidArgument", err, c)
	}
	return passf("%d bytes over a %d-byte limit: %v", n*4, lim, c)
}
