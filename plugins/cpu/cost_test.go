package cpu

import (
	"context"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

func convCase(h, w int) calCase {
	return calCase{op: "Conv", shape: []int{1, 32, h, w}, attrs: []*graph.Attribute{cInts("pads", 1, 1, 1, 1)},
		consts: []*graph.Tensor{graph.MustFromSlice([]int{32, 32, 3, 3}, make([]float32, 32*32*9))}}
}

// The estimate is the calibrated fixed cost plus the work at the op's
// rate; bigger work costs more; convolutions spread over GOMAXPROCS and
// elementwise ops do not.
func TestEstimateFollowsWork(t *testing.T) {
	defer opcost.TablesOnly()() // the built-in tables, not the measured profiles
	small, big := convCase(8, 8).graphOf(1), convCase(48, 80).graphOf(1)
	es, eb := Estimate(small, 1), Estimate(big, 1)
	flops := 2.0 * 32 * 48 * 80 * 32 * 9
	want := time.Duration(classRates["conv"].Fixed + flops*classRates["conv"].PerFLOP)
	if eb.Latency != want || eb.Latency != eb.Compute+eb.Overhead || eb.TransferBytes != 0 {
		t.Errorf("conv 48×80: %+v, want latency %v", eb, want)
	}
	if es.Latency >= eb.Latency {
		t.Errorf("small conv %v ≥ big conv %v", es.Latency, eb.Latency)
	}
	if e2 := Estimate(big, 2); e2.Compute >= eb.Compute || e2.Overhead != eb.Overhead {
		t.Errorf("conv at 2 procs %+v, at 1 %+v", e2, eb)
	}
	relu := calCase{op: "Relu", shape: []int{40, 120}}.graphOf(3)
	if a, b := Estimate(relu, 1), Estimate(relu, 4); a != b {
		t.Errorf("Relu should not scale with procs: %+v vs %+v", a, b)
	}
	if r := Estimate(relu, 1); r.Overhead != time.Duration(3*opRates["Relu"].Fixed) {
		t.Errorf("three Relus: overhead %v", r.Overhead)
	}
}

// Through the portable layer: the feature is listed, estimates are
// validated, bad subgraphs are InvalidArgument, and a node with unknown
// shapes still gets a finite estimate.
func TestEstimateThroughDevice(t *testing.T) {
	d, err := hal.NewDevice(New(), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range d.Features() {
		found = found || f == "cost-estimates"
	}
	if !found {
		t.Fatalf("features %v lack cost-estimates", d.Features())
	}
	ctx := context.Background()
	c, err := d.EstimateCost(ctx, convCase(24, 40).graphOf(2))
	if err != nil || c.Latency <= 0 {
		t.Fatalf("estimate %+v, %v", c, err)
	}
	if _, err := d.EstimateCost(ctx, nil); hal.CodeOf(err) != hal.CodeInvalidArgument {
		t.Errorf("nil subgraph: %v", err)
	}
	g := &graph.Graph{Name: "sym",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}, {Value: -1}}}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes:   []*graph.Node{{OpType: "Frobnicate", Inputs: []string{"x"}, Outputs: []string{"y"}}}}
	c, err = d.EstimateCost(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	if err != nil || c.Latency <= 0 {
		t.Errorf("unknown op and shapes: %+v, %v", c, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := d.EstimateCost(cctx, convCase(8, 8).graphOf(1)); hal.CodeOf(err) != hal.CodeCancelled && hal.CodeOf(err) != hal.CodeDeadlineExceeded {
		t.Errorf("cancelled context: %v", err)
	}
}
