package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func dims(v ...int64) graph.Shape {
	s := make(graph.Shape, len(v))
	for i, x := range v {
		if x < 0 {
			s[i] = graph.Dim{Value: -1}
		} else {
			s[i] = graph.Dim{Value: x}
		}
	}
	return s
}

// inConst returns input i's constant value or nil.
func inConst(in []ops.InferInput, i int) *graph.Tensor {
	if i < len(in) {
		return in[i].Const
	}
	return nil
}
