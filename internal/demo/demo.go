// Package demo builds the small model that `switchyard run` executes when
// no model is given: a digit-classifier-shaped CNN (Conv → Relu → MaxPool →
// Conv → Relu → GlobalAveragePool → Flatten → Gemm → Softmax) over a
// 1×1×28×28 input, with weights from a fixed seed. It is serialised as
// ONNX and loaded through the same importer as any model file.
package demo

import (
	"math/rand/v2"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

// InputName and OutputName are the demo model's input and output.
const (
	InputName  = "image"
	OutputName = "probabilities"
)

func weights(rng *rand.Rand, scale float32, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = (rng.Float32()*2 - 1) * scale
	}
	return graph.MustFromSlice(shape, d)
}

// Model returns the demo model's IR.
func Model() *graph.Model {
	rng := rand.New(rand.NewPCG(7, 11))
	ints := func(name string, v ...int64) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
	}
	g := &graph.Graph{
		Name:    "switchyard_demo",
		Inputs:  []graph.ValueInfo{{Name: InputName, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "batch"}, {Value: 1}, {Value: 28}, {Value: 28}}}}},
		Outputs: []graph.ValueInfo{{Name: OutputName, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "batch"}, {Value: 10}}}}},
		Initializers: map[string]*graph.Tensor{
			"conv1.w": weights(rng, 0.5, 8, 1, 3, 3), "conv1.b": weights(rng, 0.1, 8),
			"conv2.w": weights(rng, 0.2, 16, 8, 3, 3), "conv2.b": weights(rng, 0.1, 16),
			"fc.w": weights(rng, 0.3, 10, 16), "fc.b": weights(rng, 0.1, 10),
		},
		Nodes: []*graph.Node{
			{Name: "conv1", OpType: "Conv", Inputs: []string{InputName, "conv1.w", "conv1.b"}, Outputs: []string{"c1"}, Attrs: map[string]*graph.Attribute{"pads": ints("pads", 1, 1, 1, 1)}},
			{Name: "relu1", OpType: "Relu", Inputs: []string{"c1"}, Outputs: []string{"r1"}},
			{Name: "pool1", OpType: "MaxPool", Inputs: []string{"r1"}, Outputs: []string{"p1"}, Attrs: map[string]*graph.Attribute{"kernel_shape": ints("kernel_shape", 2, 2), "strides": ints("strides", 2, 2)}},
			{Name: "conv2", OpType: "Conv", Inputs: []string{"p1", "conv2.w", "conv2.b"}, Outputs: []string{"c2"}, Attrs: map[string]*graph.Attribute{"pads": ints("pads", 1, 1, 1, 1)}},
			{Name: "relu2", OpType: "Relu", Inputs: []string{"c2"}, Outputs: []string{"r2"}},
			{Name: "gap", OpType: "GlobalAveragePool", Inputs: []string{"r2"}, Outputs: []string{"g"}},
			{Name: "flatten", OpType: "Flatten", Inputs: []string{"g"}, Outputs: []string{"f"}},
			{Name: "fc", OpType: "Gemm", Inputs: []string{"f", "fc.w", "fc.b"}, Outputs: []string{"logits"}, Attrs: map[string]*graph.Attribute{"transB": {Name: "transB", Type: graph.AttrInt, I: 1}}},
			{Name: "softmax", OpType: "Softmax", Inputs: []string{"logits"}, Outputs: []string{OutputName}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 1}}},
		},
	}
	return &graph.Model{IRVersion: 8, ProducerName: "switchyard-demo", Opsets: []graph.Opset{{Domain: "", Version: 17}}, Graph: g}
}

// Bytes returns the demo model serialised as ONNX.
func Bytes() []byte { return onnx.Encode(Model()) }

// Input returns a deterministic 1×1×28×28 input: a bright diagonal stroke.
func Input() *graph.Tensor {
	d := make([]float32, 28*28)
	for y := 0; y < 28; y++ {
		for x := 0; x < 28; x++ {
			if dx := x - y; dx >= -1 && dx <= 1 && y > 3 && y < 24 {
				d[y*28+x] = 1
			}
		}
	}
	return graph.MustFromSlice([]int{1, 1, 28, 28}, d)
}
