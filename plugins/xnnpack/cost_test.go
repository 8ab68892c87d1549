package xnnpack

import (
	"context"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

func conv16(weightsAsInput bool) *hal.Subgraph {
	c := chainCase{op: "Conv", shape: []int{1, 16, 32, 32}, attrs: []*graph.Attribute{aInts("pads", 1, 1, 1, 1)},
		consts: []*graph.Tensor{graph.MustFromSlice([]int{16, 16, 3, 3}, make([]float32, 16*16*9))}}
	sg := c.graphOf(1)
	if weightsAsInput { // as when a Constant node left on cpu feeds them
		g := sg.Graph
		w := g.Initializers["c0"]
		delete(g.Initializers, "c0")
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "c0", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(w.Shape...)}})
	}
	return sg
}

// The structure comes from the plan Compile would build: a convolution's
// input and output are transposed at the boundary, a binary op's output
// is written in place and its input copied, weights arriving as inputs
// are compared every call.
func TestStructureFromPlan(t *testing.T) {
	st := structureOf(conv16(false))
	n := int64(4 * 16 * 32 * 32)
	if !st.lowered || st.stages != 1 || st.values != 2 || st.transposeBytes != 2*n || st.copyBytes != 0 || st.allocBytes != n || st.compareBytes != 0 {
		t.Errorf("conv: %+v", st)
	}
	add := chainCase{op: "Add", shape: []int{40, 120}, consts: []*graph.Tensor{graph.MustFromSlice([]int{40, 120}, make([]float32, 4800))}}.graphOf(3)
	st = structureOf(add)
	if !st.lowered || st.copyBytes != 4*4800 || st.transposeBytes != 0 || st.directStages != 1 {
		t.Errorf("add chain: %+v", st)
	}
	st = structureOf(conv16(true))
	if !st.lowered || st.compareBytes != 4*16*16*9 {
		t.Errorf("conv with weights as input: %+v", st)
	}
}

// Symbolic shapes cannot be lowered: a guess from the nodes stands in.
func TestStructureGuess(t *testing.T) {
	sg := conv16(false)
	sg.Graph.Inputs[0].Type.Shape = graph.Shape{{Value: 1}, {Value: 16}, {Param: "H"}, {Param: "W"}}
	st := structureOf(sg)
	if st.lowered || st.stages != 1 || st.ops != 1 || st.transposeBytes == 0 {
		t.Errorf("guess: %+v", st)
	}
	if c := estimate(sg, 1); c.Latency <= 0 || c.Latency != c.Compute+c.Overhead+c.Boundary {
		t.Errorf("estimate of a guess: %+v", c)
	}
}

// The model's choices on the two ends: a tiny op is cheaper on the
// reference kernels (a delegated call has a fixed price), a convolution is
// far cheaper on XNNPACK. BenchmarkDecisions checks such choices against
// measurement.
func TestEstimateAgainstCPU(t *testing.T) {
	tiny := chainCase{op: "Add", shape: []int{1, 2}, consts: []*graph.Tensor{graph.MustFromSlice([]int{1, 2}, []float32{1, 2})}}.graphOf(1)
	if x, c := estimate(tiny, 1), cpu.Estimate(tiny, 1); x.Latency <= c.Latency {
		t.Errorf("Add[1,2]: xnnpack %v ≤ cpu %v", x.Latency, c.Latency)
	}
	big := conv16(false)
	if x, c := estimate(big, 1), cpu.Estimate(big, 1); 5*x.Latency >= c.Latency {
		t.Errorf("Conv 16×32×32: xnnpack %v not 5× below cpu %v", x.Latency, c.Latency)
	}
	if a, b := estimate(big, 1), estimate(big, 1); a != b {
		t.Errorf("not deterministic: %+v %+v", a, b)
	}
	one, two := estimate(big, 1), estimate(big, 2)
	if two.Compute >= one.Compute || two.Overhead <= one.Overhead {
		t.Errorf("threads: 1 %+v, 2 %+v", one, two)
	}
}

// Through the portable layer with the library loaded.
func TestEstimateCostThroughDevice(t *testing.T) {
	b, err := New(context.Background(), Options{Threads: 1})
	if err != nil {
		if backendtest.Required(Name) {
			t.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		t.Skipf("xnnpack unavailable: %v", err)
	}
	d, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.EstimateCost(context.Background(), conv16(false))
	if err != nil || c != estimate(conv16(false), 1) {
		t.Fatalf("EstimateCost %+v, %v; want %+v", c, err, estimate(conv16(false), 1))
	}
	if _, err := d.EstimateCost(context.Background(), &hal.Subgraph{}); hal.CodeOf(err) != hal.CodeInvalidArgument {
		t.Errorf("empty subgraph: %v", err)
	}
}
