package cabi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/runtime"
)

func openDevice(t testing.TB, path string) *hal.Device {
	t.Helper()
	b, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// The Go mirrors have the header's sizes and offsets, as gcc lays them out.
func TestLayoutMatchesHeader(t *testing.T) {
	lib := buildC(t, "libprobe.so", "testdata/layout_probe.c")
	h, err := dlopen(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer dlclose(h)
	fn, err := dlsym(h, "sy_layout")
	if err != nil {
		t.Fatal(err)
	}
	var st cStatus
	var tn cTensor
	var v cValue
	var a cAttribute
	var n cNode
	var o cOpset
	var sg cSubgraph
	var vd cVerdict
	var in cInfo
	var oc cOpCapability
	var cc cCapabilities
	var co cCompileOptions
	var ec cExecuteCall
	var tb cTable
	var br cBufferRequest
	var dd cDeviceDesc
	var dr cDimRange
	var sb cShapeBound
	var cr cCompileReport
	var kt cKernelTiming
	var cp cCallProfile
	var eo cEnqueueOptions
	off := func(x uintptr) int64 { return int64(x) }
	want := []int64{
		int64(unsafe.Sizeof(st)), off(unsafe.Offsetof(st.message)),
		int64(unsafe.Sizeof(tn)), off(unsafe.Offsetof(tn.shape)), off(unsafe.Offsetof(tn.data)), off(unsafe.Offsetof(tn.numBytes)),
		int64(unsafe.Sizeof(v)), off(unsafe.Offsetof(v.dims)), off(unsafe.Offsetof(v.isTensor)), off(unsafe.Offsetof(v.constant)),
		int64(unsafe.Sizeof(a)), off(unsafe.Offsetof(a.f)), off(unsafe.Offsetof(a.i)), off(unsafe.Offsetof(a.sLen)),
		off(unsafe.Offsetof(a.count)), off(unsafe.Offsetof(a.tensors)),
		int64(unsafe.Sizeof(n)), off(unsafe.Offsetof(n.numInputs)), off(unsafe.Offsetof(n.inputs)), off(unsafe.Offsetof(n.numAttributes)),
		off(unsafe.Offsetof(n.attributes)),
		int64(unsafe.Sizeof(o)), off(unsafe.Offsetof(o.version)),
		int64(unsafe.Sizeof(sg)), off(unsafe.Offsetof(sg.name)), off(unsafe.Offsetof(sg.values)), off(unsafe.Offsetof(sg.topoOrder)),
		off(unsafe.Offsetof(sg.numInputs)), off(unsafe.Offsetof(sg.inputs)), off(unsafe.Offsetof(sg.numConstants)), off(unsafe.Offsetof(sg.constants)),
		off(unsafe.Offsetof(sg.opsets)),
		int64(unsafe.Sizeof(vd)), off(unsafe.Offsetof(vd.reason)),
		int64(unsafe.Sizeof(in)), off(unsafe.Offsetof(in.name)), off(unsafe.Offsetof(in.description)), off(unsafe.Offsetof(in.flags)),
		int64(unsafe.Sizeof(oc)), off(unsafe.Offsetof(oc.minOpset)), off(unsafe.Offsetof(oc.dtypes)), off(unsafe.Offsetof(oc.maxRank)),
		int64(unsafe.Sizeof(cc)), off(unsafe.Offsetof(cc.ops)), off(unsafe.Offsetof(cc.numLayouts)), off(unsafe.Offsetof(cc.maxTensorBytes)),
		off(unsafe.Offsetof(cc.controlFlow)),
		int64(unsafe.Sizeof(co)), off(unsafe.Offsetof(co.profile)),
		int64(unsafe.Sizeof(ec)), off(unsafe.Offsetof(ec.inputs)), off(unsafe.Offsetof(ec.cancelled)),
		int64(unsafe.Sizeof(tb)), off(unsafe.Offsetof(tb.halMin)), off(unsafe.Offsetof(tb.self)), off(unsafe.Offsetof(tb.getInfo)),
		off(unsafe.Offsetof(tb.execute)), off(unsafe.Offsetof(tb.close)), int64(tableSize10),
		int64(headerVersion.Major), int64(headerVersion.Minor), messageCapacity, reasonCapacity, maxRank,
		int64(unsafe.Sizeof(br)), off(unsafe.Offsetof(br.memory)), off(unsafe.Offsetof(br.shape)),
		off(unsafe.Offsetof(tb.allocate)), off(unsafe.Offsetof(tb.enqueue)), off(unsafe.Offsetof(tb.releaseFence)),
		int64(tableSize11), 8, 8,
		int64(hal.MemoryHost), int64(hal.MemoryHostVisible), int64(hal.MemoryDeviceLocal),
		// HAL 1.1: devices, compile options, profiles
		int64(unsafe.Sizeof(cc)), off(unsafe.Offsetof(cc.numDevices)), off(unsafe.Offsetof(cc.deviceDescSize)), off(unsafe.Offsetof(cc.devices)),
		int64(unsafe.Sizeof(dd)), off(unsafe.Offsetof(dd.memoryKinds)), off(unsafe.Offsetof(dd.name)), off(unsafe.Offsetof(dd.memoryBytes)),
		off(unsafe.Offsetof(dd.maxBufferBytes)), off(unsafe.Offsetof(dd.precisions)), off(unsafe.Offsetof(dd.cacheVendor)), off(unsafe.Offsetof(dd.cacheDriver)),
		int64(unsafe.Sizeof(dr)), int64(unsafe.Sizeof(sb)), off(unsafe.Offsetof(sb.rank)), off(unsafe.Offsetof(sb.dims)),
		int64(unsafe.Sizeof(cr)), off(unsafe.Offsetof(cr.precision)),
		int64(unsafe.Sizeof(co)), off(unsafe.Offsetof(co.device)), off(unsafe.Offsetof(co.precision)), off(unsafe.Offsetof(co.numShapeBounds)),
		off(unsafe.Offsetof(co.shapeBounds)), off(unsafe.Offsetof(co.report)),
		int64(unsafe.Sizeof(kt)), off(unsafe.Offsetof(kt.startNS)), off(unsafe.Offsetof(kt.endNS)), off(unsafe.Offsetof(kt.firstNode)), off(unsafe.Offsetof(kt.numNodes)),
		int64(unsafe.Sizeof(cp)), off(unsafe.Offsetof(cp.kernelCapacity)), off(unsafe.Offsetof(cp.numNodeRefs)), off(unsafe.Offsetof(cp.device)),
		off(unsafe.Offsetof(cp.startNS)), off(unsafe.Offsetof(cp.endNS)), off(unsafe.Offsetof(cp.queue)), off(unsafe.Offsetof(cp.kernels)), off(unsafe.Offsetof(cp.nodeRefs)),
		int64(unsafe.Sizeof(eo)), off(unsafe.Offsetof(eo.flags)),
		int64(unsafe.Sizeof(ec)), off(unsafe.Offsetof(ec.profile)),
		off(unsafe.Offsetof(tb.enqueueWithOptions)), off(unsafe.Offsetof(tb.fenceProfile)), int64(tableSize11Prof),
		int64(capsSize10), int64(compileOptionsSize10), int64(executeCallSize10),
		nameCapacity, maxDevices, codeDeclined, infoCallProfiles, enqueueProfile,
		precisionIndex(hal.PrecisionFloat32), precisionIndex(hal.PrecisionFloat16), precisionIndex(hal.PrecisionBFloat16),
	}
	got := make([]int64, 256)
	count := int(int32(call(fn, uintptr(unsafe.Pointer(&got[0])), uintptr(len(got)))))
	if count != len(want) {
		t.Fatalf("probe reports %d numbers, the Go side checks %d", count, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("layout entry %d: C says %d, Go mirror has %d", i, got[i], want[i])
		}
	}
}

func precisionIndex(p hal.Precision) int64 {
	c, _ := precisionCode(p)
	return int64(c)
}

func readInputs(t *testing.T, dir string, m *runtime.Model) map[string]*graph.Tensor {
	t.Helper()
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
	return feeds
}

// The example delegate, loaded in-process, runs partitions of the four
// real models with outputs equal to cpu-only within float tolerance.
func TestModelsMatchCPU(t *testing.T) {
	root := shared.Path(t, "testdata/models")
	lib := exampleLib(t)
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	ctx := context.Background()
	ran := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		ran++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			dev := openDevice(t, lib)
			ref, err := runtime.LoadDir(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			delegated, nodes := 0, 0
			for _, p := range m.Plan().Partitions {
				if !p.Fallback {
					delegated++
					nodes += len(p.Nodes)
				}
			}
			claimable := false
			for _, n := range m.IR().Graph.Nodes {
				switch n.OpType {
				case "Add", "Sub", "Mul", "Div", "Relu", "MatMul":
					claimable = true
				}
			}
			if claimable && delegated == 0 {
				t.Fatalf("nothing was delegated:\n%s", m.Plan().Text())
			}
			feeds := readInputs(t, dir, m)
			want, err := ref.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d outputs, cpu-only gives %d", len(got), len(want))
			}
			for name, w := range want {
				if err := onnxtest.Compare(got[name], w, 1e-4, 1e-5); err != nil {
					t.Errorf("output %q: %v", name, err)
				}
			}
			var calls int64
			for _, ps := range m.PartitionStats() {
				calls += ps.Calls
			}
			if delegated > 0 && calls == 0 {
				t.Error("no delegated partition was called")
			}
			t.Logf("%d partitions (%d nodes) on the C delegate, %d partition calls", delegated, nodes, calls)
		})
	}
	if ran == 0 {
		t.Fatalf("no models under %s", root)
	}
}

// Broken libraries are refused with a readable reason naming the library;
// none crashes the host.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	notLib := filepath.Join(t.TempDir(), "libnot_a_library.so")
	if err := os.WriteFile(notLib, []byte("not an ELF file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		code error
		want []string
	}{
		{"missing file", filepath.Join(t.TempDir(), "libabsent.so"), hal.ErrUnavailable, []string{"cannot load", "libabsent.so"}},
		{"not a library", notLib, hal.ErrUnavailable, []string{"cannot load", notLib}},
		{"no entry point", brokenLib(t, "NO_ENTRY"), hal.ErrFailedPrecondition, []string{"does not export switchyard_delegate_open", "libbroken_no_entry.so"}},
		{"incompatible version", brokenLib(t, "VERSION"), hal.ErrFailedPrecondition, []string{"incompatible HAL version", "library speaks 2.0–2.3", "host speaks " + hal.Current.String(), "libbroken_version.so"}},
		{"table too small", brokenLib(t, "SMALL_TABLE"), hal.ErrFailedPrecondition, []string{"function table is 80 bytes", fmt.Sprintf("%d bytes of the HAL 1.0 table", tableSize10), "libbroken_small_table.so"}},
		{"null function", brokenLib(t, "NULL_FN"), hal.ErrFailedPrecondition, []string{"NULL required functions: execute", "libbroken_null_fn.so"}},
		{"entry point refuses", brokenLib(t, "OPEN_FAILS"), hal.ErrUnavailable, []string{"refused host HAL", "no accelerator found on bus 0", "libbroken_open_fails.so"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Open(ctx, c.path, Options{})
			if err == nil {
				_ = b.Close()
				t.Fatal("the library was accepted")
			}
			if !errors.Is(err, c.code) {
				t.Errorf("code: got %v, want %v", hal.CodeOf(err), c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			t.Log(err)
			// and through a registry: listed without loading, refused at Open
			r := hal.NewRegistry()
			if err := r.Register(Factory(c.path, Options{Name: "lib"})); err != nil {
				t.Fatal(err)
			}
			if l := r.List(); len(l) != 1 || l[0].Kind != hal.LoadLibrary {
				t.Fatalf("list: %+v", l)
			}
			if _, err := r.Open(ctx, "lib"); !errors.Is(err, c.code) {
				t.Errorf("registry open: %v", err)
			}
		})
	}
}

func reluModel(t *testing.T) []byte {
	t.Helper()
	g := &graph.Graph{
		Name:    "relu",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

// A C delegate's error reaches the application with its code and text.
func TestDelegateErrorReachesApp(t *testing.T) {
	ctx := context.Background()
	dev := openDevice(t, brokenLib(t, "EXECUTE"))
	m, err := runtime.LoadBytes(ctx, reluModel(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 0, 1, 2})})
	if !errors.Is(err, hal.ErrResourceExhausted) {
		t.Fatalf("want resource exhausted, got %v", err)
	}
	var he *hal.Error
	if !errors.As(err, &he) || he.Code != hal.CodeResourceExhausted || he.Backend != "broken" || he.Op != "execute" {
		t.Fatalf("not a hal.Error with code, backend and op: %#v", err)
	}
	if !strings.Contains(err.Error(), "device queue 3 is out of memory (needed 4096 more bytes)") {
		t.Fatalf("the delegate's message is lost: %v", err)
	}
	t.Log(err)
}

func tensorInfo(name string, dt graph.DType, shape []int) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(shape...)}}
}

func oneNode(op string, shapes ...[]int) *hal.Subgraph {
	g := &graph.Graph{Name: op, Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}}}
	n := &graph.Node{OpType: op, Outputs: []string{"z"}}
	for i, s := range shapes {
		name := fmt.Sprintf("x%d", i)
		g.Inputs = append(g.Inputs, tensorInfo(name, graph.Float32, s))
		n.Inputs = append(n.Inputs, name)
	}
	g.Nodes = []*graph.Node{n}
	return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
}

func randTensor(rng *rand.Rand, shape []int) *graph.Tensor {
	n, _ := graph.NumElements(shape)
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return graph.MustFromSlice(shape, d)
}

// Broadcasting and MatMul shapes agree with the reference kernels, with
// outputs both host-allocated from static types and inferred by the
// delegate.
func TestOpsAgainstReference(t *testing.T) {
	ctx := context.Background()
	dev := openDevice(t, exampleLib(t))
	ref, err := hal.NewDevice(cpu.New(), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		op     string
		shapes [][]int
	}{
		{"Add", [][]int{{2, 3}, {2, 3}}}, {"Add", [][]int{{2, 3, 4}, {4}}}, {"Sub", [][]int{{3, 1}, {1, 5}}},
		{"Mul", [][]int{{}, {2, 2}}}, {"Div", [][]int{{2, 1, 4}, {3, 1}}}, {"Add", [][]int{{0, 3}, {3}}},
		{"Mul", [][]int{{1, 3, 1, 5}, {2, 1, 4, 1}}}, {"Relu", [][]int{{3, 7}}}, {"Relu", [][]int{{}}},
		{"MatMul", [][]int{{3, 4}, {4, 5}}}, {"MatMul", [][]int{{4}, {4, 5}}}, {"MatMul", [][]int{{3, 4}, {4}}},
		{"MatMul", [][]int{{2, 3, 4}, {4, 5}}}, {"MatMul", [][]int{{2, 1, 3, 4}, {5, 4, 2}}}, {"MatMul", [][]int{{4}, {4}}},
		{"MatMul", [][]int{{3, 0}, {0, 2}}},
	}
	for _, c := range cases {
		sg := oneNode(c.op, c.shapes...)
		vs, err := dev.Supports(ctx, sg)
		if err != nil || !vs[0].Supported {
			t.Fatalf("%s %v: supports %v %v", c.op, c.shapes, vs, err)
		}
		exe, err := dev.Compile(ctx, sg, nil)
		if err != nil {
			t.Fatalf("%s %v: %v", c.op, c.shapes, err)
		}
		refExe, err := ref.Compile(ctx, sg, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ins []*graph.Tensor
		for _, s := range c.shapes {
			ins = append(ins, randTensor(rng, s))
		}
		want := []*graph.Tensor{{}}
		if err := refExe.Execute(ctx, ins, want); err != nil {
			t.Fatal(err)
		}
		got := []*graph.Tensor{{}}
		if err := exe.Execute(ctx, ins, got); err != nil {
			t.Fatalf("%s %v: %v", c.op, c.shapes, err)
		}
		if err := onnxtest.Compare(got[0], want[0], 1e-5, 1e-6); err != nil {
			t.Errorf("%s %v: %v", c.op, c.shapes, err)
		}
		// caller-allocated output, written in place
		pre := &graph.Tensor{DType: graph.Float32, Shape: want[0].Shape, Data: make([]float32, want[0].Len())}
		if err := exe.Execute(ctx, ins, []*graph.Tensor{pre}); err != nil {
			t.Fatal(err)
		}
		if err := onnxtest.Compare(pre, want[0], 1e-5, 1e-6); err != nil {
			t.Errorf("%s %v in place: %v", c.op, c.shapes, err)
		}
		_ = exe.Release()
		_ = refExe.Release()
	}
}

// Symbolic input shapes make the host ask the delegate for output shapes.
func TestDynamicShapesUseInferOutputs(t *testing.T) {
	ctx := context.Background()
	dev := openDevice(t, exampleLib(t))
	sym := graph.Shape{{Param: "batch"}, {Value: 3}}
	g := &graph.Graph{
		Name:    "dyn",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Initializers: map[string]*graph.Tensor{
			"w": graph.MustFromSlice([]int{3}, []float32{1, -2, 3}),
		},
		Nodes: []*graph.Node{
			{OpType: "Mul", Inputs: []string{"x", "w"}, Outputs: []string{"y"}},
			{OpType: "Relu", Inputs: []string{"y"}, Outputs: []string{"z"}},
		},
	}
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	exe, err := dev.Compile(ctx, sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	for _, batch := range []int{1, 4} {
		x := make([]float32, batch*3)
		for i := range x {
			x[i] = float32(i + 1)
		}
		out := []*graph.Tensor{{}}
		if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{batch, 3}, x)}, out); err != nil {
			t.Fatal(err)
		}
		if !graph.SameShape(out[0].Shape, []int{batch, 3}) {
			t.Fatalf("shape %v", out[0].Shape)
		}
		d := out[0].Data.([]float32)
		for i, v := range d {
			w := []float32{1, -2, 3}[i%3] * x[i]
			if w < 0 {
				w = 0
			}
			if v != w {
				t.Fatalf("batch %d element %d: %v, want %v", batch, i, v, w)
			}
		}
	}
}

// Declined nodes carry the delegate's reasons; compiling them anyway is
// Unsupported with the delegate's message; bad execute arguments are
// InvalidArgument; a cancelled context cancels; a closed backend refuses.
func TestContractEdges(t *testing.T) {
	ctx := context.Background()
	lib := exampleLib(t)
	b, err := Open(ctx, lib, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	info := dev.Info()
	if info.Name != "c-example" || info.HAL.Max != headerVersion || dev.HALVersion() != headerVersion || !strings.Contains(info.Description, lib) {
		t.Fatalf("info %+v, negotiated %v", info, dev.HALVersion())
	}
	caps, err := dev.Capabilities(ctx)
	if err != nil || len(caps.Ops) != 6 || caps.Ops[5].OpType != "MatMul" || len(caps.Ops[0].DTypes) != 1 || caps.Ops[0].DTypes[0] != graph.Float32 {
		t.Fatalf("capabilities %+v %v", caps, err)
	}

	g := &graph.Graph{
		Name:    "mixed",
		Inputs:  []graph.ValueInfo{tensorInfo("x", graph.Float32, []int{2}), tensorInfo("i", graph.Int64, []int{2})},
		Outputs: []graph.ValueInfo{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{OpType: "Tanh", Inputs: []string{"r"}, Outputs: []string{"a"}},
			{OpType: "Add", Inputs: []string{"i", "i"}, Outputs: []string{"b"}},
			{OpType: "Neg", Inputs: []string{"i"}, Outputs: []string{"n"}},
			{OpType: "Cast", Inputs: []string{"n"}, Outputs: []string{"c"}, Attrs: map[string]*graph.Attribute{"to": {Name: "to", Type: graph.AttrInt, I: 1}}},
		},
	}
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	vs, err := dev.Supports(ctx, sg)
	if err != nil {
		t.Fatal(err)
	}
	if !vs[0].Supported || vs[1].Supported || !strings.Contains(vs[1].Reason, "op Tanh is not implemented") ||
		vs[2].Supported || !strings.Contains(vs[2].Reason, "dtype 7 of i (only float32") {
		t.Fatalf("verdicts %+v", vs)
	}
	if _, err := dev.Compile(ctx, sg, nil); !errors.Is(err, hal.ErrUnsupported) || !strings.Contains(err.Error(), "op Tanh is not implemented") {
		t.Fatalf("compile of declined nodes: %v", err)
	}

	exe, err := dev.Compile(ctx, oneNode("MatMul", []int{2, 3}, []int{3, 2}), nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	a, bb := randTensor(rng, []int{2, 3}), randTensor(rng, []int{3, 2})
	wrong := &graph.Tensor{DType: graph.Float32, Shape: []int{3, 3}, Data: make([]float32, 9)}
	if err := exe.Execute(ctx, []*graph.Tensor{a, bb}, []*graph.Tensor{wrong}); !errors.Is(err, hal.ErrInvalidArgument) || !strings.Contains(err.Error(), "output 0") {
		t.Fatalf("wrong output shape: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := exe.Execute(cctx, []*graph.Tensor{a, bb}, []*graph.Tensor{{}}); !errors.Is(err, hal.ErrCancelled) {
		t.Fatalf("cancelled: %v", err)
	}
	// a deadline that has not passed: the cancel flag is armed but unused
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if err := exe.Execute(dctx, []*graph.Tensor{a, bb}, []*graph.Tensor{{}}); err != nil {
		t.Fatal(err)
	}
	// concurrent executes on one executable
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				out := []*graph.Tensor{{}}
				if err := exe.Execute(ctx, []*graph.Tensor{a, bb}, out); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// closing with a live executable releases it; later calls refuse
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if err := exe.Execute(ctx, []*graph.Tensor{a, bb}, []*graph.Tensor{{}}); !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Fatalf("after close: %v", err)
	}
	if err := exe.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Capabilities(ctx); !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Fatalf("capabilities after close: %v", err)
	}
}

// A registry entry made from a path is named after the file, of kind
// library, and opens the delegate under that name.
func TestFactory(t *testing.T) {
	lib := exampleLib(t)
	r := hal.NewRegistry()
	if err := r.Register(Factory(lib, Options{})); err != nil {
		t.Fatal(err)
	}
	av := r.Probe(context.Background())
	if len(av) != 1 || !av[0].Available || av[0].Info.Name != "switchyard_example" || av[0].Kind != hal.LoadLibrary || av[0].HALVersion != headerVersion {
		t.Fatalf("probe: %+v", av)
	}
	if !strings.Contains(av[0].Info.Description, `library name "c-example"`) {
		t.Fatalf("description: %q", av[0].Info.Description)
	}
	// a checksum (as in a library manifest) is verified before loading
	sum := sha256.New()
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	sum.Write(data)
	good := hex.EncodeToString(sum.Sum(nil))
	b, err := Open(context.Background(), lib, Options{SHA256: good})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	bad := strings.Repeat("0", 64)
	if _, err := Open(context.Background(), lib, Options{SHA256: bad}); !errors.Is(err, hal.ErrFailedPrecondition) || !strings.Contains(err.Error(), "checksum mismatch: expected sha256 "+bad+", the file has "+good) {
		t.Fatalf("bad checksum: %v", err)
	}
	for path, want := range map[string]string{"/a/libacme_npu.so.2": "acme_npu", "x.dylib": "x", "libfoo.so": "foo"} {
		if got := NameFromPath(path); got != want {
			t.Errorf("NameFromPath(%q) = %q, want %q", path, got, want)
		}
	}
}
