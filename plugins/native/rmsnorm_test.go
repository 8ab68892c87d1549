package native

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestRMSNormGGMLOrder: native's SimplifiedLayerNormalization is ggml's
// order to the bit (squares in float32 summed in float64, the mean and
// 1/√(mean+ε) in float32, then (x·s)·scale), within 3e-7 relative of the
// float64 reference, and the reference runs where it declines (a second
// output, another axis).
func TestRMSNormGGMLOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, M = 5, 48
	x, g := make([]float32, rows*M), make([]float32, M)
	for i := range x {
		x[i] = (rng.Float32()*2 - 1) * 3
	}
	for i := range g {
		g[i] = 1 + (rng.Float32()*2-1)/16
	}
	n := &graph.Node{Name: "norm", OpType: "SimplifiedLayerNormalization", Outputs: []string{"y"},
		Attrs: map[string]*graph.Attribute{"epsilon": {Name: "epsilon", Type: graph.AttrFloat, F: 1e-6}, "axis": {Name: "axis", Type: graph.AttrInt, I: -1}}}
	in := []*graph.Tensor{graph.MustFromSlice([]int{1, rows, M}, x), graph.MustFromSlice([]int{M}, g)}
	ctx := &kernels.Context{Context: context.Background(), Opset: 17}
	got, err := rmsNormKernel()(ctx, n, in)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := kernels.Lookup("", "SimplifiedLayerNormalization")
	want, err := ref.Kernel(ctx, n, in)
	if err != nil {
		t.Fatal(err)
	}
	y, w := graph.Data[float32](got[0]), graph.Data[float32](want[0])
	for r := 0; r < rows; r++ {
		sum := 0.0
		for _, v := range x[r*M : (r+1)*M] {
			sum += float64(float32(v * v))
		}
		s := 1 / float32(math.Sqrt(float64(float32(sum/M)+1e-6)))
		for i := 0; i < M; i++ {
			at := r*M + i
			if e := (x[at] * s) * g[i]; math.Float32bits(y[at]) != math.Float32bits(e) {
				t.Fatalf("y[%d] = %v, ggml's order gives %v", at, y[at], e)
			}
			if d := math.Abs(float64(y[at] - w[at])); d > 3e-7*math.Abs(float64(w[at]))+1e-30 {
				t.Fatalf("y[%d] = %v, reference %v", at, y[at], w[at])
			}
		}
	}
	n.Outputs = []string{"y", "inv"}
	got, err = rmsNormKernel()(ctx, n, in)
	if err != nil || len(got) != 2 || got[1] == nil {
		t.Fatalf("with inv_std_var: %v %v, want the reference's two outputs", got, err)
	}
}
