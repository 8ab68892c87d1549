package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
	"github.com/switchyard-hal/switchyard/hal"
)

// Prices of the int8 kernels (quant.go), per multiply-accumulate (Conv2D
// and FullyConnected on the GEMM, DepthwiseConv2D) or per output element
// (Add, Mean), fitted to BenchmarkMobileNetV2Int8 at one thread on the
// development VM (AVX-512 VNNI: 280 M GEMM MACs in about 2.5 ms, 21 M
// depthwise MACs in about 1.4 ms); the portable kernels are about 50×
// slower. opcost has no model of the quant domain (every op there is
// "other", priced per output element), so native prices these itself.
var quantRates = map[string]nrate{
	"Conv2D":          {Fixed: 2000, PerFLOP: 0.009},
	"FullyConnected":  {Fixed: 2000, PerFLOP: 0.009},
	"DepthwiseConv2D": {Fixed: 2000, PerFLOP: 0.07},
	"Add":             {Fixed: 500, PerFLOP: 0.5},
	"Mean":            {Fixed: 500, PerFLOP: 1},
}

// quantNodeCost is the time in ns of an int8 node with a native kernel;
// false for every other node.
func quantNodeCost(sg *hal.Subgraph, n *graph.Node, threads int) (float64, bool) {
	r, ok := quantRates[n.OpType]
	if n.Domain != quantops.Domain || !ok {
		return 0, false
	}
	w := opcost.Of(n, sg)
	work := float64(w.Elems) // per output element
	switch n.OpType {
	case "Conv2D", "FullyConnected", "DepthwiseConv2D":
		wt := constInput(sg, n, 3)
		if wt == nil || len(wt.Shape) == 0 || wt.Shape[0] == 0 {
			return 0, false
		}
		k := wt.Len() / wt.Shape[0]
		if n.OpType == "DepthwiseConv2D" && len(wt.Shape) == 4 {
			k = wt.Shape[1] * wt.Shape[2]
		}
		work *= float64(k)
	case "Mean":
		work = float64(w.BytesIn)
	}
	t := work * r.PerFLOP
	if archQKernels() == nil {
		t *= 50
	}
	if threads > 1 {
		t /= 0.85 * float64(threads)
	}
	return r.Fixed + t, true
}
