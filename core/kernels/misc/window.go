package misc

import (
	miscops "github.com/switchyard-hal/switchyard/core/ops/misc"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	for _, op := range []string{"HannWindow", "HammingWindow", "BlackmanWindow"} {
		kernels.RegisterKernel("", op, windowKernel)
	}
	kernels.RegisterKernel("", "MelWeightMatrix", melKernel)
}

// windowValue evaluates the window at sample i with denominator den (N for
// periodic windows, N-1 for symmetric ones).
func windowValue(op string, i, den float64) float64 {
	x := 2 * math.Pi * i / den
	switch op {
	case "HannWindow":
		s := math.Sin(math.Pi * i / den)
		return s * s
	case "HammingWindow":
		const a = 25.0 / 46.0
		return a - (1-a)*math.Cos(x)
	}
	return 0.42 - 0.5*math.Cos(x) + 0.08*math.Cos(2*x)
}

// windowKernel generates a Hann, Hamming or Blackman window of the given
// size; periodic=1 (default) uses denominator N, periodic=0 uses N-1. A
// symmetric window of size 1 is [1].
func windowKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	size, err := scalarInt(n, kernels.Input(in, 0), "size")
	if err != nil {
		return nil, err
	}
	dt, err := miscops.OutDType(n)
	if err != nil {
		return nil, err
	}
	if size < 0 || size > math.MaxInt32 {
		return nil, kernels.Invalidf(n, "bad window size %d", size)
	}
	if _, err := graph.CheckAlloc(graph.Float64, []int{int(size)}); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	den := float64(size)
	if n.AttrInt("periodic", 1) == 0 {
		den = float64(size - 1)
	}
	vals := make([]float64, size)
	for i := range vals {
		if den == 0 {
			vals[i] = 1
			continue
		}
		vals[i] = windowValue(n.OpType, float64(i), den)
	}
	return wrap(floatsOut(ctx, n, dt, []int{int(size)}, vals))
}

// melKernel builds the [dft_length/2+1, num_mel_bins] matrix of triangular
// mel filters, following the ONNX reference: num_mel_bins+2 band edges
// equally spaced on the mel scale (mel = 2595*log10(1+hz/700)) with step
// (high-low)/(num_mel_bins+2), mapped to spectrogram bins by
// floor((dft_length+1)*hz/sample_rate).
func melKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	nmel, err := scalarInt(n, kernels.Input(in, 0), "num_mel_bins")
	if err != nil {
		return nil, err
	}
	dftLen, err := scalarInt(n, kernels.Input(in, 1), "dft_length")
	if err != nil {
		return nil, err
	}
	rate, err := scalarInt(n, kernels.Input(in, 2), "sample_rate")
	if err != nil {
		return nil, err
	}
	lo, err := scalarFloat(n, kernels.Input(in, 3), "lower_edge_hertz")
	if err != nil {
		return nil, err
	}
	hi, err := scalarFloat(n, kernels.Input(in, 4), "upper_edge_hertz")
	if err != nil {
		return nil, err
	}
	dt, err := miscops.OutDType(n)
	if err != nil {
		return nil, err
	}
	if nmel < 0 || nmel > math.MaxInt32 || dftLen < 0 || dftLen > math.MaxInt32 || rate <= 0 {
		return nil, kernels.Invalidf(n, "bad num_mel_bins %d, dft_length %d or sample_rate %d", nmel, dftLen, rate)
	}
	rows, cols := int(dftLen/2+1), int(nmel)
	if _, err := graph.CheckAlloc(graph.Float64, []int{rows, cols}); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	loMel := 2595 * math.Log10(1+lo/700)
	hiMel := 2595 * math.Log10(1+hi/700)
	step := (hiMel - loMel) / float64(cols+2)
	bins := make([]int, cols+2)
	for i := range bins {
		hz := 700 * (math.Pow(10, (float64(i)*step+loMel)/2595) - 1)
		b := math.Floor(float64(dftLen+1) * hz / float64(rate))
		if math.IsNaN(b) || b < 0 || b > float64(rows) {
			return nil, kernels.Invalidf(n, "mel band edge %g Hz falls outside the %d spectrogram bins", hz, rows)
		}
		bins[i] = int(b)
	}
	vals := make([]float64, rows*cols)
	for i := 0; i < cols; i++ {
		l, c, h := bins[i], bins[i+1], bins[i+2]
		if c >= rows {
			return nil, kernels.Invalidf(n, "mel band centre bin %d outside the %d spectrogram bins", c, rows)
		}
		if c < l || h < c {
			return nil, kernels.Invalidf(n, "mel band edges are not increasing (lower_edge_hertz > upper_edge_hertz?)")
		}
		if c == l {
			vals[c*cols+i] = 1
		} else {
			for j := l; j <= c; j++ {
				vals[j*cols+i] = float64(j-l) / float64(c-l)
			}
		}
		for j := c; j < h; j++ {
			vals[j*cols+i] = float64(h-j) / float64(h-c)
		}
	}
	return wrap(floatsOut(ctx, n, dt, []int{rows, cols}, vals))
}
