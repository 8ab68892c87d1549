package partitioner

import (
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func TestComputesInt8(t *testing.T) {
	cases := []struct {
		n    graph.Node
		want bool
	}{
		{graph.Node{Domain: "switchyard.quant", OpType: "Conv2D"}, true},
		{graph.Node{Domain: "switchyard.quant", OpType: "Dequantize"}, false},
		{graph.Node{OpType: "QLinearConv"}, true},
		{graph.Node{Domain: "com.microsoft", OpType: "QLinearAdd"}, true},
		{graph.Node{OpType: "Conv"}, false},
		{graph.Node{Domain: "other", OpType: "QLinearConv"}, false},
	}
	for _, c := range cases {
		if got := ComputesInt8(&c.n); got != c.want {
			t.Errorf("%s:%s: %v, want %v", c.n.Domain, c.n.OpType, got, c.want)
		}
	}
	p := &Plan{Nodes: []NodePlacement{{OpType: "Conv2D", Backend: "cpu", Int8: true}, {OpType: "Reshape", Backend: "native"}}}
	txt := p.Text()
	if !strings.Contains(txt, "int8 compute: 1 node(s) (cpu=1); other nodes (float, data movement, (de)quantize): 1 [Reshape on native ×1]") || !strings.Contains(txt, "Conv2D [int8]") {
		t.Errorf("report lacks the int8 line or mark:\n%s", txt)
	}
	if strings.Contains((&Plan{Nodes: []NodePlacement{{OpType: "Conv"}}}).Text(), "int8") {
		t.Error("a float plan mentions int8")
	}
}
