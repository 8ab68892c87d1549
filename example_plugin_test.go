package switchyard_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/halkit"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/internal/demo"
	"github.com/switchyard-hal/switchyard/sdk"
)

// servePluginEnv, when set, makes this test binary the plugin process of
// Example_pluginProcess instead of running tests (the manifest sets it).
const servePluginEnv = "SWITCHYARD_EXAMPLE_SERVE_RELU"

func TestMain(m *testing.M) {
	if os.Getenv(servePluginEnv) == "1" {
		// What a vendor's main does: sdk.Serve never returns.
		sdk.Serve(reluBackend{}, nil)
	}
	os.Exit(m.Run())
}

// reluBackend is a whole Go backend: it takes float32 Relu and nothing
// else, and says so for every node it declines.
type reluBackend struct{}

func (reluBackend) Info() hal.Info {
	return hal.Info{Name: "relu-plugin", Vendor: "example", Version: "1.0.0",
		HAL: hal.VersionRange{Min: hal.Current, Max: hal.Current}, Device: hal.DeviceCPU,
		Description: "float32 Relu in a plugin process"}
}

func (reluBackend) Capabilities(context.Context) (hal.Capabilities, error) {
	return hal.Capabilities{}, nil
}

func (reluBackend) Supports(_ context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	return halkit.Verdicts(sg, func(n *graph.Node) (bool, string) {
		if n.OpType != "Relu" {
			return false, "relu-plugin takes Relu only, not " + n.OpType
		}
		return true, ""
	}), nil
}

func (reluBackend) Compile(_ context.Context, sg *hal.Subgraph, _ hal.CompileOptions) (hal.Executable, error) {
	// The subgraph is not ours after Compile returns: keep copies of the
	// names we need.
	e := reluExe{g: &graph.Graph{}}
	for _, v := range sg.Graph.Inputs {
		e.g.Inputs = append(e.g.Inputs, graph.ValueInfo{Name: v.Name})
	}
	for _, v := range sg.Graph.Outputs {
		e.g.Outputs = append(e.g.Outputs, graph.ValueInfo{Name: v.Name})
	}
	for _, n := range sg.Graph.Nodes {
		if n.OpType != "Relu" || len(n.Inputs) != 1 || len(n.Outputs) != 1 {
			return nil, hal.Errorf(hal.CodeUnsupported, "relu-plugin cannot compile %s", n.OpType)
		}
		e.g.Nodes = append(e.g.Nodes, &graph.Node{OpType: n.OpType, Inputs: []string{n.Inputs[0]}, Outputs: []string{n.Outputs[0]}})
	}
	return e, nil
}

func (reluBackend) Close() error { return nil }

type reluExe struct{ g *graph.Graph }

func (e reluExe) Execute(ctx context.Context, in, out []*graph.Tensor) error {
	vals := map[string]*graph.Tensor{}
	for i, v := range e.g.Inputs {
		vals[v.Name] = in[i]
	}
	for _, n := range e.g.Nodes { // nodes come in topological order
		x, ok := vals[n.Inputs[0]].Data.([]float32)
		if !ok {
			return hal.Errorf(hal.CodeInvalidArgument, "relu-plugin: %s is not float32", n.Inputs[0])
		}
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = max(v, 0)
		}
		vals[n.Outputs[0]] = &graph.Tensor{DType: graph.Float32, Shape: vals[n.Inputs[0]].Shape, Data: y}
	}
	return halkit.FillOutputs(e.g, vals, out)
}

func (reluExe) Release() error { return nil }

// Serve a Go backend as a plugin process and run a model on it. A vendor's
// plugin binary is main() { sdk.Serve(backend, nil) }; here the test binary
// plays that part (TestMain above). The manifest names the binary, its
// sha256 (checked before every start) and the HAL versions it speaks; the
// host finds it on the plugin path, starts it, and places on it the nodes it
// claims.
func Example_pluginProcess() {
	ctx := context.Background()
	bin, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	sum, err := manifest.FileSHA256(bin)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "plugins")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	m := fmt.Sprintf(`{"name": "relu-plugin", "version": "1.0.0", "kind": "process",
	  "path": %q, "sha256": %q, "hal": {"min": "1.0", "max": "1.1"},
	  "env": {%q: "1"}}`, bin, sum, servePluginEnv)
	if err := os.WriteFile(filepath.Join(dir, "relu-plugin.json"), []byte(m), 0o644); err != nil {
		log.Fatal(err)
	}

	found := switchyard.Discover(&switchyard.DiscoverOptions{Registry: hal.NewRegistry(), PluginPath: []string{dir}})
	model, err := switchyard.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{
		Backends: []string{"relu-plugin"}, Discovered: found,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	var on []string
	for _, n := range model.Plan().Nodes {
		on = append(on, n.OpType+"@"+n.Backend)
	}
	fmt.Println(strings.Join(on, " "))

	outs, err := model.Run(ctx, switchyard.Tensors{"image": digit()})
	if err != nil {
		log.Fatal(err)
	}
	probs, err := switchyard.Values[float32](outs["probabilities"])
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d probabilities, p[0]=%.3f\n", len(probs), probs[0])
	// Output:
	// Conv@cpu Relu@relu-plugin MaxPool@cpu Conv@cpu Relu@relu-plugin GlobalAveragePool@cpu Flatten@cpu Gemm@cpu Softmax@cpu
	// 10 probabilities, p[0]=0.112
}
