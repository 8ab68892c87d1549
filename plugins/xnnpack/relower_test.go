package xnnpack

import (
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestRelowerCharged: a partition whose input has a dim that may change
// every call (DynamicDims after the batch) is charged a lowering and the
// steady state after churn; a dynamic batch, fixed dims, or a
// convolutional partition are not.
func TestRelowerCharged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	mm := chainCase{op: "MatMul", shape: []int{4, 64}, consts: []*graph.Tensor{calRand(rng, 1, 64, 64)}}
	base := estimate(mm.graphOf(3), 1)
	for _, c := range []struct {
		dyn  []bool
		more bool
	}{{nil, false}, {[]bool{true, false}, false}, {[]bool{false, true}, true}} {
		sg := mm.graphOf(3)
		if c.dyn != nil {
			sg.DynamicDims = map[string][]bool{"v0": c.dyn}
		}
		got := estimate(sg, 1)
		if more := got.Latency > base.Latency; more != c.more {
			t.Errorf("dynamic %v: latency %v vs %v fixed", c.dyn, got.Latency, base.Latency)
		}
		if c.more && got.Overhead-base.Overhead < 5000 {
			t.Errorf("dynamic %v: overhead %v vs %v: no lowering charged", c.dyn, got.Overhead, base.Overhead)
		}
		// the steady state after churn runs on the reference kernels:
		// priced at refSlowdown × XNNPACK's compute, not once more
		if c.more && float64(got.Compute) < (1+refSlowdown)*float64(base.Compute) {
			t.Errorf("dynamic %v: compute %v vs %v fixed: the churn steady state is not priced on the reference kernels", c.dyn, got.Compute, base.Compute)
		}
	}
	conv := chainCase{op: "Conv", shape: []int{1, 8, 8, 8}, consts: []*graph.Tensor{calRand(rng, 0.1, 8, 8, 1, 1)}}
	sg := conv.graphOf(1)
	sg.DynamicDims = map[string][]bool{"v0": {false, false, true, true}}
	if got, want := estimate(sg, 1), estimate(conv.graphOf(1), 1); got != want {
		t.Errorf("convolution with symbolic image size: %+v, want %+v", got, want)
	}
}
