// Package skeleton is a backend to start a new one from. It compiles,
// registers, speaks the current HAL version and answers Unsupported
// everywhere — with a reason, so a placement report says why nothing went
// to it.
//
// For a device with memory of its own (HAL 1.1: buffers, fences,
// asynchronous enqueue), start from sdk/skeleton11 instead.
//
// To start a new backend:
//
//  1. Copy this directory to plugins/<yourname> (linked in) or to your own
//     module (a plugin process), and rename the package and Name.
//
//  2. Fill in Info: vendor, version, device kind, the HAL range you speak.
//
//  3. Capabilities: list the ops, dtypes and limits you take, as data.
//
//  4. Supports: return one Verdict per node, in order; every declined node
//     gets a reason naming the op, dtype, attribute or limit.
//     hal/halkit.Verdicts does the per-node walk (nested graphs
//     included) against the operator schemas, with your own restriction;
//     the schemas and their shape inference come from core/ops (import
//     core/ops/all, or the groups you take), which links no reference
//     kernel. Do not import plugins/cpu: it links every reference kernel.
//
//  5. Compile: turn the subgraph into your executable. Copy what you keep:
//     the subgraph is not yours after Compile returns. Claiming a node in
//     Supports is a promise that Compile takes it.
//
//  6. Execute: read inputs, write outputs in place when their Data is set,
//     fill them otherwise (hal/halkit.FillOutputs), honour ctx. Output
//     types come from the subgraph; for shapes known only from the inputs,
//     core/ops.Infer runs an op's shape inference.
//
//  7. Errors: return hal.Errorf(hal.CodeX, ...); a missing library or
//     device is CodeUnavailable with the reason.
//
//  8. Run the conformance suite against it, then either register it with
//     hal.Register (linked in) or serve it as a plugin process:
//
//     func main() { sdk.Serve(skeleton.New(), nil) }
//
//     and write a manifest (hal/manifest.Manifest) with the binary's sha256.
package skeleton

import (
	"context"

	"github.com/switchyard-hal/switchyard/hal"
)

// Name is the registry name; change it.
const Name = "skeleton"

// Backend answers Unsupported everywhere.
type Backend struct{}

// New returns the skeleton backend.
func New() *Backend { return &Backend{} }

// Factory registers the skeleton with a registry (hal.Register(Factory())).
func Factory() hal.Factory {
	return hal.Factory{Info: New().Info(), Kind: hal.LoadLinked, Open: func(ctx context.Context) (hal.Backend, error) { return New(), nil }}
}

func (b *Backend) Info() hal.Info {
	return hal.Info{Name: Name, Vendor: "you", Version: "0.0.0", HAL: hal.VersionRange{Min: hal.Current, Max: hal.Current},
		Device: hal.DeviceCPU, Description: "skeleton backend: takes nothing (start a new backend from sdk/skeleton)"}
}

func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	return hal.Capabilities{}, nil
}

func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	vs := make([]hal.Verdict, len(sg.Graph.Nodes))
	for i, n := range sg.Graph.Nodes {
		vs[i] = hal.Verdict{Reason: "skeleton backend implements no ops (" + n.OpType + ")"}
	}
	return vs, nil
}

func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	return nil, hal.Errorf(hal.CodeUnsupported, "skeleton backend compiles nothing")
}

func (b *Backend) Close() error { return nil }
