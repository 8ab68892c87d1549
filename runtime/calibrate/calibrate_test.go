package calibrate

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu"
	_ "github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// The fit recovers the rate that made the samples.
func TestFitRecoversRate(t *testing.T) {
	want := opcost.Rate{Fixed: 900, PerFLOP: 0.007, PerByte: 0.2}
	var ss []Sample
	for i, flops := range []float64{7e4, 1.4e7, 3.2e7, 5.8e7, 5.8e7} {
		w := opcost.Work{FLOPs: flops, BytesIn: int64(1e4 * (i + 1) * (i + 1)), BytesOut: 4e5}
		ss = append(ss, Sample{Backend: "b", Family: "conv", Work: w, Node: time.Duration(want.Time(w))})
	}
	p := Fit(ss)
	got := p.Rates["b"]["conv"]
	if got.MaxError > 0.01 {
		t.Fatalf("fit %+v, worst error %.3g", got, got.MaxError)
	}
	for _, c := range [][2]float64{{got.Fixed, want.Fixed}, {got.PerFLOP, want.PerFLOP}, {got.PerByte, want.PerByte}} {
		if math.Abs(c[0]-c[1]) > 0.02*c[1] {
			t.Fatalf("fit %+v, want %+v", got, want)
		}
	}
	// a moving family is fitted per byte
	var mv []Sample
	for _, b := range []int64{1e3, 1e5, 1e6} {
		w := opcost.Work{BytesIn: b, BytesOut: b}
		mv = append(mv, Sample{Backend: "b", Family: "Transpose", Work: w, Node: time.Duration(500 + 0.1*float64(2*b))})
	}
	if r := Fit(mv).Rates["b"]["Transpose"]; math.Abs(r.PerByte-0.1) > 0.005 || r.PerFLOP != 0 {
		t.Fatalf("move fit %+v", r)
	}
	// skipped samples are not fitted; one sample is too few
	if p := Fit([]Sample{{Backend: "b", Family: "x", Node: 5, Work: opcost.Work{FLOPs: 1}}, {Backend: "b", Family: "x", Skipped: "no"}}); len(p.Rates) != 0 {
		t.Fatalf("fitted from one sample: %+v", p.Rates)
	}
}

// Every case builds a model the runtime loads and types: its input and
// output shapes as declared.
func TestCasesBuild(t *testing.T) {
	for _, c := range Cases() {
		for _, n := range []int{1, Chain} {
			ir := c.Build(n)
			if err := ir.Validate(); err != nil {
				t.Fatalf("%s %v ×%d: %v", c.Family, c.Shape, n, err)
			}
			types, issues := runtime.InferTypes(ir)
			if len(issues) > 0 {
				t.Fatalf("%s %v ×%d: %v", c.Family, c.Shape, n, issues)
			}
			for _, o := range ir.Graph.Outputs {
				got, ok := types[o.Name].Shape.Ints()
				want, _ := o.Type.Shape.Ints()
				if !ok || len(got) != len(want) {
					t.Fatalf("%s %v ×%d: output %s inferred %v, declared %v", c.Family, c.Shape, n, o.Name, types[o.Name].Shape, want)
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s %v ×%d: output %s inferred %v, declared %v", c.Family, c.Shape, n, o.Name, got, want)
					}
				}
			}
			last := ir.Graph.Nodes[len(ir.Graph.Nodes)-1]
			if f := opcost.Family(last, typeMap(types)); f != c.Family {
				t.Fatalf("case %s builds family %s", c.Family, f)
			}
		}
	}
}

// A run on the reference kernels measures and fits (one cheap family).
func TestRunOnCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("times kernels")
	}
	ctx := context.Background()
	dev, err := hal.Default.Open(ctx, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	var lines int
	samples, p, err := Run(ctx, map[string]*hal.Device{"cpu": dev}, []string{"cpu"}, Options{Runs: 4, Budget: time.Second,
		Families: map[string]bool{"Relu": true}, Progress: func(string) { lines++ }})
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) == 0 || lines != len(samples) {
		t.Fatalf("%d samples, %d progress lines", len(samples), lines)
	}
	for _, s := range samples {
		if s.Family != "Relu" || s.Backend != "cpu" {
			t.Fatalf("unexpected sample %+v", s)
		}
	}
	if r, ok := p.Rates["cpu"]["Relu"]; !ok || r.PerFLOP <= 0 {
		t.Fatalf("no Relu rate on cpu: %+v (samples %+v)", p.Rates, samples)
	}
}

// Every network builds a model the runtime loads and types, its output
// as declared.
func TestModelCasesBuild(t *testing.T) {
	for _, c := range ModelCases() {
		ir := c.Build()
		if err := ir.Validate(); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		types, issues := runtime.InferTypes(ir)
		if len(issues) > 0 {
			t.Fatalf("%s: %v", c.Name, issues)
		}
		out := ir.Graph.Outputs[0]
		if got := types[out.Name]; got.Shape.String() != out.Type.Shape.String() {
			t.Fatalf("%s: output %v, declared %v", c.Name, got.Shape, out.Type.Shape)
		}
		if len(ir.Graph.Nodes) < 20 {
			t.Fatalf("%s: %d nodes, not a network", c.Name, len(ir.Graph.Nodes))
		}
	}
}

// FitInModel recovers an in-model term that made the networks' times:
// whole-network times made from the backend's own estimates plus 3 µs a
// node and 0.05 ns a weight byte give back that term (the features are
// asked of the backend's cost model, here native's).
func TestFitInModelRecoversTerm(t *testing.T) {
	ctx := context.Background()
	dev, err := hal.Default.Open(ctx, "native")
	if err != nil {
		t.Skipf("native: %v", err)
	}
	defer dev.Close()
	prev := opcost.CurrentProfile()
	defer opcost.SetProfile(prev)
	cases := ModelCases()
	want := opcost.Rate{Fixed: 3000, PerParamByte: 0.05}
	empty := &opcost.Profile{Version: opcost.ProfileVersion, Rates: map[string]map[string]opcost.Rate{"native": {opcost.InModelFamily: {}}}}
	made := &opcost.Profile{Version: opcost.ProfileVersion, Rates: map[string]map[string]opcost.Rate{"native": {opcost.InModelFamily: want}}}
	var ms []ModelSample
	for _, c := range cases {
		ir := c.Build()
		opcost.SetProfile(made)
		tm := estimate(ctx, dev, ir).Latency
		opcost.SetProfile(empty)
		if base := estimate(ctx, dev, ir).Latency; tm <= base {
			t.Fatalf("%s: the term adds nothing (%v vs %v)", c.Name, tm, base)
		}
		ms = append(ms, ModelSample{Backend: "native", Name: c.Name, Nodes: len(ir.Graph.Nodes), Time: tm})
	}
	p := &opcost.Profile{Version: opcost.ProfileVersion, Rates: map[string]map[string]opcost.Rate{}}
	FitInModel(ctx, map[string]*hal.Device{"native": dev}, cases, ms, p)
	got, ok := p.Rates["native"][opcost.InModelFamily]
	if !ok {
		t.Fatal("no in-model term fitted")
	}
	if math.Abs(got.Fixed-want.Fixed) > 0.02*want.Fixed || math.Abs(got.PerParamByte-want.PerParamByte) > 0.02*want.PerParamByte || got.PerByte > 1e-6 {
		t.Fatalf("fitted %+v, want %+v", got, want)
	}
	for _, s := range ms {
		if d := math.Abs(float64(s.InModel-s.Time)) / float64(s.Time); d > 0.01 {
			t.Fatalf("%s: estimate with the term %v, made %v", s.Name, s.InModel, s.Time)
		}
	}
}
