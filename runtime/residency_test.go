package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

// deviceSim opens the device-memory double.
func deviceSim(t testing.TB, opts sim.Options) (*sim.DeviceBackend, *hal.Device) {
	t.Helper()
	b := sim.NewDeviceMemory(opts)
	d, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return b, d
}

// hostOnly hides the double's device memory: the runtime then calls it on
// host tensors, one synchronous Execute per partition, as it did before
// it spoke buffers (the double still counts the copies its Execute makes).
type hostOnly struct{ hal.Backend }

// twoPartitions: partition A = {xa = Add(x, w); a = Relu(xa); b = Relu(a)},
// a cpu node n = Neg(b), partition B = {y = Add(a, n)}. A and B are two
// partitions of the same device (B reads n, which depends on A); a goes
// from A to B and nowhere else.
func twoPartitions(dims ...graph.Dim) []byte {
	if dims == nil {
		dims = []graph.Dim{{Value: 4}}
	}
	g := &graph.Graph{
		Name:         "two",
		Inputs:       []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: dims}}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{1}, []float32{0.5})},
		Nodes: []*graph.Node{
			{Name: "add_w", OpType: "Add", Inputs: []string{"x", "w"}, Outputs: []string{"xa"}},
			{Name: "relu_a", OpType: "Relu", Inputs: []string{"xa"}, Outputs: []string{"a"}},
			{Name: "relu_b", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Name: "neg", OpType: "Neg", Inputs: []string{"b"}, Outputs: []string{"n"}},
			{Name: "add_y", OpType: "Add", Inputs: []string{"a", "n"}, Outputs: []string{"y"}},
		},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

var reluAdd = []string{"Relu", "Add"}

func runTwo(t testing.TB, m *runtime.Model, x ...float32) map[string]*graph.Tensor {
	t.Helper()
	out, err := m.Run(context.Background(), map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{len(x)}, x)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Two consecutive partitions on one device: the value between them (a)
// moves zero bytes through the host; only x, b (for the cpu node), n (from
// it) and the output y cross, exactly as the plan lists them. Called on
// host tensors (the old path) a makes a round trip.
func TestResidentValueMovesNoBytes(t *testing.T) {
	ctx := context.Background()
	ref, err := runtime.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := runTwo(t, ref, -1, 2, -3, 4)
	b, dev := deviceSim(t, sim.Options{Ops: reluAdd})
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	plan := m.Plan()
	dparts := 0
	for _, p := range plan.Partitions {
		if p.Device == "sim:0" {
			dparts++
		}
	}
	if dparts != 2 {
		t.Fatalf("want two partitions on sim:0:\n%s", plan.Text())
	}
	var listed []string
	for _, tr := range plan.Transfers {
		listed = append(listed, fmt.Sprintf("%s %s %d", tr.Direction, tr.Value, tr.Bytes))
	}
	if got := strings.Join(listed, ", "); got != "download b 16, download y 16, upload x 16, upload n 16" {
		t.Errorf("transfers: %s\n%s", got, plan.Text())
	}
	if len(plan.Resident) != 1 || plan.Resident[0].Value != "a" || !strings.Contains(plan.Text(), "1 value(s) stay on their device") {
		t.Errorf("resident values %+v\n%s", plan.Resident, plan.Text())
	}
	before := b.Counters()
	out, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}, runtime.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := equalOutputs(want, out); err != nil {
		t.Fatal(err)
	}
	c := b.Counters().Since(before)
	if c.UploadedValues["a"] != 0 || c.DownloadedValues["a"] != 0 || c.HostRoundTrips() != 0 {
		t.Errorf("a went through the host: %+v", c)
	}
	if c.BytesUploaded != 32 || c.BytesDownloaded != 32 || c.Uploads != 2 || c.Downloads != 2 || c.Enqueues != 2 || c.Executes != 0 {
		t.Errorf("per run: %+v", c)
	}
	if st.UploadBytes != c.BytesUploaded || st.DownloadBytes != c.BytesDownloaded || st.Uploads != 2 || st.Downloads != 2 {
		t.Errorf("stats %+v, device counted %+v", st, c)
	}
	// the same model, the device called on host tensors: a round-trips
	hb := sim.NewDeviceMemory(sim.Options{Ops: reluAdd})
	hd, err := hal.NewDevice(hostOnly{hb}, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	old, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{hd}})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := equalOutputs(want, runTwo(t, old, -1, 2, -3, 4)); err != nil {
		t.Fatal(err)
	}
	if oc := hb.Counters(); oc.RoundTrips("a") != 1 || oc.BytesUploaded != 48 || oc.BytesDownloaded != 48 {
		t.Errorf("host-tensor calls: %+v", oc)
	}
}

// The four models with the device double claiming Conv, Relu, Add,
// MatMul: outputs equal cpu-only, no value makes a host round trip, the
// bytes the device saw are those the plan lists and the run reports, and
// weights are uploaded once, at compile.
func TestModelsOnDeviceMemory(t *testing.T) {
	root := shared.Path(t, "testdata/models")
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	ctx := context.Background()
	ops := []string{"Conv", "Relu", "Add", "MatMul"}
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ref, err := runtime.LoadDir(ctx, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*graph.Tensor{}
			for i, in := range ref.Inputs() {
				if i < len(ins) {
					feeds[in.Name] = ins[i]
				}
			}
			want, err := ref.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			b, dev := deviceSim(t, sim.Options{Ops: ops})
			m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			weights := b.Counters()
			plan := m.Plan()
			var planUp, planDown int64
			static := true
			for _, tr := range plan.Transfers {
				if tr.Bytes < 0 {
					static = false
				}
				if tr.Direction == "upload" {
					planUp += tr.Bytes
				} else {
					planDown += tr.Bytes
				}
			}
			for run := 0; run < 2; run++ {
				if run > 0 && filepath.Base(dir) == "ppocrv4_rec" {
					break // one run of the large model is enough (and slow under -race)
				}
				before := b.Counters()
				got, st, err := m.RunWithStats(ctx, feeds, runtime.RunOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := equalOutputs(want, got); err != nil {
					t.Fatal(err)
				}
				c := b.Counters().Since(before)
				if c.HostRoundTrips() != 0 {
					t.Errorf("host round trips %d: %v %v", c.HostRoundTrips(), c.UploadedValues, c.DownloadedValues)
				}
				for _, r := range plan.Resident {
					if c.UploadedValues[r.Value] != 0 {
						t.Errorf("resident %s was uploaded", r.Value)
					}
				}
				if c.BytesUploaded != st.UploadBytes || c.BytesDownloaded != st.DownloadBytes {
					t.Errorf("device saw %d/%d bytes up/down, the run reports %d/%d", c.BytesUploaded, c.BytesDownloaded, st.UploadBytes, st.DownloadBytes)
				}
				if static && c.Declines == 0 && (c.BytesUploaded != planUp || c.BytesDownloaded != planDown) {
					t.Errorf("device saw %d/%d bytes up/down, the plan lists %d/%d", c.BytesUploaded, c.BytesDownloaded, planUp, planDown)
				}
				if run == 0 {
					t.Logf("%d partitions on sim:0, %d values stay on the device; per run: %d uploads (%d B), %d downloads (%d B), %d declined calls",
						len(m.PartitionStats()), len(plan.Resident), c.Uploads, c.BytesUploaded, c.Downloads, c.BytesDownloaded, c.Declines)
				}
			}
			after := b.Counters()
			if after.WeightUploads != weights.WeightUploads || after.WeightBytes != weights.WeightBytes {
				t.Errorf("weights uploaded after compile: %d → %d", weights.WeightUploads, after.WeightUploads)
			}
			if after.LiveBuffers != 0 {
				t.Errorf("%d buffers left after the runs", after.LiveBuffers)
			}
			if filepath.Base(dir) != "blazeface_front_128" {
				return
			}
			// the same model called on host tensors, for the record
			hb := sim.NewDeviceMemory(sim.Options{Ops: ops})
			hd, err := hal.NewDevice(hostOnly{hb}, hal.LoadLinked)
			if err != nil {
				t.Fatal(err)
			}
			defer hd.Close()
			old, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{hd}})
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			before := hb.Counters()
			if _, err := old.Run(ctx, feeds); err != nil {
				t.Fatal(err)
			}
			c := hb.Counters().Since(before)
			t.Logf("called on host tensors instead: %d uploads (%d B), %d downloads (%d B), %d host round trips", c.Uploads, c.BytesUploaded, c.Downloads, c.BytesDownloaded, c.HostRoundTrips())
		})
	}
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// settle waits for the goroutine count to come back to at most want.
func settle(want int) int {
	n := goruntime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); n > want && time.Now().Before(deadline); n = goruntime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// A fence that never signals and a 200 ms deadline: DeadlineExceeded at
// the deadline, not a hang (the bound leaves room for a loaded machine). The run freed its buffers, yet the device keeps them
// alive under the hung call until it ends (here: the backend closes);
// then nothing is left: no buffer, goroutine or file descriptor.
func TestFenceNeverSignalsDeadline(t *testing.T) {
	ctx := context.Background()
	g0, fd0 := goruntime.NumGoroutine(), countFDs(t)
	b := sim.NewDeviceMemory(sim.Options{Ops: reluAdd, DeviceOptions: sim.DeviceOptions{FenceNeverSignals: true}})
	dev, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Run(dctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})})
	took := time.Since(start)
	if !errors.Is(err, hal.ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if took > 2*time.Second {
		t.Errorf("the run took %v with a 200 ms deadline", took)
	}
	c := b.Counters()
	if c.BuffersFreed != c.BuffersAllocated || c.LiveBuffers == 0 || c.PendingOps == 0 {
		t.Errorf("the run must free everything and the device keep the hung call's buffers: %+v", c)
	}
	_ = m.Close()
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	if c := b.Counters(); c.LiveBuffers != 0 || c.LiveBytes != 0 || c.PendingOps != 0 {
		t.Errorf("after close: %+v", c)
	}
	if n := settle(g0); n > g0 {
		t.Errorf("goroutines: %d before, %d after", g0, n)
	}
	if fd := countFDs(t); fd != fd0 {
		t.Errorf("file descriptors: %d before, %d after", fd0, fd)
	}
}

// A slow device (each operation 300 ms) and a 200 ms deadline: the run
// ends on time; the device releases the run's buffers when its fences
// signal, without the backend closing.
func TestSlowFenceDeadlineReleasesLater(t *testing.T) {
	ctx := context.Background()
	b, dev := deviceSim(t, sim.Options{Ops: reluAdd, DeviceOptions: sim.DeviceOptions{FenceDelay: 300 * time.Millisecond}})
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Run(dctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})})
	if !errors.Is(err, hal.ErrDeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("the run took %v", took)
	}
	if c := b.Counters(); c.LiveBuffers == 0 {
		t.Errorf("released under pending work: %+v", c)
	}
	for deadline := time.Now().Add(5 * time.Second); b.Counters().LiveBuffers > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("buffers never released: %+v", b.Counters())
		}
	}
}

// The device is lost in the middle of a run (after 3 of the run's 6 device
// calls): FailRun fails with Unavailable; ReplaceOnCPU re-places both of
// the device's partitions on cpu, reruns from the start and stays there.
func TestDeviceLossMidRun(t *testing.T) {
	ctx := context.Background()
	ref, err := runtime.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := runTwo(t, ref, -1, 2, -3, 4)
	lossy := sim.Options{Ops: reluAdd, DeviceOptions: sim.DeviceOptions{DeviceLostAfter: 3}}
	_, dev := deviceSim(t, lossy)
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}); !errors.Is(err, hal.ErrUnavailable) || !strings.Contains(err.Error(), "device lost") {
		t.Fatalf("FailRun: %v", err)
	}
	b, dev := deviceSim(t, lossy)
	m, err = runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}, OnUnavailable: runtime.ReplaceOnCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	out, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}, runtime.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := equalOutputs(want, out); err != nil {
		t.Fatal(err)
	}
	if st.Reruns != 1 {
		t.Errorf("reruns %d", st.Reruns)
	}
	plan := m.Plan()
	replaced := 0
	for _, p := range plan.Partitions {
		if r := p.Replaced; r != nil && r.From == "sim" && r.To == "cpu" && strings.Contains(r.Reason, "device lost") {
			replaced++
		}
	}
	if replaced != 2 || !strings.Contains(plan.Text(), "re-placed on cpu") {
		t.Errorf("want both partitions re-placed:\n%s", plan.Text())
	}
	calls := b.Counters().CallsSoFar
	for i := 0; i < 3; i++ {
		if err := equalOutputs(want, runTwo(t, m, -1, 2, -3, 4)); err != nil {
			t.Fatal(err)
		}
	}
	if c := b.Counters(); c.CallsSoFar != calls {
		t.Errorf("the lost device was called again: %d → %d", calls, c.CallsSoFar)
	}
}

// Device loss in a real model, mid-run, re-placed on cpu.
func TestDeviceLossOnModel(t *testing.T) {
	dir := filepath.Join(shared.Path(t, "testdata/models"), "blazeface_front_128")
	ctx := context.Background()
	ref, err := runtime.LoadDir(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
	if err != nil {
		t.Fatal(err)
	}
	feeds := map[string]*graph.Tensor{ref.Inputs()[0].Name: ins[0]}
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	_, dev := deviceSim(t, sim.Options{Ops: []string{"Conv", "Relu", "Add", "MatMul"}, DeviceOptions: sim.DeviceOptions{DeviceLostAfter: 20}})
	m, err := runtime.LoadDir(ctx, dir, &runtime.Options{Backends: []*hal.Device{dev}, OnUnavailable: runtime.ReplaceOnCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, st, err := m.RunWithStats(ctx, feeds, runtime.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := equalOutputs(want, got); err != nil {
		t.Fatal(err)
	}
	if st.Reruns != 1 {
		t.Errorf("reruns %d", st.Reruns)
	}
}

// Inputs over the device's limit are declined at run time: that call runs
// on cpu, counted in the placement report and the run's stats, and shown
// in the trace; strict mode fails instead. Smaller inputs stay on the
// device. The same holds for a HAL 1.0 backend's Execute.
func TestRunTimeDecline(t *testing.T) {
	ctx := context.Background()
	n := []graph.Dim{{Param: "n"}}
	ref, err := runtime.LoadBytes(ctx, twoPartitions(n...), nil)
	if err != nil {
		t.Fatal(err)
	}
	big := []float32{-1, 2, -3, 4, -5, 6, -7, 8}
	wantBig, wantSmall := runTwo(t, ref, big...), runTwo(t, ref, 1, -2)
	hal10 := hal.VersionRange{Min: hal.V1_0, Max: hal.V1_0}
	for _, tc := range []struct {
		name string
		hal  *hal.VersionRange
	}{{"hal-1.1", nil}, {"hal-1.0", &hal10}} {
		t.Run(tc.name, func(t *testing.T) {
			b, dev := deviceSim(t, sim.Options{Ops: reluAdd, HAL: tc.hal, DeviceOptions: sim.DeviceOptions{DeclineShapesOver: 4}})
			m, err := runtime.LoadBytes(ctx, twoPartitions(n...), &runtime.Options{Backends: []*hal.Device{dev}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if err := equalOutputs(wantSmall, runTwo(t, m, 1, -2)); err != nil {
				t.Fatal(err)
			}
			if c := b.Counters(); c.Declines != 0 || c.Enqueues+c.Executes != 2 {
				t.Fatalf("small input: %+v", c)
			}
			out, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{8}, big)}, runtime.RunOptions{Profile: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := equalOutputs(wantBig, out); err != nil {
				t.Fatal(err)
			}
			if st.Declined != 2 {
				t.Errorf("stats: %d declined calls", st.Declined)
			}
			declined := 0
			for _, p := range m.Plan().Partitions {
				if d := p.Declined; d != nil && d.Calls == 1 && d.To == "cpu" && strings.Contains(d.Reason, "over the simulated limit of 4") {
					declined++
				}
			}
			if declined != 2 || !strings.Contains(m.Plan().Text(), "declined 1 call(s) at run time, run on cpu") {
				t.Errorf("placement report:\n%s", m.Plan().Text())
			}
			var trace bytes.Buffer
			if err := runtime.WriteChromeTrace(&trace, st, "two"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(trace.String(), `"cat":"declined"`) {
				t.Errorf("trace shows no decline: %s", trace.String())
			}
			strict, err := runtime.LoadBytes(ctx, twoPartitions(n...), &runtime.Options{Backends: []*hal.Device{dev, cpuDevice(t)}, Policy: partitioner.Policy{Strict: true}})
			if err != nil {
				t.Fatal(err)
			}
			defer strict.Close()
			if _, err := strict.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{8}, big)}); !errors.Is(err, hal.ErrDeclined) || !strings.Contains(err.Error(), "strict mode") {
				t.Errorf("strict: %v", err)
			}
		})
	}
}

func cpuDevice(t testing.TB) *hal.Device {
	t.Helper()
	d, err := hal.Default.Open(context.Background(), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// A backend that negotiates HAL 1.0 is called on host tensors as before:
// no device, no transfers in the plan, right results.
func TestHAL10DeviceBackendKeepsHostPath(t *testing.T) {
	ctx := context.Background()
	ref, err := runtime.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	old := hal.VersionRange{Min: hal.V1_0, Max: hal.V1_0}
	b, dev := deviceSim(t, sim.Options{Ops: reluAdd, HAL: &old})
	if dev.HasDeviceMemory() {
		t.Fatal("a HAL 1.0 backend offers device memory")
	}
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := equalOutputs(runTwo(t, ref, 3, -1, 0, 2), runTwo(t, m, 3, -1, 0, 2)); err != nil {
		t.Fatal(err)
	}
	p := m.Plan()
	if len(p.Transfers) != 0 || len(p.Resident) != 0 || p.Partitions[0].Device != "" {
		t.Errorf("a host backend has transfers:\n%s", p.Text())
	}
	if c := b.Counters(); c.Executes != 2 || c.Enqueues != 0 {
		t.Errorf("counters %+v", c)
	}
}

// Many runs at once on a device model: right results, race-clean, every
// buffer returned, the weights uploaded once at compile.
func TestConcurrentDeviceRuns(t *testing.T) {
	ctx := context.Background()
	ref, err := runtime.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, dev := deviceSim(t, sim.Options{Ops: reluAdd})
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if c := b.Counters(); c.WeightUploads != 1 || c.WeightBytes != 4 {
		t.Fatalf("weights at compile: %+v", c)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				v := float32(g*100+i) - 700
				x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{v, -v, v / 2, 1})}
				want, err := ref.Run(ctx, x)
				if err != nil {
					errs <- err
					return
				}
				got, err := m.Run(ctx, x)
				if err != nil {
					errs <- err
					return
				}
				if err := equalOutputs(want, got); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); b.Counters().LiveBuffers != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("buffers left: %+v", b.Counters())
		}
	}
	if c := b.Counters(); c.WeightUploads != 1 || c.Enqueues != 16*25*2 {
		t.Errorf("after 400 runs: %d weight uploads, %d enqueues", c.WeightUploads, c.Enqueues)
	}
}

// A profiled run's trace has a track per device with its uploads,
// executions (with per-node kernels) and downloads on the device clock.
func TestTraceHasDeviceTracks(t *testing.T) {
	ctx := context.Background()
	_, dev := deviceSim(t, sim.Options{Ops: reluAdd})
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, st, err := m.RunWithStats(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})}, runtime.RunOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, op := range st.DeviceOps {
		kinds[op.Kind]++
		if op.Device != "sim:0" || !op.DeviceClock || op.Start < 0 {
			t.Errorf("op %+v", op)
		}
		if op.Kind == "execute" && len(op.Kernels) == 0 {
			t.Errorf("execute without kernels: %+v", op)
		}
	}
	if kinds["upload"] != 2 || kinds["execute"] != 2 || kinds["download"] != 2 {
		t.Errorf("device ops %v", kinds)
	}
	var buf bytes.Buffer
	if err := runtime.WriteChromeTrace(&buf, st, "two"); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Pid  int            `json:"pid"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &trace); err != nil {
		t.Fatal(err)
	}
	devPid, spans, kernels := 0, 0, 0
	for _, e := range trace.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" && e.Args["name"] == "device sim:0" {
			devPid = e.Pid
		}
	}
	for _, e := range trace.TraceEvents {
		if e.Pid == devPid && e.Ph == "X" {
			if e.Tid == 1 {
				spans++
			} else {
				kernels++
			}
		}
	}
	if devPid < 2 || spans != 6 || kernels != 4 {
		t.Errorf("device track pid %d: %d queue spans, %d kernels\n%s", devPid, spans, kernels, buf.String())
	}
}

// Reduced precision is used only when asked for, and disclosed.
func TestPrecisionDisclosed(t *testing.T) {
	ctx := context.Background()
	_, dev := deviceSim(t, sim.Options{Ops: reluAdd, DeviceOptions: sim.DeviceOptions{Precisions: []hal.Precision{hal.PrecisionFloat16}}})
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if p := m.Plan(); p.Partitions[0].Precision != "" {
		t.Errorf("precision without opting in: %q", p.Partitions[0].Precision)
	}
	m16, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{dev}, Compile: hal.CompileOptions{Precision: hal.PrecisionFloat16}})
	if err != nil {
		t.Fatal(err)
	}
	defer m16.Close()
	p := m16.Plan()
	n := 0
	for _, part := range p.Partitions {
		if part.Device != "" && part.Precision == "float16" {
			n++
		}
	}
	if n != 2 || !strings.Contains(p.Text(), "computes in float16") {
		t.Errorf("not disclosed:\n%s", p.Text())
	}
}

// The fallback is an ordinary device: Options.Fallback takes what no other
// backend does (its partitions are compiled and called through the HAL),
// and a fallback name nothing is registered under is a clear error.
func TestFallbackIsADevice(t *testing.T) {
	ctx := context.Background()
	ref, err := runtime.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fbBackend := sim.New(sim.Options{Name: "fb", Ops: []string{"Relu", "Add", "Neg"}})
	fb, err := hal.NewDevice(fbBackend, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Fallback: fb})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := equalOutputs(runTwo(t, ref, 1, -2, 3, -4), runTwo(t, m, 1, -2, 3, -4)); err != nil {
		t.Fatal(err)
	}
	if fbBackend.Calls() == 0 || m.Plan().Nodes[0].Backend != "fb" {
		t.Errorf("fallback not used: %d calls\n%s", fbBackend.Calls(), m.Plan().Text())
	}
	_, err = runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Policy: partitioner.Policy{Fallback: "nosuch"}})
	if !errors.Is(err, hal.ErrUnavailable) || !strings.Contains(err.Error(), `no fallback backend "nosuch" registered (forgotten import of plugins/cpu?)`) {
		t.Errorf("unregistered fallback: %v", err)
	}
}

// A profiled run of partitions called on host tensors asks each call for
// its own profile (hal.ProfilingExecutable): one execute span per call on
// the device's track, with its kernels; a backend without per-call
// profiles is asked once and then timed from the host.
func TestProfiledHostCalls(t *testing.T) {
	ctx := context.Background()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{1, -2, 3, 4})}
	hd, err := hal.NewDevice(hostOnly{sim.NewDeviceMemory(sim.Options{Ops: reluAdd})}, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer hd.Close()
	m, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{hd}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for run := 0; run < 2; run++ {
		_, st, err := m.RunWithStats(ctx, x, runtime.RunOptions{Profile: true})
		if err != nil {
			t.Fatal(err)
		}
		execs := 0
		for _, op := range st.DeviceOps {
			if op.Kind != "execute" || op.Device != "sim:0" || !op.DeviceClock || len(op.Kernels) == 0 || op.Start < 0 {
				t.Fatalf("op %+v", op)
			}
			for _, k := range op.Kernels {
				if len(k.Nodes) != 1 || k.Start < op.Start {
					t.Fatalf("kernel %+v of %+v", k, op)
				}
			}
			execs++
		}
		if execs != 2 {
			t.Fatalf("run %d: %d execute spans, want one per partition call (2)", run, execs)
		}
	}
	// unprofiled runs ask for nothing
	if _, st, err := m.RunWithStats(ctx, x, runtime.RunOptions{}); err != nil || len(st.DeviceOps) != 0 {
		t.Fatalf("unprofiled run: %v, %d device ops", err, len(st.DeviceOps))
	}
	// a backend without per-call profiles: the run works, nothing claimed
	pd, err := hal.NewDevice(sim.Open(sim.Options{Ops: reluAdd}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	m2, err := runtime.LoadBytes(ctx, twoPartitions(), &runtime.Options{Backends: []*hal.Device{pd}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	for run := 0; run < 2; run++ {
		if _, st, err := m2.RunWithStats(ctx, x, runtime.RunOptions{Profile: true}); err != nil || len(st.DeviceOps) != 0 {
			t.Fatalf("run %d without per-call profiles: %v, %d device ops", run, err, len(st.DeviceOps))
		}
	}
}
