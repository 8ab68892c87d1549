package executorch_test

import (
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestCadenceConv runs the Cadence quantize → quantized_conv2d_nchw →
// dequantize program and checks it against a float64 convolution of the
// same quantized input and the program's own int8 weights and int32 bias:
// each output must be that value quantized to the output scale (one step
// of slack for float32 accumulation at rounding ties).
func TestCadenceConv(t *testing.T) {
	const (
		inScale   = 0.030731072649359703
		inZP      = 2
		biasScale = 1.987867986592948e-05
		outScale  = 0.017547184601426125
	)
	ir, err := executorch.LoadFile(shared.Path(t, "testdata/executorch/more/cadence_demo_model.pte"), "", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, b := ir.Graph.Initializers["const0"], ir.Graph.Initializers["const1"]
	if w == nil || b == nil || len(w.Shape) != 4 || w.Shape[0] != 64 || w.Shape[2] != 7 {
		t.Fatalf("weights %v bias %v", w, b)
	}
	x := ramp([]int{1, 3, 224, 224}, func(i int) float32 { return float32((i*7919)%2001)/1000 - 1 })
	got := run(t, "more/cadence_demo_model.pte", "", nil, x)[0].Float64s()
	xs, ws, bs := x.Float64s(), w.Float64s(), b.Float64s()
	inv := 1 / float32(inScale)
	q := make([]float64, len(xs))
	for i, v := range xs {
		q[i] = math.Min(math.Max(inZP+math.RoundToEven(float64(inv*float32(v))), -128), 127)
	}
	checked := 0
	for o := 0; o < 64*112*112; o += 997 {
		oc, oy, ox := o/(112*112), (o/112)%112, o%112
		acc := bs[oc]
		for c := 0; c < 3; c++ {
			for ky := 0; ky < 7; ky++ {
				for kx := 0; kx < 7; kx++ {
					iy, ix := 2*oy-3+ky, 2*ox-3+kx
					if iy < 0 || iy >= 224 || ix < 0 || ix >= 224 {
						continue
					}
					acc += (q[(c*224+iy)*224+ix] - inZP) * ws[((oc*3+c)*7+ky)*7+kx]
				}
			}
		}
		want := math.Min(math.Max(math.RoundToEven(biasScale*acc/outScale), -128), 127) * outScale
		if math.Abs(got[o]-want) > 1.01*outScale {
			t.Fatalf("output %d: got %v, want %v", o, got[o], want)
		}
		checked++
	}
	t.Logf("%d sampled outputs within one quantization step", checked)
}
