package llama_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

// TestPeerDumpIntermediates is a diagnostic, not a check: with
// SWITCHYARD_PEER_DUMP_MODEL=FILE.gguf and SWITCHYARD_PEER_DUMP_OUT=DIR it
// runs the teacher-forced sequence of the peer tests through the decoder
// graph of FILE on native's integer path (as TestLlamaCppPeerQuantized)
// with every float32 value of the chosen operators made a graph output,
// and writes each as raw float32 into DIR (NNNN_op_name.f32, with an
// index), to set beside llama.cpp's intermediate tensors and find the
// first step that differs. SWITCHYARD_PEER_DUMP_KV picks the cache type
// (default f32).
func TestPeerDumpIntermediates(t *testing.T) {
	path, out := os.Getenv("SWITCHYARD_PEER_DUMP_MODEL"), os.Getenv("SWITCHYARD_PEER_DUMP_OUT")
	if path == "" || out == "" {
		t.Skip("a diagnostic: set SWITCHYARD_PEER_DUMP_MODEL and SWITCHYARD_PEER_DUMP_OUT")
	}
	kv := os.Getenv("SWITCHYARD_PEER_DUMP_KV")
	if kv == "" {
		kv = "f32"
	}
	seq := peerSequence()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ir, err := formats.Decode(data, path, formats.Options{ContextLength: len(seq), KVCache: kv, Precision: "int8"})
	if err != nil {
		t.Fatal(err)
	}
	g := ir.Graph
	keep := map[string]bool{"SimplifiedLayerNormalization": true, "BlockQuantMatMul": true, "Add": true, "Mul": true,
		"GroupQueryAttention": true, "Sigmoid": true, "Gelu": true, "Tanh": true, "Split": true, "GGMLSwiGLU": true}
	var index []string
	for _, n := range g.Nodes {
		if !keep[n.OpType] {
			continue
		}
		for _, o := range n.Outputs {
			if o == "" || strings.HasPrefix(o, "present_") {
				continue
			}
			g.Outputs = append(g.Outputs, graph.ValueInfo{Name: o, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}})
			index = append(index, n.OpType+" "+o)
		}
	}
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Precision: switchyard.PrecisionInt8})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	m, err := eng.OpenBytes(ctx, onnx.Encode(ir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := switchyard.Tensors{}
	ids := make([]int64, len(seq))
	for i, id := range seq {
		ids[i] = int64(id)
	}
	if in["input_ids"], err = switchyard.NewTensor([]int{1, len(seq)}, ids); err != nil {
		t.Fatal(err)
	}
	in["past_sequence_length"], _ = switchyard.NewTensor([]int{1}, []int32{0})
	in["logits_rows"], _ = switchyard.NewTensor([]int{1}, []int64{0})
	for _, vi := range m.Inputs() {
		if strings.HasPrefix(vi.Name, "past_key") || strings.HasPrefix(vi.Name, "past_value") {
			if in[vi.Name], err = switchyard.Zeros(vi.DType, vi.Shape); err != nil {
				t.Fatal(err)
			}
		}
	}
	res, err := m.Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	write := func(i int, op, name string) {
		if res[name].DType() != switchyard.Float32 {
			return
		}
		v, err := switchyard.Values[float32](res[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fn := fmt.Sprintf("%04d_%s_%s.f32", i, op, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(filepath.Join(out, fn), rawBytes(v), 0o644); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %v", fn, res[name].Shape()))
	}
	for i, s := range index {
		op, name, _ := strings.Cut(s, " ")
		write(i, op, name)
	}
	write(len(index), "logits", "logits")
	if err := os.WriteFile(filepath.Join(out, "index.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
