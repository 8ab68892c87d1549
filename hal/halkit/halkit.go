// Package halkit is what a backend built on core/ops (and not on the
// reference kernels) needs to speak the HAL: per-node support verdicts with
// reasons, walked through nested graphs, and the hand-over of results into
// caller-owned outputs. It links no kernel; plugins/cpu uses it with the
// reference kernels' own check.
package halkit

import (
	"errors"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
)

// Check reports why a node cannot be taken at the given opset, or nil
// (ops.CheckNode; kernels.CheckNode for the reference kernels).
type Check func(n *graph.Node, opset int64) error

// Allow further restricts the claimed nodes: false with a reason declines.
type Allow func(n *graph.Node) (bool, string)

// Verdicts claims every node whose op has a schema in core/ops at the
// subgraph's opset with a valid arity (for If/Loop/Scan: every node of its
// bodies too); allow, when non-nil, restricts the claim further. Import
// core/ops/all (or the groups you take) for the schemas.
func Verdicts(sg *hal.Subgraph, allow Allow) []hal.Verdict {
	return VerdictsWith(sg, ops.CheckNode, allow)
}

// VerdictsWith is Verdicts with another per-node check: one verdict per
// node of sg.Graph, in order, each decline with the check's or allow's
// reason.
func VerdictsWith(sg *hal.Subgraph, check Check, allow Allow) []hal.Verdict {
	out := make([]hal.Verdict, len(sg.Graph.Nodes))
	for i, n := range sg.Graph.Nodes {
		if reason := unsupported(sg, n, check, allow); reason != "" {
			out[i] = hal.Verdict{Reason: reason}
		} else {
			out[i] = hal.Verdict{Supported: true}
		}
	}
	return out
}

func unsupported(sg *hal.Subgraph, n *graph.Node, check Check, allow Allow) string {
	if allow != nil {
		if ok, why := allow(n); !ok {
			return why
		}
	}
	if err := check(n, sg.OpsetVersion(n.Domain)); err != nil {
		return err.Error()
	}
	for _, a := range n.Attrs {
		subs := a.Subgraphs()
		for _, g := range subs {
			for _, inner := range g.Nodes {
				if r := unsupported(sg, inner, check, allow); r != "" {
					return fmt.Sprintf("nested graph %q of attribute %q: %s", g.Name, a.Name, r)
				}
			}
		}
	}
	return ""
}

// FillOutputs moves results (by graph output name) into caller-owned
// outputs: copied in place when the caller allocated Data (dtype and shape
// must match, else InvalidArgument), handed over otherwise.
func FillOutputs(g *graph.Graph, res map[string]*graph.Tensor, outputs []*graph.Tensor) error {
	for i, o := range g.Outputs {
		if i >= len(outputs) {
			break
		}
		got := res[o.Name]
		dst := outputs[i]
		if got == nil {
			return errors.New("missing output " + o.Name)
		}
		if got == dst {
			continue // written in place
		}
		if dst.Data != nil {
			if dst.DType != got.DType || !graph.SameShape(dst.Shape, got.Shape) {
				return hal.Errorf(hal.CodeInvalidArgument, "output %q is %v%v, caller allocated %v%v", o.Name, got.DType, got.Shape, dst.DType, dst.Shape)
			}
			graph.CopyData(dst.Data, got.Data)
			continue
		}
		*dst = *got
	}
	return nil
}

// InPlace converts an exec.Program's in-place outputs
// (Program.InPlaceOutputs) to the HAL's pairs, for a backend's
// hal.InPlaceExecutable.
func InPlace(pairs []ops.InPlace) []hal.InPlace {
	var out []hal.InPlace
	for _, ip := range pairs {
		out = append(out, hal.InPlace{Output: ip.Output, Input: ip.Input})
	}
	return out
}
