package conformance

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/internal/demo"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
)

// modelCases: the embedded demo model (batch 1 with its own input, batch 3
// with seeded inputs) and every model directory of ../shared/testdata/models.
// They run non-strict: nodes the backend declines stay on the reference
// kernels, the result records how many were delegated, and a model the
// backend takes no node of is "not delegated".
func modelCases(sharedRoot string) []Case {
	cases := []Case{
		{ID: "model/demo", Source: SourceModel, Doc: "the embedded demo CNN (Conv, Relu, MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax) on its diagonal-stroke input", build: func() (*modelCase, error) {
			return &modelCase{model: demo.Bytes(), inputs: map[string]*graph.Tensor{demo.InputName: demo.Input()}, order: []string{demo.InputName}}, nil
		}},
		{ID: "model/demo-batch3", Source: SourceModel, Doc: "the demo CNN with a batch of 3 seeded random images (the symbolic batch dimension)", build: func() (*modelCase, error) {
			rng := rand.New(rand.NewPCG(seedOf("model/demo-batch3"), 1))
			x := make([]float32, 3*28*28)
			for i := range x {
				x[i] = rng.Float32()
			}
			return &modelCase{model: demo.Bytes(), inputs: map[string]*graph.Tensor{demo.InputName: graph.MustFromSlice([]int{3, 1, 28, 28}, x)}, order: []string{demo.InputName}}, nil
		}},
	}
	for _, dir := range testDirs(sharedRoot, "testdata/models") {
		dir := dir
		cases = append(cases, Case{ID: "model/" + filepath.Base(dir), Source: SourceModel, Doc: "../shared/testdata/models/" + filepath.Base(dir) + " on its test_data_set_0 inputs, against the reference kernels", build: func() (*modelCase, error) {
			return dirCase(dir, false)
		}})
	}
	return cases
}

// externalCases: the ONNX backend node tests, each against the expected
// outputs that come with it. Quick runs a deterministic tenth of them.
func externalCases(sharedRoot string, level Level) []Case {
	var cases []Case
	for _, dir := range testDirs(sharedRoot, "testdata/onnx-node") {
		dir := dir
		id := "onnx-node/" + filepath.Base(dir)
		if level == Quick && shardOf(id, 10) != 0 {
			continue
		}
		cases = append(cases, Case{ID: id, Source: SourceExternal, build: func() (*modelCase, error) { return dirCase(dir, true) }})
	}
	return cases
}

// testDirs lists directories under root/rel holding a model.onnx.
func testDirs(root, rel string) []string {
	if root == "" {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(root, rel))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		d := filepath.Join(root, rel, e.Name())
		if _, err := os.Stat(filepath.Join(d, "model.onnx")); e.IsDir() && err == nil {
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}

// dirCase reads an ONNX-test-layout directory: model.onnx and
// test_data_set_0's inputs (and, when expected, outputs).
func dirCase(dir string, expected bool) (*modelCase, error) {
	path := filepath.Join(dir, "model.onnx")
	ir, err := onnx.LoadFile(path)
	if err != nil {
		return nil, err
	}
	set := filepath.Join(dir, "test_data_set_0")
	ins, err := onnxtest.ReadSet(set, "input")
	if err != nil {
		return nil, err
	}
	mc := &modelCase{path: path, inputs: map[string]*graph.Tensor{}}
	var declared []string
	for _, in := range ir.Graph.Inputs {
		if _, isInit := ir.Graph.Initializers[in.Name]; !isInit {
			declared = append(declared, in.Name)
		}
	}
	if len(ins) > len(declared) {
		return nil, fmt.Errorf("%d input files for %d model inputs", len(ins), len(declared))
	}
	for i, t := range ins {
		mc.inputs[declared[i]] = t
		mc.order = append(mc.order, declared[i])
	}
	for _, n := range ir.Graph.Nodes {
		if n.OpType != "Constant" {
			mc.tolOp = n.OpType
			break
		}
	}
	if expected {
		if mc.expected, err = onnxtest.ReadSet(set, "output"); err != nil {
			return nil, err
		}
		if mc.expected == nil {
			mc.expected = []*graph.Tensor{}
		}
	} else {
		mc.tolOp = ""
	}
	return mc, nil
}
