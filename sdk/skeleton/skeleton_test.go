package skeleton

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/depcheck"
)

// TestSkeletonLinksNoKernel: the package vendors copy links neither the cpu
// backend nor any reference kernel, and its docs point at core/ops instead.
func TestSkeletonLinksNoKernel(t *testing.T) {
	if bad := depcheck.Forbidden(t, ".", depcheck.LinksKernels); len(bad) > 0 {
		t.Fatalf("sdk/skeleton links %v", bad)
	}
	src, err := os.ReadFile("skeleton.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "hal/halkit.Verdicts") || strings.Contains(string(src), "plugins/cpu.") {
		t.Fatal("skeleton.go should point vendors at hal/halkit, not at plugins/cpu")
	}
}

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
