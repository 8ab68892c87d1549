package reduce

import (
	reduceops "github.com/switchyard-hal/switchyard/core/ops/reduce"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "BatchNormalization", batchNormKernel)
	kernels.RegisterKernel("", "LayerNormalization", layerNormKernel)
	kernels.RegisterKernel("", "InstanceNormalization", instanceNormKernel)
	kernels.RegisterKernel("", "GroupNormalization", groupNormKernel)
}

// wants reports whether node output i is requested.
func wants(n *graph.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// meanVar returns the mean and population variance of x[idx(j)] for j < cnt.
func meanVar(cnt int, at func(j int) float64) (mean, variance float64) {
	if cnt == 0 {
		return math.NaN(), math.NaN()
	}
	for j := 0; j < cnt; j++ {
		mean += at(j)
	}
	mean /= float64(cnt)
	for j := 0; j < cnt; j++ {
		d := at(j) - mean
		variance += d * d
	}
	return mean, variance / float64(cnt)
}

// ---- BatchNormalization ----

// batchNormTraining reports whether the node computes batch statistics:
// training_mode=1 from opset 14; before that, whenever the optional
// training outputs (mean, var, saved_mean, saved_var) are requested.
func batchNormTraining(n *graph.Node, opset int64) bool {
	if opset >= 14 {
		return n.AttrInt("training_mode", 0) != 0
	}
	for i := 1; i < len(n.Outputs); i++ {
		if wants(n, i) {
			return true
		}
	}
	return false
}

func batchNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	names := []string{"X", "scale", "B", "input_mean", "input_var"}
	for i, nm := range names {
		if err := checkFloat(n, kernels.Input(in, i), nm); err != nil {
			return nil, err
		}
	}
	x, scaleT, biasT, meanT, varT := in[0], in[1], in[2], in[3], in[4]
	if x.Rank() < 2 {
		return nil, kernels.Invalidf(n, "X must have shape (N, C, ...), got %v", x.Shape)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	momentum := float64(n.AttrFloat("momentum", 0.9))
	N, C := x.Shape[0], x.Shape[1]
	spatial := kernels.Prod(x.Shape[2:])
	// Before opset 9, spatial=0 gives every (C, D1, ...) position its own
	// statistics; otherwise they are per channel.
	perChannel := ctx.Opset >= 9 || n.AttrInt("spatial", 1) != 0
	pc := C
	if !perChannel {
		pc = C * spatial
	}
	for i, t := range []*graph.Tensor{scaleT, biasT, meanT, varT} {
		if t.Len() != pc {
			return nil, kernels.Invalidf(n, "%s has %d elements (shape %v), want %d for X of shape %v", names[i+1], t.Len(), t.Shape, pc, x.Shape)
		}
	}
	xv := x.Float64s()
	scale, bias, mean, vr := scaleT.Float64s(), biasT.Float64s(), meanT.Float64s(), varT.Float64s()
	training := batchNormTraining(n, ctx.Opset)
	outs := make([]*graph.Tensor, len(n.Outputs))
	var saved, savedVar []float64
	if training {
		if !perChannel {
			return nil, kernels.Unsupportedf(n, "training mode with spatial=0")
		}
		saved = make([]float64, C)
		savedVar = make([]float64, C)
		for c := 0; c < C; c++ {
			saved[c], savedVar[c] = meanVar(N*spatial, func(j int) float64 {
				b, s := j/spatial, j%spatial
				return xv[(b*C+c)*spatial+s]
			})
		}
	}
	y := make([]float64, len(xv))
	for b := 0; b < N; b++ {
		for c := 0; c < C; c++ {
			for s := 0; s < spatial; s++ {
				i := (b*C+c)*spatial + s
				p := c
				if !perChannel {
					p = c*spatial + s
				}
				m, v := mean[p], vr[p]
				if training {
					m, v = saved[c], savedVar[c]
				}
				y[i] = (xv[i]-m)/math.Sqrt(v+eps)*scale[p] + bias[p]
			}
		}
	}
	var err error
	if outs[0], err = newFromFloat64(ctx, x.DType, x.Shape, y); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if !training {
		return outs, nil
	}
	runMean := make([]float64, C)
	runVar := make([]float64, C)
	for c := 0; c < C; c++ {
		runMean[c] = mean[c]*momentum + saved[c]*(1-momentum)
		runVar[c] = vr[c]*momentum + savedVar[c]*(1-momentum)
	}
	// outputs: Y, running_mean, running_var (, saved_mean, saved_var before opset 14)
	extra := [][]float64{runMean, runVar, saved, savedVar}
	for i := 1; i < len(outs) && i <= len(extra); i++ {
		if !wants(n, i) {
			continue
		}
		if outs[i], err = newFromFloat64(ctx, meanT.DType, []int{C}, extra[i-1]); err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
	}
	return outs, nil
}

// ---- LayerNormalization ----

func layerNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0]
	if err := checkFloat(n, x, "X"); err != nil {
		return nil, err
	}
	scaleT, biasT := kernels.Input(in, 1), kernels.Input(in, 2)
	if err := checkFloat(n, scaleT, "Scale"); err != nil {
		return nil, err
	}
	if biasT != nil {
		if err := checkFloat(n, biasT, "B"); err != nil {
			return nil, err
		}
	}
	st := reduceops.StashType(n)
	if !st.IsFloat() {
		return nil, kernels.Unsupportedf(n, "stash_type %d", int64(st))
	}
	y, means, inv, axis, err := NormLastAxes(n, x, scaleT, biasT, "Scale", false)
	if err != nil {
		return nil, err
	}
	outs := make([]*graph.Tensor, len(n.Outputs))
	if outs[0], err = newFromFloat64(ctx, x.DType, x.Shape, y); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	statShape := append([]int{}, x.Shape...)
	for i := axis; i < len(statShape); i++ {
		statShape[i] = 1
	}
	for i, vals := range [][]float64{means, inv} {
		if !wants(n, i+1) {
			continue
		}
		if outs[i+1], err = newFromFloat64(ctx, st, statShape, vals); err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
	}
	return outs, nil
}

// NormLastAxes is LayerNormalization's and RMSNormalization's arithmetic:
// x normalised over its axes axis..rank-1 (attribute axis, default -1),
// y = (x - mean)/sqrt(var + epsilon)·scale + bias, or with rms
// x/sqrt(mean(x²) + epsilon)·scale (the mean taken as 0). scale and bias
// (nil: none) broadcast unidirectionally to x. It returns y, the mean and
// the inverse deviation of every normalised row, and the axis; the
// callers validate the inputs' dtypes.
func NormLastAxes(n *graph.Node, x, scaleT, biasT *graph.Tensor, scaleName string, rms bool) (y, means, inv []float64, axis int, err error) {
	if x.Rank() == 0 {
		return nil, nil, nil, 0, kernels.Invalidf(n, "X must have rank >= 1")
	}
	axis, err = kernels.NormAxis(n.AttrInt("axis", -1), x.Rank())
	if err != nil {
		return nil, nil, nil, 0, kernels.Invalidf(n, "%v", err)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	scaleIdx, err := broadcastTo(n, x.Shape, scaleT, scaleName)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	var biasIdx []int
	var bias []float64
	if biasT != nil {
		if biasIdx, err = broadcastTo(n, x.Shape, biasT, "B"); err != nil {
			return nil, nil, nil, 0, err
		}
		bias = biasT.Float64s()
	}
	outer := kernels.Prod(x.Shape[:axis])
	inner := kernels.Prod(x.Shape[axis:])
	xv := x.Float64s()
	scale := scaleT.Float64s()
	y = make([]float64, len(xv))
	means = make([]float64, outer)
	inv = make([]float64, outer)
	for a := 0; a < outer; a++ {
		base := a * inner
		var m, v float64
		if rms {
			for _, e := range xv[base : base+inner] {
				v += e * e
			}
			v /= float64(inner)
		} else {
			m, v = meanVar(inner, func(j int) float64 { return xv[base+j] })
		}
		r := 1 / math.Sqrt(v+eps)
		means[a], inv[a] = m, r
		for j := 0; j < inner; j++ {
			i := base + j
			y[i] = (xv[i] - m) * r * scale[scaleIdx[i]]
			if bias != nil {
				y[i] += bias[biasIdx[i]]
			}
		}
	}
	return y, means, inv, axis, nil
}

// broadcastTo checks that t unidirectionally broadcasts to shape and returns
// the index of t's element for each element of shape.
func broadcastTo(n *graph.Node, shape []int, t *graph.Tensor, what string) ([]int, error) {
	s, err := kernels.BroadcastShapes(shape, t.Shape)
	if err != nil || !graph.SameShape(s, shape) {
		return nil, kernels.Invalidf(n, "%s of shape %v does not broadcast to %v", what, t.Shape, shape)
	}
	return kernels.BroadcastIndex(shape, t.Shape), nil
}

// ---- InstanceNormalization ----

func instanceNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	names := []string{"input", "scale", "B"}
	for i, nm := range names {
		if err := checkFloat(n, kernels.Input(in, i), nm); err != nil {
			return nil, err
		}
	}
	x, scaleT, biasT := in[0], in[1], in[2]
	if x.Rank() < 2 {
		return nil, kernels.Invalidf(n, "input must have shape (N, C, ...), got %v", x.Shape)
	}
	C := x.Shape[1]
	if scaleT.Len() != C || biasT.Len() != C || scaleT.Rank() != 1 || biasT.Rank() != 1 {
		return nil, kernels.Invalidf(n, "scale %v and B %v must have shape [%d]", scaleT.Shape, biasT.Shape, C)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	y, err := groupNorm(x, x.Float64s(), C, eps, scaleT.Float64s(), biasT.Float64s(), true)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	out, err := newFromFloat64(ctx, x.DType, x.Shape, y)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	return ctx.Outputs(out), nil
}

// groupNorm normalises x (N, C, ...) over groups of C/groups channels and the
// spatial dims, then applies scale and bias, which are per channel
// (perChannel) or per group.
func groupNorm(x *graph.Tensor, xv []float64, groups int, eps float64, scale, bias []float64, perChannel bool) ([]float64, error) {
	N, C := x.Shape[0], x.Shape[1]
	spatial := kernels.Prod(x.Shape[2:])
	cpg := C / groups
	size := cpg * spatial // elements per group
	y := make([]float64, len(xv))
	for b := 0; b < N; b++ {
		for g := 0; g < groups; g++ {
			base := (b*C + g*cpg) * spatial
			m, v := meanVar(size, func(j int) float64 { return xv[base+j] })
			r := 1 / math.Sqrt(v+eps)
			for j := 0; j < size; j++ {
				p := g
				if perChannel {
					p = g*cpg + j/spatial
				}
				y[base+j] = (xv[base+j]-m)*r*scale[p] + bias[p]
			}
		}
	}
	return y, nil
}

// ---- GroupNormalization ----

// groupNormKernel: opset 18 takes scale and bias per group, opset 21 per
// channel; since the two only coincide when C == num_groups (where they mean
// the same), the length of scale decides.
func groupNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	names := []string{"X", "scale", "bias"}
	for i, nm := range names {
		if err := checkFloat(n, kernels.Input(in, i), nm); err != nil {
			return nil, err
		}
	}
	x, scaleT, biasT := in[0], in[1], in[2]
	if x.Rank() < 2 {
		return nil, kernels.Invalidf(n, "X must have shape (N, C, ...), got %v", x.Shape)
	}
	if !n.HasAttr("num_groups") {
		return nil, kernels.Invalidf(n, "missing attribute num_groups")
	}
	g64 := n.AttrInt("num_groups", 0)
	C := x.Shape[1]
	if g64 <= 0 || g64 > int64(C) && C > 0 || C > 0 && int64(C)%g64 != 0 {
		return nil, kernels.Invalidf(n, "num_groups %d must divide the %d channels", g64, C)
	}
	if C == 0 {
		out, err := ctx.New(x.DType, x.Shape)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		return ctx.Outputs(out), nil
	}
	groups := int(g64)
	if scaleT.Len() != biasT.Len() || scaleT.Rank() != 1 || biasT.Rank() != 1 {
		return nil, kernels.Invalidf(n, "scale %v and bias %v must be 1-D of equal length", scaleT.Shape, biasT.Shape)
	}
	var perChannel bool
	switch scaleT.Len() {
	case C:
		perChannel = true
	case groups:
	default:
		return nil, kernels.Invalidf(n, "scale has %d elements, want %d (channels) or %d (groups)", scaleT.Len(), C, groups)
	}
	if ctx.Opset >= 21 && !perChannel {
		return nil, kernels.Invalidf(n, "scale has %d elements, want %d (one per channel)", scaleT.Len(), C)
	}
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	y, err := groupNorm(x, x.Float64s(), groups, eps, scaleT.Float64s(), biasT.Float64s(), perChannel)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	out, err := newFromFloat64(ctx, x.DType, x.Shape, y)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	return ctx.Outputs(out), nil
}
