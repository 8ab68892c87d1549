package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/partitioner/partitionertest"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

func simDevice(t testing.TB, opts sim.Options) *hal.Device {
	t.Helper()
	d, err := hal.NewDevice(sim.New(opts), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func equalOutputs(a, b map[string]*graph.Tensor) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d vs %d outputs", len(a), len(b))
	}
	for k, x := range a {
		y := b[k]
		if y == nil || x.String() != y.String() {
			return fmt.Errorf("output %q: %v vs %v", k, x, y)
		}
		for i := 0; i < x.Len(); i++ {
			if fx, fy := x.Float64At(i), y.Float64At(i); fx != fy && !(fx != fx && fy != fy) {
				return fmt.Errorf("output %q element %d: %v vs %v", k, i, fx, fy)
			}
		}
	}
	return nil
}

// Random DAGs × random claimed op sets: every node placed once, every
// partition convex, outputs identical to the cpu-only run.
func TestRandomDAGsThroughBackends(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	allOps := []string{"Relu", "Neg", "Sigmoid", "Abs", "Tanh", "Add", "Mul", "Sub", "Max"}
	ctx := context.Background()
	for trial := 0; trial < 120; trial++ {
		g := partitionertest.RandomDAG(rng, 2+rng.IntN(40))
		model := &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
		b := onnx.Encode(model)
		ref, err := runtime.LoadBytes(ctx, b, nil)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		var devs []*hal.Device
		for k := 0; k < 1+rng.IntN(2); k++ {
			var ops []string
			for _, op := range allOps {
				if rng.IntN(2) == 0 {
					ops = append(ops, op)
				}
			}
			devs = append(devs, simDevice(t, sim.Options{Name: fmt.Sprintf("sim%d", k), Ops: ops}))
		}
		m, err := runtime.LoadBytes(ctx, b, &runtime.Options{Backends: devs, Policy: partitioner.Policy{MinPartitionSize: rng.IntN(3)}})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		// the plan indexes the simplified graph the model runs
		if err := partitionertest.CheckPlan(m.IR().Graph, m.Plan()); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		x := graph.MustFromSlice([]int{4}, []float32{-1.5, 0, 0.25, 3})
		want, err := ref.Run(ctx, map[string]*graph.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Run(ctx, map[string]*graph.Tensor{"x": x})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if err := equalOutputs(want, got); err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, m.Plan().Text())
		}
	}
}

// The four real models with a simulated backend claiming Conv, Relu, Add,
// MatMul give the same outputs as cpu-only.
func TestModelsWithSimBackend(t *testing.T) {
	root := shared.Path(t, "testdata/models")
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	ctx := context.Background()
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			dev := simDevice(t, sim.Options{Ops: []string{"Conv", "Relu", "Add", "MatMul"}})
			ref, err := runtime.LoadDir(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			delegated := 0
			for _, p := range m.Plan().Partitions {
				if !p.Fallback {
					delegated++
				}
			}
			claimable := false
			for _, n := range m.IR().Graph.Nodes {
				switch n.OpType {
				case "Conv", "Relu", "Add", "MatMul":
					claimable = true
				}
			}
			// nested bodies (silero's If branches) are placed whole or left
			// on cpu, so a model whose claimable ops are all nested delegates nothing
			if claimable && delegated == 0 {
				t.Fatal("nothing was delegated")
			}
			ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*graph.Tensor{}
			for i, in := range m.Inputs() {
				if i < len(ins) {
					feeds[in.Name] = ins[i]
				}
			}
			want, err := ref.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			if err := equalOutputs(want, got); err != nil {
				t.Fatal(err)
			}
			calls := int64(0)
			for _, ps := range m.PartitionStats() {
				calls += ps.Calls
			}
			t.Logf("%d delegated partitions, %d partition calls", delegated, calls)
			if delegated > 0 && calls == 0 {
				t.Error("no partition was called")
			}
		})
	}
}

func demoLike(t *testing.T) []byte {
	t.Helper()
	g := &graph.Graph{
		Name:    "d",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2)}}},
		Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
			{OpType: "Neg", Inputs: []string{"y"}, Outputs: []string{"z"}},
		},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

func TestStrictListsUnplacedNodes(t *testing.T) {
	dev := simDevice(t, sim.Options{Ops: []string{"Relu"}})
	_, err := runtime.LoadBytes(context.Background(), demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{Strict: true}})
	if err == nil || !strings.Contains(err.Error(), "strict mode: 1 node(s)") || !strings.Contains(err.Error(), "sim: op Neg is not in the simulated set") {
		t.Fatalf("got %v", err)
	}
}

func TestFaultsSurfaceWithCodes(t *testing.T) {
	ctx := context.Background()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{2}, []float32{-1, 1})}
	// a dishonest backend: claims Relu, then refuses to compile it. In
	// strict mode the load fails; otherwise the nodes run on cpu, visibly.
	dev := simDevice(t, sim.Options{Ops: []string{"Relu", "Neg"}, Faults: sim.Faults{RefuseCompile: true}})
	_, err := runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{Strict: true}})
	if !errors.Is(err, hal.ErrUnsupported) || !strings.Contains(err.Error(), "compile refused") {
		t.Errorf("refuse compile, strict: %v", err)
	}
	dm, err := runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatalf("refuse compile, not strict: %v", err)
	}
	if got, err := dm.Run(ctx, x); err != nil || graph.Data[float32](got["z"])[0] != 0 {
		t.Fatalf("refuse compile, not strict: %v %v", got, err)
	}
	p := dm.Plan()
	if r := p.Partitions[0].Replaced; r == nil || !strings.Contains(r.Reason, "refused to compile") || p.Nodes[0].Backend != "cpu" {
		t.Errorf("the demotion is not in the report:\n%s", p.Text())
	}
	dev = simDevice(t, sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{FailExecute: true}})
	m, err := runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, x); !errors.Is(err, hal.ErrInternal) || !strings.Contains(err.Error(), "partition 0 on sim") {
		t.Errorf("fail execute: %v", err)
	}
	dev = simDevice(t, sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{ExecuteDelay: time.Second}})
	m, err = runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := m.Run(dctx, x); !errors.Is(err, hal.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "deadline") {
		t.Errorf("delay: %v", err)
	}
	if time.Since(start) > 500*time.Millisecond {
		t.Errorf("deadline not honoured: %v", time.Since(start))
	}
}

// BenchmarkDelegationOverhead compares one small graph run fully on the
// reference executor with the same graph whose nodes form one partition on
// the simulated backend (same kernels): the difference is the cost of a
// partition call through the HAL — on host tensors (sim), or through
// device buffers, an upload, an enqueue on the simulated queue and a
// download (simdev).
func BenchmarkDelegationOverhead(b *testing.B) {
	g := &graph.Graph{
		Name:    "small",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(16)}}},
		Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
			{OpType: "Add", Inputs: []string{"y", "x"}, Outputs: []string{"z"}},
		},
	}
	bytes := onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{16}, make([]float32, 16))}
	ctx := context.Background()
	for _, mode := range []string{"cpu", "sim", "simdev"} {
		b.Run(mode, func(b *testing.B) {
			opts := &runtime.Options{}
			switch mode {
			case "sim":
				opts.Backends = []*hal.Device{simDevice(b, sim.Options{Ops: []string{"Relu", "Add"}})}
			case "simdev":
				_, d := deviceSim(b, sim.Options{Ops: []string{"Relu", "Add"}})
				opts.Backends = []*hal.Device{d}
			}
			m, err := runtime.LoadBytes(ctx, bytes, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Run(ctx, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestUnavailableBackendPolicy(t *testing.T) {
	ctx := context.Background()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{2}, []float32{-1, 1})}
	ref, err := runtime.LoadBytes(ctx, demoLike(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.Run(ctx, x)
	// default: the Run fails with Unavailable
	dev := simDevice(t, sim.Options{Ops: []string{"Relu", "Neg"}, Faults: sim.Faults{UnavailableAfter: 1}})
	m, err := runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, x); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, x); !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("want Unavailable, got %v", err)
	}
	// ReplaceOnCPU: the failing Run and every later one succeed on cpu
	dev = simDevice(t, sim.Options{Ops: []string{"Relu", "Neg"}, Faults: sim.Faults{UnavailableAfter: 1}})
	m, err = runtime.LoadBytes(ctx, demoLike(t), &runtime.Options{Backends: []*hal.Device{dev}, OnUnavailable: runtime.ReplaceOnCPU})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		got, err := m.Run(ctx, x)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if err := equalOutputs(want, got); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	p := m.Plan()
	r := p.Partitions[0].Replaced
	if r == nil || r.From != "sim" || r.To != "cpu" || !strings.Contains(r.Reason, "device gone") {
		t.Fatalf("placement report: %+v\n%s", r, p.Text())
	}
	if !strings.Contains(p.Text(), "re-placed on cpu") {
		t.Errorf("text report lacks the re-placement:\n%s", p.Text())
	}
}
