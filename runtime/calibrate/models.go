package calibrate

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
)

// Whole networks. A node measured alone (a chain of its family, a fan of
// copies over one input) runs with its input hot in the cache, its
// weights streamed once more than the last call left them, and nothing
// else between it and the next; inside a network each node reads what
// the previous one wrote over a working set of many layers' weights and
// activations, and the time a backend takes there is not the sum of the
// alone times (native's whole-model time on MediaPipe's landmark and pose
// models was 1.25–1.35× the sum of its nodes' estimates, XNNPACK's
// 1.0–1.14×). The model cases are such networks: each is run whole on
// each backend and set beside the backend's estimate of it with the
// family rates just fitted; what is left is fitted per backend as the
// in-model term (opcost.InModelFamily), which the cost models add per
// node.

// ModelCase is a whole network.
type ModelCase struct {
	Name  string
	Build func() *graph.Model
}

// ModelCases are the networks measured: inverted-residual stacks
// (MobileNetV2-style: 1×1 expansion, depthwise, 1×1 projection, residual
// Add; ReLU6 as Clip) at the image sizes and widths of mobile vision
// models, 3×3 and 5×5 depthwise windows.
func ModelCases() []ModelCase {
	var out []ModelCase
	for _, c := range []struct {
		h, w  int
		width float64
		k     int
	}{{224, 224, 1, 3}, {128, 128, 1, 3}, {192, 192, 0.5, 5}, {256, 256, 0.75, 3}, {96, 96, 1, 3}, {240, 320, 0.25, 3}, {160, 160, 0.35, 5}} {
		c := c
		out = append(out, ModelCase{Name: fmt.Sprintf("invres%dx%d_w%g_k%d", c.h, c.w, c.width, c.k), Build: func() *graph.Model {
			return invertedResidualNet(c.h, c.w, c.width, c.k)
		}})
	}
	// dense 3×3 convolutions (ResNet-style basic blocks), as detectors'
	// necks and heads hold
	for _, size := range []int{96, 160} {
		size := size
		out = append(out, ModelCase{Name: fmt.Sprintf("resnet%d", size), Build: func() *graph.Model { return basicBlockNet(size) }})
	}
	return out
}

// netBuilder appends nodes to a graph, naming values in order.
type netBuilder struct {
	g    *graph.Graph
	seed uint64
	n    int
}

func (b *netBuilder) value() string {
	b.n++
	return fmt.Sprintf("v%d", b.n)
}

// conv appends a k×k convolution of x ([1,c,h,w]) to cout channels at
// the stride, same padding, group g, and a ReLU6 when act.
func (b *netBuilder) conv(x string, c, cout, k, stride, group int, act bool) string {
	b.seed++
	w, bias := fmt.Sprintf("w%d", b.seed), fmt.Sprintf("b%d", b.seed)
	// uniform weights of variance 2/fan-in (He): the activations keep
	// their scale through the depth; smaller ones shrink them layer by
	// layer into subnormal floats, which the CPU computes many times
	// slower, and a network's time is then not what it would be
	scale := float32(math.Sqrt(6 / float64(k*k*(c/group))))
	b.g.Initializers[w] = weights(b.seed, scale, cout, c/group, k, k)
	b.g.Initializers[bias] = weights(b.seed+1000, 0.05, cout)
	p := int64(k / 2)
	y := b.value()
	b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: "conv" + y, OpType: "Conv", Inputs: []string{x, w, bias}, Outputs: []string{y},
		Attrs: map[string]*graph.Attribute{
			"kernel_shape": ints("kernel_shape", int64(k), int64(k)), "pads": ints("pads", p, p, p, p),
			"strides": ints("strides", int64(stride), int64(stride)), "group": intAttr("group", int64(group)),
		}})
	if !act {
		return y
	}
	z := b.value()
	b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: "clip" + z, OpType: "Clip", Inputs: []string{y, "zero", "six"}, Outputs: []string{z}})
	return z
}

func (b *netBuilder) add(x, y string) string {
	z := b.value()
	b.g.Nodes = append(b.g.Nodes, &graph.Node{Name: "add" + z, OpType: "Add", Inputs: []string{x, y}, Outputs: []string{z}})
	return z
}

// invertedResidualNet is MobileNetV2's body at width multiplier width
// over a size×size image, depthwise windows k×k.
func invertedResidualNet(hgt, wid int, width float64, k int) *graph.Model {
	ch := func(c int) int { return max(8, int(float64(c)*width+4)/8*8) }
	g := &graph.Graph{Name: "calibrate", Initializers: map[string]*graph.Tensor{
		"zero": graph.Scalar(float32(0)), "six": graph.Scalar(float32(6)),
	}}
	g.Inputs = []graph.ValueInfo{{Name: "x", Type: f32(1, 3, hgt, wid)}}
	b := &netBuilder{g: g}
	c := ch(32)
	x := b.conv("x", 3, c, 3, 2, 1, true)
	h, w := (hgt-1)/2+1, (wid-1)/2+1
	for _, st := range []struct{ t, c, n, s int }{{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}} {
		for i := 0; i < st.n; i++ {
			stride := 1
			if i == 0 {
				stride = st.s
			}
			cout := ch(st.c)
			in := x
			e := x
			if st.t != 1 {
				e = b.conv(x, c, c*st.t, 1, 1, 1, true)
			}
			d := b.conv(e, c*st.t, c*st.t, k, stride, c*st.t, true)
			x = b.conv(d, c*st.t, cout, 1, 1, 1, false)
			if stride == 1 && cout == c {
				x = b.add(x, in)
			}
			if stride == 2 {
				h, w = (h-1)/2+1, (w-1)/2+1
			}
			c = cout
		}
	}
	last := ch(1280)
	b.conv(x, c, last, 1, 1, 1, true) // its output renamed "y" below
	g.Nodes[len(g.Nodes)-1].Outputs[0] = "y"
	g.Outputs = []graph.ValueInfo{{Name: "y", Type: f32(1, last, h, w)}}
	return model(g, 13)
}

// basicBlockNet is a ResNet-style body over a size×size image: a strided
// 3×3 stem, then per stage (32, 64, 128 channels) a strided 3×3, and
// two residual blocks of two 3×3 convolutions with ReLU6.
func basicBlockNet(size int) *graph.Model {
	g := &graph.Graph{Name: "calibrate", Initializers: map[string]*graph.Tensor{
		"zero": graph.Scalar(float32(0)), "six": graph.Scalar(float32(6)),
	}}
	g.Inputs = []graph.ValueInfo{{Name: "x", Type: f32(1, 3, size, size)}}
	b := &netBuilder{g: g}
	c := 16
	x := b.conv("x", 3, c, 3, 2, 1, true)
	h := (size-1)/2 + 1
	for _, cout := range []int{32, 64, 128} {
		x = b.conv(x, c, cout, 3, 2, 1, true)
		h = (h-1)/2 + 1
		c = cout
		for i := 0; i < 2; i++ {
			y := b.conv(x, c, c, 3, 1, 1, true)
			y = b.conv(y, c, c, 3, 1, 1, false)
			x = b.add(y, x)
		}
	}
	g.Nodes[len(g.Nodes)-1].Outputs[0] = "y"
	g.Outputs = []graph.ValueInfo{{Name: "y", Type: f32(1, c, h, h)}}
	return model(g, 13)
}

// ModelSample is one network measured whole on one backend.
type ModelSample struct {
	Backend string `json:"backend"`
	Name    string `json:"name"`
	Nodes   int    `json:"nodes"`
	// Time is the least CPU time of a whole call; Skipped says why there
	// is none.
	Time    time.Duration `json:"time_ns"`
	Skipped string        `json:"skipped,omitempty"`
	// Estimate is the backend's estimate of the call with the fitted
	// family rates, before the in-model term, and InModel with it (set by
	// FitInModel).
	Estimate time.Duration `json:"estimate_ns,omitempty"`
	InModel  time.Duration `json:"in_model_estimate_ns,omitempty"`
}

// RunModels measures every model case whole on every device but the
// fallback's reference kernels ("cpu": 20–30× slower, and never weighed
// against the others for whole networks), pass after pass in alternation,
// each keeping its least time.
func RunModels(ctx context.Context, devs map[string]*hal.Device, order []string, cases []ModelCase, opts Options) ([]ModelSample, error) {
	if opts.Runs <= 0 {
		opts.Runs = 15
	}
	if opts.Budget <= 0 {
		opts.Budget = 2 * time.Second
	}
	if opts.Passes <= 0 {
		opts.Passes = 2
	}
	var out []ModelSample
	var ms []*loaded
	for _, mc := range cases {
		ir := mc.Build()
		for _, name := range order {
			if name == "cpu" {
				continue
			}
			s := ModelSample{Backend: name, Name: mc.Name, Nodes: len(ir.Graph.Nodes)}
			m, why := load(ctx, name, devs[name], ir)
			s.Skipped = why
			out, ms = append(out, s), append(ms, m)
			if m != nil {
				defer m.m.Close()
			}
		}
	}
	for pass := 0; pass < opts.Passes; pass++ {
		start := time.Now()
		for r := 0; r < opts.Runs; r++ {
			// one call of each in turn: a burst of load spreads over all
			for i, m := range ms {
				if m == nil || out[i].Skipped != "" {
					continue
				}
				if err := ctx.Err(); err != nil {
					return out, err
				}
				if err := m.run(ctx); err != nil {
					out[i].Skipped = "run: " + err.Error()
				}
			}
			if r >= 3 && time.Since(start) > opts.Budget*time.Duration(max(1, len(ms))) {
				break
			}
		}
	}
	for i, m := range ms {
		if m != nil && out[i].Skipped == "" {
			out[i].Time = m.best
		}
		if opts.Progress != nil {
			if out[i].Skipped != "" {
				opts.Progress(fmt.Sprintf("%-8s %-22s skipped: %s", out[i].Backend, out[i].Name, out[i].Skipped))
			} else {
				opts.Progress(fmt.Sprintf("%-8s %-22s %9.3f ms whole (%d nodes)", out[i].Backend, out[i].Name, float64(out[i].Time)/1e6, out[i].Nodes))
			}
		}
	}
	return out, nil
}

// cacheSizes are the thresholds tried for the in-model term's
// activation bytes (the caches a node's working set spills out of).
var cacheSizes = []float64{512 << 10, 1 << 20, 2 << 20, 4 << 20}

// FitInModel fits each backend's in-model term (opcost.InModelFamily) to
// its model samples and adds it to p. The term's features are asked of
// the backend's own cost model (so a fused node counts as the backend
// counts it): its estimate of each network with p alone, and with probe
// rates of one unit per node, per weight byte (streamed from memory:
// a network's weights do not stay in the cache from one call to the
// next, where a node measured alone finds its own there) and per
// activation byte beyond each cache size; the estimate is linear in the
// term's coefficients, so the differences are the features. The fit is
// least squares on relative error with non-negative coefficients, a
// further term kept only where it cuts the median error by a fifth. The
// samples get their estimates with and without the term.
func FitInModel(ctx context.Context, devs map[string]*hal.Device, cases []ModelCase, ms []ModelSample, p *opcost.Profile) {
	byName := map[string]*graph.Model{}
	for _, mc := range cases {
		byName[mc.Name] = mc.Build()
	}
	prev := opcost.CurrentProfile()
	defer opcost.SetProfile(prev)
	// probe is p with the backend's in-model term set to r
	probe := func(backend string, r opcost.Rate, ir *graph.Model) float64 {
		q := *p
		q.Rates = map[string]map[string]opcost.Rate{}
		for be, fams := range p.Rates {
			q.Rates[be] = map[string]opcost.Rate{}
			for f, v := range fams {
				q.Rates[be][f] = v
			}
		}
		if q.Rates[backend] == nil {
			q.Rates[backend] = map[string]opcost.Rate{}
		}
		q.Rates[backend][opcost.InModelFamily] = r
		opcost.SetProfile(&q)
		return float64(estimate(ctx, devs[backend], ir).Latency)
	}
	backends := map[string][]int{}
	var order []string
	for i, s := range ms {
		if s.Skipped != "" || byName[s.Name] == nil || devs[s.Backend] == nil {
			continue
		}
		if backends[s.Backend] == nil {
			order = append(order, s.Backend)
		}
		backends[s.Backend] = append(backends[s.Backend], i)
	}
	for _, be := range order {
		idx := backends[be]
		if len(idx) < 2 {
			continue
		}
		type row struct {
			meas, est, nodes, weights float64
			bytes                     []float64 // per cache size
		}
		rows := make([]row, len(idx))
		for k, i := range idx {
			ir := byName[ms[i].Name]
			r := row{meas: float64(ms[i].Time)}
			r.est = probe(be, opcost.Rate{}, ir)
			r.nodes = probe(be, opcost.Rate{Fixed: 1000}, ir)/1000 - r.est/1000
			r.weights = probe(be, opcost.Rate{PerParamByte: 1}, ir) - r.est
			for _, c := range cacheSizes {
				r.bytes = append(r.bytes, probe(be, opcost.Rate{PerByte: 1, CacheBytes: c}, ir)-r.est)
			}
			rows[k] = r
			ms[i].Estimate = time.Duration(r.est)
		}
		if rows[0].est <= 0 {
			continue // the backend gives no estimates
		}
		// candidate term sets: per node, per activation byte beyond a
		// cache size, and both
		type cand struct {
			r   opcost.Rate
			med float64
			n   int
		}
		var best *cand
		try := func(n int, feats func(r row) []float64, rateOf func(x []float64) opcost.Rate) {
			a := make([][]float64, n)
			for i := range a {
				a[i] = make([]float64, n+1)
			}
			for _, r := range rows {
				f := feats(r)
				w := 1 / (r.meas * r.meas)
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						a[i][j] += w * f[i] * f[j]
					}
					a[i][n] += w * f[i] * (r.meas - r.est)
				}
			}
			x, ok := gauss(a)
			if !ok {
				return
			}
			for _, v := range x {
				if !(v >= 0) || math.IsInf(v, 0) {
					return
				}
			}
			rate := rateOf(x)
			errs := make([]float64, len(rows))
			for k, r := range rows {
				f := feats(r)
				e := r.est
				for i := range x {
					e += x[i] * f[i]
				}
				errs[k] = math.Abs(e-r.meas) / r.meas
			}
			sort.Float64s(errs)
			med := errs[len(errs)/2]
			if len(errs)%2 == 0 {
				med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
			}
			rate.Samples, rate.TypicalError, rate.MaxError = len(rows), med, errs[len(errs)-1]
			c := &cand{r: rate, med: med, n: n}
			if best == nil || (n <= best.n && med < best.med) || (n > best.n && med < 0.8*best.med) {
				best = c
			}
		}
		// (a share of the node's own estimate is not tried: fitted on
		// these networks at load 17–20 it priced every native model
		// 1.6–1.75×, and placement moved face_landmark,
		// palm_detection_lite and yolox_nano, 15–35% faster on native, to
		// XNNPACK; nor a rate per activation byte from the first, which
		// the family rates hold already and which did the same)
		try(1, func(r row) []float64 { return []float64{r.nodes} }, func(x []float64) opcost.Rate { return opcost.Rate{Fixed: x[0]} })
		try(1, func(r row) []float64 { return []float64{r.weights} }, func(x []float64) opcost.Rate { return opcost.Rate{PerParamByte: x[0]} })
		try(2, func(r row) []float64 { return []float64{r.nodes, r.weights} }, func(x []float64) opcost.Rate {
			return opcost.Rate{Fixed: x[0], PerParamByte: x[1]}
		})
		for ci, c := range cacheSizes {
			ci, c := ci, c
			try(1, func(r row) []float64 { return []float64{r.bytes[ci]} }, func(x []float64) opcost.Rate { return opcost.Rate{PerByte: x[0], CacheBytes: c} })
			try(2, func(r row) []float64 { return []float64{r.weights, r.bytes[ci]} }, func(x []float64) opcost.Rate {
				return opcost.Rate{PerParamByte: x[0], PerByte: x[1], CacheBytes: c}
			})
		}
		if best == nil {
			continue
		}
		if p.Rates[be] == nil {
			p.Rates[be] = map[string]opcost.Rate{}
		}
		p.Rates[be][opcost.InModelFamily] = best.r
		for _, i := range idx {
			ms[i].InModel = time.Duration(probe(be, best.r, byName[ms[i].Name]))
		}
	}
}
