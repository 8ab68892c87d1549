package native

import (
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/opcost"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
	"github.com/switchyard-hal/switchyard/hal"
)

// Prices of the int8 kernels (quant.go, qlinear.go), per
// multiply-accumulate (Conv2D and FullyConnected on the GEMM,
// DepthwiseConv2D) or per output element (Add, Mean), fitted to
// BenchmarkMobileNetV2Int8 at one thread on the development VM with the
// AVX-512 VNNI kernels (280 M GEMM MACs in about 2.5 ms, 21 M depthwise
// MACs in about 1.4 ms). The other families are priced by their measured
// slowdown (familyFactor). opcost has no model of the quant domain (every
// op there is "other", priced per output element), so native prices
// these itself.
var quantRates = map[string]nrate{
	"Conv2D":          {Fixed: 2000, PerFLOP: 0.009},
	"FullyConnected":  {Fixed: 2000, PerFLOP: 0.009},
	"DepthwiseConv2D": {Fixed: 2000, PerFLOP: 0.07},
	"Add":             {Fixed: 500, PerFLOP: 0.5},
	"Mean":            {Fixed: 500, PerFLOP: 1},
	// LSTM per multiply-accumulate of its two products (qlstm.go): one
	// step of 257 inputs and 128 units (197k MACs) takes about 14 µs of
	// CPU time with the AVX2 products (BenchmarkQLSTM, GOMAXPROCS=1),
	// about 170 µs with the portable ones (qlstmGenericFactor)
	"LSTM": {Fixed: 2000, PerFLOP: 0.06},
}

// qlstmGenericFactor is how much slower the integer LSTM's portable
// products are than its AVX2 ones (measured as above).
const qlstmGenericFactor = 12

// qlinearRates price ONNX's integer ops (qlinear.go) the same way: the
// convolutions and QLinearMatMul on the int8 GEMM or depthwise kernels
// (as Conv2D, DepthwiseConv2D), plus qlMove per input and output element
// of a convolution (the NCHW↔NHWC transposes, about 0.05 ns a byte at
// one thread with the AVX kernel); the element-wise ones per output
// element (table lookups).
var qlinearRates = map[string]nrate{
	"QLinearAdd":               {Fixed: 500, PerFLOP: 0.4},
	"QLinearMul":               {Fixed: 500, PerFLOP: 0.4},
	"QLinearSigmoid":           {Fixed: 500, PerFLOP: 0.4},
	"QLinearGlobalAveragePool": {Fixed: 500, PerFLOP: 0.3},
	"Clip":                     {Fixed: 500, PerFLOP: 0.4},
}

// qlMove is the price of one element's transposes (in or out) of a
// QLinearConv, ns.
const qlMove = 0.08

// familyFactor is how much slower than the AVX-512 (VNNI) kernels the
// int8 kernels in use for class ("gemm", "dw", other: element-wise) run.
// Measured with BenchmarkQuantOps at one thread on the development VM
// (1×1 expansion 56²×24→144, 3×3 depthwise 56²×144): the AVX2 GEMM tiles
// take 4.2× VNNI's time (546 vs 131 µs), the AVX2 depthwise 1.13× (423 vs
// 374 µs); the portable Go kernels 160× (GEMM) and 30× (depthwise). The
// element-wise kernels are not measured per family and keep the 50× the
// portable kernels were priced at before.
func familyFactor(class string) float64 {
	switch class {
	case "gemm":
		switch qgemmFamilyInUse() {
		case "generic":
			return 160
		case "avx2":
			return 4.2
		}
		return 1
	case "dw":
		fn, pairs := archDWQ()
		switch {
		case fn == nil:
			return 30
		case pairs:
			return 1.13
		}
		return 1
	}
	if archQKernels() == nil {
		return 50
	}
	return 1
}

// qgemmFamilyInUse is the family of the int8 GEMM tiles nodes compiled
// now get: "vnni", "avx2" or "generic".
func qgemmFamilyInUse() string {
	ks := qkernels()
	switch {
	case ks[0].fn == nil:
		return "generic"
	case strings.HasPrefix(ks[0].name, "avx2"):
		return "avx2"
	}
	return "vnni"
}

// quantNodeCost is the time in ns of an int8 node with a native kernel;
// false for every other node.
func quantNodeCost(sg *hal.Subgraph, n *graph.Node, threads int) (float64, bool) {
	if n.Domain != quantops.Domain {
		return qlinearNodeCost(sg, n, threads)
	}
	r, ok := quantRates[n.OpType]
	if !ok {
		return 0, false
	}
	w := opcost.Of(n, sg)
	work := float64(w.Elems) // per output element
	class := ""
	switch n.OpType {
	case "Conv2D", "FullyConnected", "DepthwiseConv2D":
		wt := constInput(sg, n, 3)
		if wt == nil || len(wt.Shape) == 0 || wt.Shape[0] == 0 {
			return 0, false
		}
		k := wt.Len() / wt.Shape[0]
		class = "gemm"
		if n.OpType == "DepthwiseConv2D" && len(wt.Shape) == 4 {
			k = wt.Shape[1] * wt.Shape[2]
			class = "dw"
		}
		work *= float64(k)
	case "Mean":
		work = float64(w.BytesIn)
	case "LSTM":
		// single-threaded: no parallel share
		t := w.FLOPs / 2 * r.PerFLOP
		if !qlstmAsm() {
			t *= qlstmGenericFactor
		}
		return r.Fixed + t, true
	}
	t := work * r.PerFLOP
	if n.OpType != "Mean" { // Mean has no assembly: the same kernel everywhere
		t *= familyFactor(class)
	}
	return r.Fixed + parallelShare(t, threads), true
}

func parallelShare(t float64, threads int) float64 {
	if threads > 1 {
		t /= 0.85 * float64(threads)
	}
	return t
}

// qlinearNodeCost prices the ONNX integer ops native takes (false for
// other nodes and for those it declines).
func qlinearNodeCost(sg *hal.Subgraph, n *graph.Node, threads int) (float64, bool) {
	switch {
	case n.Domain == contribDomain && qlinearContrib[n.OpType]:
	case (n.Domain == "" || n.Domain == "ai.onnx") && (n.OpType == "QLinearConv" || n.OpType == "QLinearMatMul" || n.OpType == "Clip"):
	default:
		return 0, false
	}
	if r := check(sg, n); r != "" {
		return 0, false
	}
	out := 0
	if len(n.Outputs) > 0 {
		if t, ok := sg.TypeOf(n.Outputs[0]); ok {
			if dims, ok := t.Shape.Ints(); ok {
				out = kernels.Prod(dims)
			}
		}
	}
	if out == 0 {
		out = int(opcost.Of(n, sg).Elems)
	}
	switch n.OpType {
	case "QLinearConv":
		p, _ := planQLinearConv(sg, n)
		if p == nil {
			return 0, false
		}
		in := 0
		if t, ok := sg.TypeOf(n.Inputs[0]); ok {
			if dims, ok := t.Shape.Ints(); ok {
				in = kernels.Prod(dims)
			}
		}
		if p.depthwise {
			r := quantRates["DepthwiseConv2D"]
			t := float64(out*p.kh*p.kw)*r.PerFLOP*familyFactor("dw") + float64(in+out)*qlMove
			return r.Fixed + parallelShare(t, threads), true
		}
		r := quantRates["Conv2D"]
		t := float64(out*p.kh*p.kw*p.c)*r.PerFLOP*familyFactor("gemm") + float64(in+out)*qlMove
		return r.Fixed + parallelShare(t, threads), true
	case "QLinearMatMul":
		p, _ := planQLinearMatMul(sg, n)
		if p == nil {
			return 0, false
		}
		r := quantRates["FullyConnected"]
		return r.Fixed + parallelShare(float64(out*p.k)*r.PerFLOP*familyFactor("gemm"), threads), true
	case "Clip":
		t, ok := sg.TypeOf(input0(n))
		if !ok || (t.DType != graph.Int8 && t.DType != graph.Uint8) {
			return 0, false
		}
	}
	r := qlinearRates[n.OpType]
	// the tables run in Go on every family
	return r.Fixed + parallelShare(float64(out)*r.PerFLOP, threads), true
}
