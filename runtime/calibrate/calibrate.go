// Package calibrate measures this machine's kernel families on each
// backend and fits the rates a cost model prices them with (an
// opcost.Profile), for `switchyard calibrate`.
//
// A family (opcost.Family: dense, 1×1 and depthwise convolution, matrix
// products, element-wise ops, transposes, pools…) is measured at a few
// sizes that span what mobile vision and language models hold. Each size
// is a small model, a chain of one node of the family and a chain of
// Chain nodes, placed whole on the backend (node-count placement, the cost
// model out of the way) and run at one thread; a node's marginal time is
// the difference of the two chains over Chain-1 (the call's own overhead
// cancels out). Times are the least process CPU time of repeated calls, so
// other processes on a shared machine add little. The rate fitted per
// family is Fixed + PerFLOP·FLOPs (+ PerByte·bytes where that fits
// better), least squares on relative error over the sizes.
//
// Contracts: Run never panics; a case a backend declines (placed
// elsewhere, or failing to compile) is skipped and reported, not fitted.
package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"sort"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/runtime"
)

// Chain is the length of the long chain of a case.
const Chain = 5

// Options steer a calibration.
type Options struct {
	// Runs is the number of timed calls per chain (the least counts);
	// default 15.
	Runs int
	// Passes is how many times every case is measured, one pass over
	// all of them after the other (the least time counts); default 2.
	Passes int
	// Budget bounds the time spent on one chain's calls; default 2 s.
	Budget time.Duration
	// Families, when set, limits the families measured.
	Families map[string]bool
	// Progress, when set, receives a line per measured case.
	Progress func(string)
	// Networks adds the model cases (ModelCases, whole networks) and the
	// in-model term fitted to them (FitInModel). Off by default: fitted
	// at load 17–20 on the development VM (all a session could give it),
	// the term followed those networks to 4–7% but not the zoo's
	// models, pricing blazeface_front_128 and face_landmark on native
	// 1.5–2× their time (placement then chose XNNPACK, 1.2–1.6× slower);
	// a quiet machine's measurement has not been tried.
	Networks bool
}

// Sample is one measured case.
type Sample struct {
	Backend string
	Family  string
	Shape   []int
	Work    opcost.Work
	// Node is the marginal time of one node; Call the time of the
	// one-node chain's whole call.
	Node, Call time.Duration
	// Estimate is the backend's estimate of one node's marginal time with
	// the profile in use when measured (0 when it gives none).
	Estimate time.Duration
	// Skipped says why the case was not measured ("" when it was).
	Skipped string
}

// Case is one family at one size: Build returns a model whose graph is a
// chain of n nodes of the family from input "x".
type Case struct {
	Family string
	Shape  []int // the input's
	// Name is the model node the case measures (NodeCases); "" for the
	// synthetic cases
	Name  string
	Build func(n int) *graph.Model
}

// Cases are the families and sizes measured.
func Cases() []Case {
	var cs []Case
	add := func(fam string, shapes [][]int, build func(shape []int, n int) *graph.Model) {
		for _, s := range shapes {
			s := s
			cs = append(cs, Case{Family: fam, Shape: s, Build: func(n int) *graph.Model { return build(s, n) }})
		}
	}
	// convolutions that keep the shape (C→C, stride 1, same padding)
	// chain; the others (a stride, C→C′) are fans of copies over one
	// input. Sizes from a network's stem (few channels, large image) to
	// its head (many channels, small image), 3×3 and 5×5 windows: a
	// convolution's time follows its arithmetic, its outputs and its input
	// planes (opcost.Rate), which the fit separates only when the cases
	// vary them apart
	add("conv", [][]int{{1, 8, 8, 8}, {1, 8, 112, 112}, {1, 24, 56, 56}, {1, 64, 28, 28}, {1, 128, 14, 14}}, func(s []int, n int) *graph.Model {
		return convChain(s, 3, 1, n)
	})
	for _, c := range []struct {
		s               []int
		cout, k, stride int
	}{{[]int{1, 3, 192, 192}, 24, 5, 2}, {[]int{1, 3, 128, 128}, 24, 5, 2}, {[]int{1, 3, 224, 224}, 16, 3, 2}, {[]int{1, 16, 64, 64}, 32, 3, 2}, {[]int{1, 32, 28, 28}, 64, 3, 1}} {
		cs = append(cs, Case{Family: "conv", Shape: c.s, Build: func(n int) *graph.Model { return convFan(c.s, c.cout, c.k, c.stride, 1, n) }})
	}
	add("conv1x1", [][]int{{1, 8, 8, 8}, {1, 16, 112, 112}, {1, 32, 56, 56}, {1, 96, 28, 28}, {1, 256, 7, 7}, {1, 128, 24, 24}, {1, 256, 12, 12},
		{1, 24, 64, 64}, {1, 32, 32, 32}, {1, 64, 16, 16}, {1, 96, 8, 8}, {1, 512, 7, 7}, {1, 384, 14, 14}, {1, 128, 12, 12}}, func(s []int, n int) *graph.Model {
		return convChain(s, 1, 1, n)
	})
	for _, c := range []struct {
		s    []int
		cout int
	}{{[]int{1, 16, 56, 56}, 96}, {[]int{1, 144, 28, 28}, 24}, {[]int{1, 256, 12, 12}, 6}, {[]int{1, 48, 64, 64}, 192}, {[]int{1, 320, 7, 7}, 1280},
		// few rows over many weights (MobileNet-style heads at 7×7 and
		// 14×14: their weight stream is what they cost) and a wide
		// image with few channels
		{[]int{1, 1152, 7, 7}, 192}, {[]int{1, 192, 7, 7}, 1152}, {[]int{1, 672, 14, 14}, 112}, {[]int{1, 16, 112, 112}, 64},
		// more of them, projections and expansions (native prices images
		// of at most 14×14 as a family of their own, conv1x1/small)
		{[]int{1, 960, 7, 7}, 160}, {[]int{1, 160, 7, 7}, 960}, {[]int{1, 480, 14, 14}, 80}, {[]int{1, 80, 14, 14}, 480},
		{[]int{1, 576, 10, 10}, 96}, {[]int{1, 256, 4, 4}, 1024}} {
		cs = append(cs, Case{Family: "conv1x1", Shape: c.s, Build: func(n int) *graph.Model { return convFan(c.s, c.cout, 1, 1, 1, n) }})
	}
	for _, k := range []int{3, 5} {
		add("dwconv", [][]int{{1, 8, 8, 8}, {1, 16, 112, 112}, {1, 32, 96, 96}, {1, 24, 64, 64}, {1, 8, 160, 160}, {1, 96, 56, 56}, {1, 128, 24, 24}, {1, 192, 28, 28}, {1, 256, 12, 12}, {1, 512, 7, 7},
			{1, 32, 32, 32}, {1, 64, 16, 16}, {1, 96, 8, 8}}, func(s []int, n int) *graph.Model {
			return convChain(s, k, s[1], n)
		})
		add("dwconv/s2", [][]int{{1, 16, 112, 112}, {1, 32, 96, 96}, {1, 64, 48, 48}, {1, 96, 56, 56}, {1, 128, 24, 24}, {1, 240, 28, 28}}, func(s []int, n int) *graph.Model {
			return convFan(s, s[1], k, 2, s[1], n)
		})
	}
	// atrous depthwise (native prices the row kernels at dilation 2 and 4
	// as a family of their own: DeepLab-v3's 192-960-channel 33×33 blocks
	// ran 2-2.5× the undilated rate)
	for _, d := range []int{2, 4} {
		add("dwconv", [][]int{{1, 64, 33, 33}, {1, 192, 33, 33}, {1, 480, 33, 33}, {1, 960, 33, 33}, {1, 96, 65, 65}, {1, 32, 129, 129}}, func(s []int, n int) *graph.Model {
			return dwDilatedChain(s, 3, d, n)
		})
	}
	add("gemm", [][]int{{1, 16}, {1, 256}, {16, 512}, {128, 128}, {64, 768}}, func(s []int, n int) *graph.Model {
		return matmulChain(s, n)
	})
	elem := [][]int{{1, 4, 8, 8}, {1, 16, 32, 32}, {1, 32, 64, 64}, {1, 32, 112, 112}}
	for _, op := range []string{"Relu", "Sigmoid", "Tanh", "Clip"} {
		add(op, elem, func(s []int, n int) *graph.Model { return unaryChain(op, s, n) })
	}
	for _, op := range []string{"Add", "Mul"} {
		add(op, elem, func(s []int, n int) *graph.Model { return binaryChain(op, s, n) })
	}
	add("Transpose", elem, func(s []int, n int) *graph.Model { return transposeChain(s, n) })
	add("MaxPool", [][]int{{1, 4, 8, 8}, {1, 16, 56, 56}, {1, 64, 28, 28}, {1, 32, 112, 112}}, func(s []int, n int) *graph.Model {
		return poolChain("MaxPool", s, n)
	})
	for _, mode := range []string{"linear", "nearest"} {
		add("Resize/"+mode, [][]int{{1, 4, 8, 8}, {1, 16, 32, 32}, {1, 21, 65, 65}, {1, 64, 52, 52}}, func(s []int, n int) *graph.Model {
			return resizeFan(mode, s, n)
		})
	}
	add("Softmax", [][]int{{1, 4, 16}, {1, 64, 64}, {1, 256, 256}, {1, 8, 512, 128}}, func(s []int, n int) *graph.Model {
		return unaryChain("Softmax", s, n)
	})
	return cs
}

// cases are the synthetic cases of the families fams (all when nil).
func cases(fams map[string]bool) []Case {
	var out []Case
	for _, c := range Cases() {
		if fams == nil || fams[c.Family] {
			out = append(out, c)
		}
	}
	return out
}

// Run measures every case on every device (name → device; "cpu" may be
// the fallback's own, measured on the runtime's reference kernels) and
// returns the samples and the fitted profile.
func Run(ctx context.Context, devs map[string]*hal.Device, order []string, opts Options) ([]Sample, *opcost.Profile, error) {
	samples, _, p, err := RunWithModels(ctx, devs, order, opts)
	return samples, p, err
}

// RunWithModels is Run, then, with opts.Networks, the model cases
// (ModelCases: whole networks) measured and each backend's in-model term
// fitted into the profile (FitInModel).
func RunWithModels(ctx context.Context, devs map[string]*hal.Device, order []string, opts Options) ([]Sample, []ModelSample, *opcost.Profile, error) {
	if opts.Runs <= 0 {
		opts.Runs = 15
	}
	if opts.Budget <= 0 {
		opts.Budget = 2 * time.Second
	}
	samples, err := RunCases(ctx, devs, order, cases(opts.Families), opts)
	if err != nil {
		return samples, nil, nil, err
	}
	p := Fit(samples)
	if !opts.Networks {
		return samples, nil, p, nil
	}
	mcs := ModelCases()
	ms, err := RunModels(ctx, devs, order, mcs, opts)
	if err != nil {
		return samples, ms, p, err
	}
	FitInModel(ctx, devs, mcs, ms, p)
	return samples, ms, p, nil
}

// measureCase times the two chains of a case on one backend, in
// alternation (a burst of load then slows both, not one).
func measureCase(ctx context.Context, backend string, dev *hal.Device, c Case, opts Options) Sample {
	s := Sample{Backend: backend, Family: c.Family, Shape: c.Shape}
	var est [2]hal.Cost
	var ms [2]*loaded
	for i, n := range []int{1, Chain} {
		ir := c.Build(n)
		if i == 0 {
			// the backend's own kernel family for the node (a backend may
			// run one family's shapes through several kernels)
			types, _ := runtime.InferTypes(ir)
			last := ir.Graph.Nodes[len(ir.Graph.Nodes)-1]
			s.Work = opcost.Of(last, typeMap(types))
			s.Family = opcost.BackendFamily(backend, last, typeMap(types))
		}
		m, why := load(ctx, backend, dev, ir)
		if why != "" {
			s.Skipped = why
			return s
		}
		defer m.m.Close()
		ms[i] = m
		est[i] = estimate(ctx, dev, ir)
	}
	if est[1].Boundary > est[0].Boundary {
		// every copy of a fan crosses the backend's boundary (XNNPACK
		// copies and transposes each output out of its buffers): the
		// marginal time would be the boundary's as much as the node's
		s.Skipped = "each copy crosses the backend's boundary"
		return s
	}
	if est[0].Latency > 0 && est[1].Latency > 0 {
		s.Estimate = (est[1].Latency - est[0].Latency) / (Chain - 1)
	}
	start := time.Now()
	for r := 0; r < opts.Runs; r++ {
		for _, m := range ms {
			if err := m.run(ctx); err != nil {
				s.Skipped = "run: " + err.Error()
				return s
			}
		}
		if r >= 3 && time.Since(start) > opts.Budget {
			break
		}
	}
	s.Call = ms[0].best
	s.Node = (ms[1].best - ms[0].best) / (Chain - 1)
	if s.Node <= 0 {
		s.Skipped = fmt.Sprintf("no measurable time (%v for 1 node, %v for %d)", ms[0].best, ms[1].best, Chain)
	}
	return s
}

// loaded is a case's model ready to time.
type loaded struct {
	m    *runtime.Model
	in   map[string]*graph.Tensor
	best time.Duration
}

// run times one call (after a collection, so the call pays for no
// earlier garbage).
func (l *loaded) run(ctx context.Context) error {
	goruntime.GC()
	t0 := cpuTime()
	if _, err := l.m.Run(ctx, l.in); err != nil {
		return err
	}
	if d := cpuTime() - t0; d < l.best {
		l.best = d
	}
	return nil
}

type typeMap map[string]graph.ValueType

func (t typeMap) TypeOf(name string) (graph.ValueType, bool) {
	v, ok := t[name]
	return v, ok
}

// estimate is dev's estimate of the whole graph of ir (zero when none).
func estimate(ctx context.Context, dev *hal.Device, ir *graph.Model) hal.Cost {
	if dev == nil {
		return hal.Cost{}
	}
	types, _ := runtime.InferTypes(ir)
	g := *ir.Graph
	g.ValueInfo = nil
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if t, ok := types[o]; ok {
				g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: t})
			}
		}
	}
	c, err := dev.EstimateCost(ctx, &hal.Subgraph{Graph: &g, Opsets: ir.Opsets})
	if err != nil {
		return hal.Cost{}
	}
	return c
}

// load prepares ir with every node on backend and runs it once; why is
// set when it could not.
func load(ctx context.Context, backend string, dev *hal.Device, ir *graph.Model) (*loaded, string) {
	ro := &runtime.Options{Policy: partitioner.Policy{IgnoreCosts: true, MinPartitionSize: 1}, Compile: hal.CompileOptions{Threads: 1}, MemoryBudget: -1}
	if backend != "cpu" {
		ro.Backends = []*hal.Device{dev}
	}
	m, err := runtime.Prepare(ctx, ir, ro)
	if err != nil {
		return nil, "load: " + err.Error()
	}
	for _, p := range m.Plan().Partitions {
		if p.Backend != backend {
			m.Close()
			return nil, fmt.Sprintf("%d node(s) placed on %s", len(p.Nodes), p.Backend)
		}
	}
	l := &loaded{m: m, in: map[string]*graph.Tensor{}, best: time.Duration(math.MaxInt64)}
	for _, in := range ir.Graph.Inputs {
		l.in[in.Name] = randomTensor(in.Type)
	}
	if _, err := m.Run(ctx, l.in); err != nil {
		m.Close()
		return nil, "run: " + err.Error()
	}
	return l, ""
}

func randomTensor(t graph.ValueType) *graph.Tensor {
	dims, _ := t.Shape.Ints()
	n := 1
	for _, d := range dims {
		n *= d
	}
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return graph.MustFromSlice(dims, v)
}

// Fit fits one rate per backend and family to the measured samples.
func Fit(samples []Sample) *opcost.Profile {
	p := &opcost.Profile{Version: opcost.ProfileVersion, Machine: opcost.Machine(), Threads: 1, Created: time.Now().UTC().Format(time.RFC3339),
		Rates: map[string]map[string]opcost.Rate{}}
	groups := map[[2]string][]Sample{}
	var keys [][2]string
	for _, s := range samples {
		if s.Skipped != "" {
			continue
		}
		k := [2]string{s.Backend, s.Family}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], s)
	}
	for _, k := range keys {
		r, ok := fitRate(groups[k])
		if !ok {
			continue
		}
		if p.Rates[k[0]] == nil {
			p.Rates[k[0]] = map[string]opcost.Rate{}
		}
		p.Rates[k[0]][k[1]] = r
	}
	return p
}

// The columns a rate is fitted on (feature).
const (
	colFixed = iota
	colFLOPs
	colBytes
	colElems
	colInElems
	colParams
)

// fitRate tries the column sets of the family's kind — for a
// convolution Fixed+PerFLOP, then with PerElem, PerParamByte and
// PerInElem;
// for other computing families Fixed+PerFLOP, then with PerByte; for a
// family that moves data Fixed+PerByte — least squares on relative
// error, and keeps the non-negative fit with the least typical (median)
// error, a further term only where it cuts that by a fifth.
func fitRate(ss []Sample) (opcost.Rate, bool) {
	if len(ss) < 2 {
		return opcost.Rate{}, false
	}
	best, found := opcost.Rate{}, false
	sets := [][]int{{colFixed, colFLOPs}, {colFixed, colFLOPs, colBytes}, {colFLOPs}}
	switch {
	case ss[0].Work.Class == opcost.Conv || ss[0].Work.Class == opcost.DepthwiseConv:
		sets = [][]int{{colFixed, colFLOPs}, {colFixed, colFLOPs, colElems}, {colFixed, colFLOPs, colParams}, {colFixed, colFLOPs, colElems, colParams},
			{colFixed, colFLOPs, colElems, colInElems}, {colFixed, colFLOPs, colElems, colInElems, colParams}, {colFLOPs, colElems}, {colFLOPs}}
	case ss[0].Work.FLOPs == 0:
		sets = [][]int{{colFixed, colBytes}, {colBytes}}
	}
	for _, cols := range sets {
		if len(cols) > len(ss) {
			continue
		}
		r, ok := robustSolve(ss, cols)
		if !ok {
			continue
		}
		r.Samples, r.MaxError, r.TypicalError = len(ss), maxRelError(r, ss), medianRelError(r, ss)
		if !found || (len(cols) > 2 && r.TypicalError < best.TypicalError*0.8) {
			best, found = r, true
		}
	}
	return best, found
}

func feature(s Sample, col int) float64 {
	switch col {
	case colFixed:
		return 1
	case colFLOPs:
		return s.Work.FLOPs
	case colBytes:
		return float64(s.Work.BytesIn + s.Work.BytesOut)
	case colElems:
		return float64(s.Work.Elems)
	case colInElems:
		return float64(s.Work.InElems)
	default:
		return float64(s.Work.ParamBytes)
	}
}

// robustSolve fits the columns to least absolute relative error
// (iteratively reweighted least squares): one case spoiled by a burst of
// load pulls the fit by its share, not by its square.
func robustSolve(ss []Sample, cols []int) (opcost.Rate, bool) {
	r, ok := solve(ss, cols, nil)
	if !ok {
		return r, false
	}
	wt := make([]float64, len(ss))
	for it := 0; it < 8; it++ {
		for i, s := range ss {
			y := float64(s.Node)
			wt[i] = 1 / max(math.Abs(r.Time(s.Work)-y)/y, 0.01)
		}
		next, ok := solve(ss, cols, wt)
		if !ok {
			break
		}
		r = next
	}
	return r, true
}

// solve is weighted least squares on relative error (weights 1/time²,
// times wt where given) on the given columns; false when singular or a
// coefficient is negative.
func solve(ss []Sample, cols []int, wt []float64) (opcost.Rate, bool) {
	k := len(cols)
	a := make([][]float64, k)
	for i := range a {
		a[i] = make([]float64, k+1)
	}
	for si, s := range ss {
		y := float64(s.Node)
		w := 1 / (y * y)
		if wt != nil {
			w *= wt[si]
		}
		for i, ci := range cols {
			fi := feature(s, ci)
			for j, cj := range cols {
				a[i][j] += w * fi * feature(s, cj)
			}
			a[i][k] += w * fi * y
		}
	}
	x, ok := gauss(a)
	if !ok {
		return opcost.Rate{}, false
	}
	var r opcost.Rate
	for i, c := range cols {
		if x[i] < 0 || math.IsNaN(x[i]) || math.IsInf(x[i], 0) {
			return opcost.Rate{}, false
		}
		switch c {
		case colFixed:
			r.Fixed = x[i]
		case colFLOPs:
			r.PerFLOP = x[i]
		case colBytes:
			r.PerByte = x[i]
		case colElems:
			r.PerElem = x[i]
		case colInElems:
			r.PerInElem = x[i]
		default:
			r.PerParamByte = x[i]
		}
	}
	return r, true
}

// gauss solves the augmented system a (k rows, k+1 columns) with partial
// pivoting, scaling each column first (FLOPs and 1 differ by 10^9).
func gauss(a [][]float64) ([]float64, bool) {
	k := len(a)
	scale := make([]float64, k)
	for j := 0; j < k; j++ {
		m := 0.0
		for i := 0; i < k; i++ {
			m = math.Max(m, math.Abs(a[i][j]))
		}
		if m == 0 {
			return nil, false
		}
		scale[j] = m
		for i := 0; i < k; i++ {
			a[i][j] /= m
		}
	}
	for c := 0; c < k; c++ {
		p := c
		for i := c + 1; i < k; i++ {
			if math.Abs(a[i][c]) > math.Abs(a[p][c]) {
				p = i
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for i := 0; i < k; i++ {
			if i == c {
				continue
			}
			f := a[i][c] / a[c][c]
			for j := c; j <= k; j++ {
				a[i][j] -= f * a[c][j]
			}
		}
	}
	x := make([]float64, k)
	for i := 0; i < k; i++ {
		x[i] = a[i][k] / a[i][i] / scale[i]
	}
	return x, true
}

func medianRelError(r opcost.Rate, ss []Sample) float64 {
	es := make([]float64, len(ss))
	for i, s := range ss {
		y := float64(s.Node)
		es[i] = math.Abs(r.Time(s.Work)-y) / y
	}
	sort.Float64s(es)
	if n := len(es); n%2 == 0 {
		return (es[n/2-1] + es[n/2]) / 2
	}
	return es[len(es)/2]
}

func maxRelError(r opcost.Rate, ss []Sample) float64 {
	m := 0.0
	for _, s := range ss {
		y := float64(s.Node)
		m = math.Max(m, math.Abs(r.Time(s.Work)-y)/y)
	}
	return m
}
