// Package cpu is the reference CPU kernels as a HAL backend named "cpu": it
// is always available, claims every node it has a kernel for, and is the
// fallback for everything no other backend takes. Importing the package
// registers it with hal.Default.
package cpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all" // the reference kernels
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/halkit"
)

// Name is the backend's registry name.
const Name = "cpu"

// Version is the backend's own version.
const Version = "1.0.0"

// Info describes the backend.
func Info() hal.Info {
	return hal.Info{
		Name: Name, Vendor: "Switchyard", Version: Version,
		HAL:         hal.VersionRange{Min: hal.Version{Major: 1}, Max: hal.Current},
		Device:      hal.DeviceCPU,
		Description: fmt.Sprintf("reference CPU kernels (exact ONNX semantics), %s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

func init() {
	if err := hal.Register(hal.Factory{Info: Info(), Kind: hal.LoadLinked, Open: func(ctx context.Context) (hal.Backend, error) { return New(), nil }}); err != nil {
		panic(err)
	}
}

// Backend is the reference kernels behind the HAL contract.
type Backend struct{}

// New returns the backend (it holds no resources).
func New() *Backend { return &Backend{} }

func (b *Backend) Info() hal.Info { return Info() }

// Capabilities lists every registered reference kernel.
func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	var caps hal.Capabilities
	for _, s := range kernels.All() {
		caps.Ops = append(caps.Ops, hal.OpCapability{Domain: s.Domain, OpType: s.OpType, MinOpset: s.MinOpset, MaxOpset: s.MaxOpset, DTypes: s.Types})
	}
	caps.Layouts = []string{"NCHW"}
	caps.MaxTensorBytes = graph.MaxTensorBytes
	caps.ControlFlow = true
	return caps, nil
}

// Supports claims every node whose op (and, for If/Loop/Scan, every op of
// its bodies) has a reference kernel at the subgraph's opset.
func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	return Verdicts(sg, nil), nil
}

// Verdicts computes the cpu backend's verdicts; allow, when non-nil,
// further restricts the claimed op types (the simulation backend uses it).
// It is halkit.VerdictsWith with the reference kernels' check; a backend
// that does not run the reference kernels uses halkit.Verdicts, which links
// none of them.
func Verdicts(sg *hal.Subgraph, allow func(n *graph.Node) (bool, string)) []hal.Verdict {
	return halkit.VerdictsWith(sg, kernels.CheckNode, allow)
}

// Compile compiles the subgraph onto the reference executor.
func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	for i, v := range Verdicts(sg, nil) {
		if !v.Supported {
			return nil, hal.Errorf(hal.CodeUnsupported, "node %d (%s): %s", i, sg.Graph.Nodes[i].Label(), v.Reason)
		}
	}
	p, err := exec.Compile(sg.Graph, exec.Options{Opsets: sg.Opsets})
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%v", err)
	}
	return &Executable{Program: p}, nil
}

// Close is a no-op.
func (b *Backend) Close() error { return nil }

// Executable runs a compiled subgraph on the reference kernels.
type Executable struct {
	Program *exec.Program
}

// Execute binds inputs by the subgraph's input order and fills outputs.
func (e *Executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	g := e.Program.Graph()
	feeds := make(map[string]*graph.Tensor, len(inputs))
	for i, in := range g.Inputs {
		if i < len(inputs) && inputs[i] != nil {
			feeds[in.Name] = inputs[i]
		}
	}
	into := map[string]*graph.Tensor{}
	for i, o := range g.Outputs {
		if i < len(outputs) && outputs[i] != nil && outputs[i].Data != nil {
			into[o.Name] = outputs[i]
		}
	}
	res, err := e.Program.RunInto(ctx, feeds, into)
	if err != nil {
		if errors.Is(err, kernels.ErrInvalid) && len(into) > 0 {
			return hal.Errorf(hal.CodeInvalidArgument, "%v", err)
		}
		return err
	}
	return FillOutputs(g, res, outputs)
}

// InPlaceOutputs lists the outputs the reference kernels update in the
// memory of an input (hal.InPlaceExecutable; exec.Program.InPlaceOutputs).
func (e *Executable) InPlaceOutputs() []hal.InPlace {
	return halkit.InPlace(e.Program.InPlaceOutputs())
}

// FillOutputs moves results into caller-owned outputs: copied in place when
// the caller allocated Data, handed over otherwise (halkit.FillOutputs).
func FillOutputs(g *graph.Graph, res map[string]*graph.Tensor, outputs []*graph.Tensor) error {
	return halkit.FillOutputs(g, res, outputs)
}

// Release is a no-op.
func (e *Executable) Release() error { return nil }
