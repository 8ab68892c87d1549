package nn

import (
	"math/rand"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func benchTensor(r *rand.Rand, shape ...int) *graph.Tensor {
	n := kernels.Prod(shape)
	return graph.MustFromSlice(shape, randF32(r, n))
}

// BenchmarkMatMul512 multiplies two 512×512 float32 matrices.
func BenchmarkMatMul512(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x, y := benchTensor(r, 512, 512), benchTensor(r, 512, 512)
	node := &graph.Node{OpType: "MatMul", Inputs: []string{"x", "y"}, Outputs: []string{"z"}}
	ctx := &kernels.Context{Opset: 13}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := matMulKernel(ctx, node, []*graph.Tensor{x, y}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*512*512*512*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkConv3x3 is a ResNet-style 3×3 convolution: X 1×64×56×56,
// W 64×64×3×3, pads 1.
func BenchmarkConv3x3(b *testing.B) {
	r := rand.New(rand.NewSource(1))
	x, w := benchTensor(r, 1, 64, 56, 56), benchTensor(r, 64, 64, 3, 3)
	node := &graph.Node{OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
		Attrs: map[string]*graph.Attribute{
			"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}},
		}}
	ctx := &kernels.Context{Opset: 22}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := convKernel(ctx, node, []*graph.Tensor{x, w}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*64*64*9*56*56*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
