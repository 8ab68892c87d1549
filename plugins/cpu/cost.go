package cpu

import (
	"context"
	"runtime"
	"time"

	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
)

// The cost model of the reference kernels (hal.CostEstimator). Every node
// costs a fixed dispatch time plus its work (opcost) at the rate of its op
// or class; the kernels that spread over goroutines (convolutions, matrix
// products, pools) divide their work by GOMAXPROCS. Nodes of a partition
// left on cpu run inside the runtime's own program, so there is no
// per-call overhead beyond the nodes', and no boundary to convert.
//
// The rates are calibrated by BenchmarkCalibrate (cost_bench_test.go),
// which times each op with 1 and 9 independent copies in one graph, on
// several sizes, at GOMAXPROCS=1, and prints the table below; rerun it when
// kernels change:
//
//	GOMAXPROCS=1 go test ./plugins/cpu -run '^$' -bench Calibrate -benchtime 20x -v

// opRates: the ops BenchmarkCalibrate measures (GOMAXPROCS=1, CPU time,
// best of 10 runs, on the shared 2-core AMD EPYC development VM; fixed
// costs floored at 450 ns, the dispatch of any node).
var opRates = map[string]opcost.Rate{
	"Add":                {Fixed: 759, PerFLOP: 0.513},
	"AveragePool":        {Fixed: 511, PerFLOP: 3.46},
	"BatchNormalization": {Fixed: 450, PerFLOP: 4.55},
	"Cast":               {Fixed: 481, PerFLOP: 0.261},
	"Clip":               {Fixed: 586, PerFLOP: 3.79},
	"Concat":             {Fixed: 704, PerByte: 0.0405},
	"Div":                {Fixed: 725, PerFLOP: 0.846},
	"Gemm":               {Fixed: 688, PerFLOP: 0.121},
	"GlobalAveragePool":  {Fixed: 450, PerFLOP: 0.584},
	"HardSigmoid":        {Fixed: 484, PerFLOP: 0.835},
	"MatMul":             {Fixed: 766, PerFLOP: 0.113},
	"MaxPool":            {Fixed: 450, PerFLOP: 8.13},
	"Mul":                {Fixed: 718, PerFLOP: 0.622},
	"Pow":                {Fixed: 588, PerFLOP: 1.49},
	"ReduceMean":         {Fixed: 571, PerFLOP: 10.8},
	"Relu":               {Fixed: 467, PerFLOP: 2.23},
	"Reshape":            {Fixed: 548, PerByte: 0.0349},
	"Shape":              {Fixed: 479},
	"Sigmoid":            {Fixed: 498, PerFLOP: 0.88},
	"Slice":              {Fixed: 802, PerByte: 0.0346},
	"Softmax":            {Fixed: 488, PerFLOP: 1.76},
	"Sqrt":               {Fixed: 481, PerFLOP: 2.07},
	"Sub":                {Fixed: 733, PerFLOP: 0.506},
	"Transpose":          {Fixed: 629, PerByte: 0.123},
	// the integer LSTM (switchyard.quant), per FLOP of its products (two
	// a multiply-accumulate; opcost.Of): one step of 257 inputs and 128
	// units (197k MACs) takes about 290 µs of CPU time (BenchmarkQLSTM in
	// plugins/native, GOMAXPROCS=1), preparing its biases from every
	// weight on each call
	"switchyard.quant:LSTM": {Fixed: 2000, PerFLOP: 0.73},
}

// classRates: every other op, by class (Conv is priced by class: dense
// and depthwise differ; the calibrated values are "Conv" and
// "Conv(depthwise)"); the rest from the calibrated ops of the class.
var classRates = map[opcost.Class]opcost.Rate{
	opcost.Conv:           {Fixed: 2000, PerFLOP: 0.122},
	opcost.DepthwiseConv:  {Fixed: 6326, PerFLOP: 0.261},
	opcost.Gemm:           {Fixed: 720, PerFLOP: 0.117},
	opcost.Elementwise:    {Fixed: 600, PerFLOP: 0.8},
	opcost.Transcendental: {Fixed: 500, PerFLOP: 1.5},
	opcost.Reduce:         {Fixed: 550, PerFLOP: 4.5},
	opcost.Pool:           {Fixed: 500, PerFLOP: 5},
	opcost.Move:           {Fixed: 700, PerByte: 0.06},
	opcost.View:           {Fixed: 550, PerByte: 0.035},
	opcost.Meta:           {Fixed: 480},
	opcost.Control:        {Fixed: 2000, PerFLOP: 1.0},
	opcost.Other:          {Fixed: 700, PerFLOP: 2.0},
}

// parallel lists the classes whose kernels use GOMAXPROCS goroutines.
var parallel = map[opcost.Class]bool{opcost.Conv: true, opcost.DepthwiseConv: true, opcost.Gemm: true, opcost.Pool: true}

func rateOf(op string, c opcost.Class) opcost.Rate { return opcost.RateOf(opRates, classRates, op, c) }

// EstimateCost prices the subgraph on the reference kernels at the
// current GOMAXPROCS.
func (b *Backend) EstimateCost(ctx context.Context, sg *hal.Subgraph) (hal.Cost, error) {
	if sg == nil || sg.Graph == nil {
		return hal.Cost{}, hal.Errorf(hal.CodeInvalidArgument, "cpu: estimate-cost: nil subgraph")
	}
	return Estimate(sg, runtime.GOMAXPROCS(0)), nil
}

// Estimate is EstimateCost for a given number of goroutines.
func Estimate(sg *hal.Subgraph, procs int) hal.Cost {
	if procs < 1 {
		procs = 1
	}
	var fixed, compute float64
	for _, n := range sg.Graph.Nodes {
		w := opcost.Of(n, sg)
		op := n.OpType
		if fam := opcost.Family(n, sg); fam != op {
			if _, measured := opRates[fam]; measured {
				op = fam // an op of another domain with its own rate
			}
		}
		f, c := nodeCost(op, w, procs)
		if r, ok := opcost.Calibrated("cpu", opcost.Family(n, sg)); ok {
			// measured on this machine (switchyard calibrate)
			f, c = rateCost(opcost.Rate{Fixed: r.Fixed, PerFLOP: r.PerFLOP, PerByte: r.PerByte}, w, procs)
		}
		fixed += f
		compute += c
	}
	c := hal.Cost{Overhead: time.Duration(fixed), Compute: time.Duration(compute)}
	c.Latency = c.Overhead + c.Compute
	return c
}

// nodeCost returns the fixed and the work-proportional time of one node.
func nodeCost(op string, w opcost.Work, procs int) (fixed, compute float64) {
	return rateCost(rateOf(op, w.Class), w, procs)
}

// rateCost is nodeCost at rate r.
func rateCost(r opcost.Rate, w opcost.Work, procs int) (fixed, compute float64) {
	compute = r.Compute(w)
	if parallel[w.Class] {
		compute = opcost.Spread(compute, procs)
	}
	return r.Fixed, compute
}
