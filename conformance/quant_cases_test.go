package conformance

import (
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestQuantCasesGenerated: every switchyard.quant op but LSTM gets
// generated int8 cases, and the ops.json keys resolve to schemas.
func TestQuantCasesGenerated(t *testing.T) {
	cases, uncovered, err := opCases(Full)
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, c := range cases {
		if strings.HasPrefix(c.Op, "switchyard.quant.") {
			per[c.Op]++
		}
	}
	for _, op := range []string{"Conv2D", "DepthwiseConv2D", "FullyConnected", "Add", "Sub", "Mul", "AveragePool2D", "MaxPool2D", "Mean", "Softmax", "Logistic", "Tanh", "Quantize", "Dequantize"} {
		if per["switchyard.quant."+op] == 0 {
			t.Errorf("no cases for switchyard.quant.%s", op)
		}
	}
	for _, u := range uncovered {
		if strings.HasPrefix(u, "switchyard.quant.") && u != "switchyard.quant.LSTM" {
			t.Errorf("%s uncovered", u)
		}
	}
}

// TestInt8StepBound: an int8 bound of abs 1 (the int8-float-requant
// profile) lets one quantisation step through and not two; other integer
// outputs stay exact under the same bound.
func TestInt8StepBound(t *testing.T) {
	want := graph.MustFromSlice([]int{3}, []int8{-128, 0, 127})
	b := Bound{Abs: 1}
	if c := compareTensors("y", graph.MustFromSlice([]int{3}, []int8{-127, 1, 126}), want, b); c.problem != "" {
		t.Errorf("one step: %s", c.problem)
	}
	if c := compareTensors("y", graph.MustFromSlice([]int{3}, []int8{-128, 2, 127}), want, b); c.problem == "" {
		t.Error("two steps accepted")
	}
	if c := compareTensors("y", graph.MustFromSlice([]int{2}, []int32{1, 5}), graph.MustFromSlice([]int{2}, []int32{0, 5}), b); c.problem == "" {
		t.Error("an int32 difference accepted under an int8 bound")
	}
	if c := compareTensors("y", graph.MustFromSlice([]int{1}, []int8{1}), graph.MustFromSlice([]int{1}, []int8{0}), Bound{}); c.problem == "" {
		t.Error("int8 difference accepted without a bound")
	}
}
