package native_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// sileroDenied keeps Sqrt off native: silero_vad_v5 is one If over the
// whole network, and its branches hold Sqrt, so native cannot take the If
// whole (as with an op native lacks).
var sileroDenied = partitioner.Policy{Deny: map[string][]string{"Sqrt": {native.Name}}}

// countBodies counts, over every body plan nested in p, the nodes per
// op and backend ("Conv@native").
func countBodies(p *partitioner.Plan, per map[string]int) {
	for _, b := range p.Bodies {
		for _, n := range b.Plan.Nodes {
			per[n.OpType+"@"+n.Backend]++
		}
		countBodies(b.Plan, per)
	}
}

// An op native may not run inside silero's If costs that op, not the If:
// the If runs on the executor, its branches' other nodes on native, the
// outputs match the reference outputs.
func TestSileroBodyPlacedPerNode(t *testing.T) {
	dir := filepath.Join(shared.Path(t, "testdata/models"), "silero_vad_v5")
	dev := device(t, native.Options{Threads: 1})
	opts := &runtime.Options{Backends: []*hal.Device{dev}, Policy: sileroDenied}
	res := onnxtest.RunDir(context.Background(), dir, onnxtest.Options{Rtol: 1e-3, Atol: 1e-4, Runtime: opts})
	if res.Status != onnxtest.Pass {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	m, err := runtime.LoadDir(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	plan := m.Plan()
	for _, n := range plan.Nodes {
		if n.OpType == "If" && n.Backend != "cpu" {
			t.Errorf("the If went to %s", n.Backend)
		}
	}
	per := map[string]int{}
	countBodies(plan, per)
	t.Logf("body nodes per op and backend: %v", per)
	if testing.Verbose() {
		t.Log(plan.Text())
	}
	// Sqrt on cpu; the encoder's four convolutions of each branch on
	// native, and the nested Ifs holding the LSTM taken whole by it; the
	// rest where the cost model and the verdicts put it (the STFT's
	// convolution is priced cheaper on cpu at the representative input
	// length; the decoder's convolution reads a nested If's output, whose
	// rank is not inferred, and native declines a Conv of unknown rank)
	if per["Sqrt@native"] > 0 || per["Sqrt@cpu"] != 2 || per["Conv@native"] < 8 || per["If@native"] < 2 {
		t.Errorf("body placement %v: want Sqrt on cpu, the encoder's Conv and the nested Ifs on native", per)
	}
}

// BenchmarkSileroBodies times silero_vad_v5 with Sqrt denied to native
// (its bodies placed per node) against cpu alone (where the whole If ran
// before bodies were placed per node) and native taking the If whole,
// alternating the three every iteration (one thread).
func BenchmarkSileroBodies(b *testing.B) {
	dir := filepath.Join(shared.Path(b, "testdata/models"), "silero_vad_v5")
	ctx := context.Background()
	dev := device(b, native.Options{Threads: 1})
	load := func(o *runtime.Options) *runtime.Model {
		m, err := runtime.LoadDir(ctx, dir, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close() })
		return m
	}
	ms := []*runtime.Model{
		load(&runtime.Options{Backends: []*hal.Device{dev}, Policy: sileroDenied}),
		load(nil),
		load(&runtime.Options{Backends: []*hal.Device{dev}}),
	}
	ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
	if err != nil {
		b.Fatal(err)
	}
	feeds := map[string]*graph.Tensor{}
	for i, in := range ms[0].Inputs() {
		feeds[in.Name] = ins[i]
	}
	var total [3]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, m := range ms {
			t0 := time.Now()
			if _, err := m.Run(ctx, feeds); err != nil {
				b.Fatal(err)
			}
			total[k] += time.Since(t0)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(per(total[0]), "bodies-ms")
	b.ReportMetric(per(total[1]), "cpu-ms")
	b.ReportMetric(per(total[2]), "native-whole-ms")
	b.ReportMetric(float64(total[0])/float64(total[1]), "bodies/cpu")
	b.ReportMetric(float64(total[0])/float64(total[2]), "bodies/native-whole")
}
