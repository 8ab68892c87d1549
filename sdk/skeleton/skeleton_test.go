package skeleton

import (
	"context"
	"errors"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

func TestSkeletonRegistersAndDeclines(t *testing.T) {
	r := hal.NewRegistry()
	if err := r.Register(Factory()); err != nil {
		t.Fatal(err)
	}
	d, err := r.Open(context.Background(), Name)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g := &graph.Graph{
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	vs, err := d.Supports(context.Background(), sg)
	if err != nil || len(vs) != 1 || vs[0].Supported || vs[0].Reason == "" {
		t.Fatalf("verdicts %v, %v", vs, err)
	}
	if _, err := d.Compile(context.Background(), sg, nil); !errors.Is(err, hal.ErrUnsupported) {
		t.Fatalf("compile: %v", err)
	}
}
