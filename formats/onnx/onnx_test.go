package onnx

import (
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func tinyModel() *graph.Model {
	g := &graph.Graph{
		Name:    "tiny",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}, {Value: 3}}}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Initializers: map[string]*graph.Tensor{
			"w": graph.MustFromSlice([]int{3}, []float32{1, -2, 3.5}),
			"i": graph.MustFromSlice([]int{2}, []int64{7, -9}),
			"h": graph.MustFromSlice([]int{1}, []graph.F16{graph.F16FromFloat32(1.5)}),
			"b": graph.MustFromSlice([]int{2}, []bool{true, false}),
		},
		Nodes: []*graph.Node{
			{Name: "add", OpType: "Add", Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{
				"f":  {Name: "f", Type: graph.AttrFloat, F: 0.25},
				"is": {Name: "is", Type: graph.AttrInts, Ints: []int64{1, -1, 3}},
				"s":  {Name: "s", Type: graph.AttrString, S: "hello"},
			}},
		},
	}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

func TestRoundTrip(t *testing.T) {
	m, err := Decode(Encode(tinyModel()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.IRVersion != 8 || m.OpsetVersion("") != 17 {
		t.Fatalf("ir %d opset %d", m.IRVersion, m.OpsetVersion(""))
	}
	g := m.Graph
	if g.Name != "tiny" || len(g.Nodes) != 1 || len(g.Inputs) != 1 || len(g.Outputs) != 1 {
		t.Fatalf("graph %+v", g)
	}
	if s := g.Inputs[0].Type.Shape.String(); s != "[n,3]" {
		t.Errorf("input shape %s", s)
	}
	n := g.Nodes[0]
	if n.AttrFloat("f", 0) != 0.25 || n.AttrString("s", "") != "hello" {
		t.Errorf("attrs %+v", n.Attrs)
	}
	if is := n.AttrInts("is", nil); len(is) != 3 || is[1] != -1 {
		t.Errorf("ints %v", is)
	}
	w := graph.Data[float32](g.Initializers["w"])
	if w[1] != -2 || w[2] != 3.5 {
		t.Errorf("w %v", w)
	}
	if i := graph.Data[int64](g.Initializers["i"]); i[1] != -9 {
		t.Errorf("i %v", i)
	}
	if h := graph.Data[graph.F16](g.Initializers["h"]); h[0].Float32() != 1.5 {
		t.Errorf("h %v", h)
	}
	if b := graph.Data[bool](g.Initializers["b"]); !b[0] || b[1] {
		t.Errorf("b %v", b)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
}

// hostile builds a TensorProto with the given dims and raw data.
func hostile(dims []int64, dt graph.DType, raw []byte) []byte {
	var b []byte
	for _, d := range dims {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(d))
	}
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(dt))
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	return protowire.AppendBytes(b, raw)
}

func TestHostileTensors(t *testing.T) {
	// 10^12 elements declared, 16 bytes present: refused before allocation
	_, _, err := DecodeTensor(hostile([]int64{1000000, 1000000}, graph.Float32, make([]byte, 16)))
	if !errors.Is(err, graph.ErrTooLarge) {
		t.Fatalf("10^12 elements: got %v, want ErrTooLarge", err)
	}
	// byte length disagrees with the shape
	_, _, err = DecodeTensor(hostile([]int64{4}, graph.Float32, make([]byte, 12)))
	if err == nil || !strings.Contains(err.Error(), "needs 16 bytes") {
		t.Fatalf("short raw data: got %v", err)
	}
	// negative dims, overflow
	_, _, err = DecodeTensor(hostile([]int64{-1}, graph.Float32, nil))
	if err == nil {
		t.Fatal("negative dim accepted")
	}
	_, _, err = DecodeTensor(hostile([]int64{math.MaxInt64, math.MaxInt64}, graph.Float32, nil))
	if err == nil {
		t.Fatal("overflowing dims accepted")
	}
	// unsupported dtypes are classified
	_, _, err = DecodeTensor(hostile([]int64{1}, graph.Complex64, make([]byte, 8)))
	if !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("complex64: got %v", err)
	}
	// the same checks apply to initializers inside a model
	m := tinyModel()
	b := Encode(m)
	g := appendMessage(nil, 5, hostile([]int64{1 << 40}, graph.Float32, nil))
	b = appendMessage(b, 7, g) // a second graph field: merged by protobuf rules? we take the last
	if _, err := Decode(b, Options{}); err == nil {
		t.Fatal("model with a 2^40-element initializer accepted")
	}
}

func TestTruncatedModelsNeverPanic(t *testing.T) {
	b := Encode(tinyModel())
	for i := 0; i < len(b); i++ {
		_, _ = Decode(b[:i], Options{}) // must not panic
	}
}

func TestRejectsNonModels(t *testing.T) {
	for _, in := range [][]byte{nil, []byte("not a model"), {0x08, 0x01}} {
		if _, err := Decode(in, Options{}); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
}

func TestExternalDataEscapes(t *testing.T) {
	tp := &tensorProto{dtype: graph.Float32, dims: []int64{1}, location: 1, external: map[string]string{"location": "../../etc/passwd"}}
	if _, err := tp.toTensor(tensorOptions{baseDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Fatalf("got %v", err)
	}
}
