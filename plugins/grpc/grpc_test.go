package grpcplugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/manifest"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	swrt "github.com/switchyard-hal/switchyard/runtime"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	pluginBin string
	pluginSum string
)

// simPlugin builds sdk/examples/simplugin once per test binary.
func simPlugin(t testing.TB) (path, sum string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		backendtest.SkipUnlessRequired(t, "grpc", "out-of-process backends need Linux memfd")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "switchyard-plugin-test-")
		if buildErr != nil {
			return
		}
		pluginBin = filepath.Join(buildDir, "simplugin")
		out, err := exec.Command("go", "build", "-o", pluginBin, "github.com/switchyard-hal/switchyard/sdk/examples/simplugin").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build simplugin: %v\n%s", err, out)
			return
		}
		pluginSum, buildErr = manifest.FileSHA256(pluginBin)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return pluginBin, pluginSum
}

func TestMain(m *testing.M) {
	if os.Getenv("SWITCHYARD_TEST_HELPER_HOST") != "" {
		helperHost()
		return
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func simEnv(opts sim.Options) string {
	b, _ := json.Marshal(opts)
	return "SWITCHYARD_SIM_OPTIONS=" + string(b)
}

func openPlugin(t testing.TB, opts grpcplugin.Options) *grpcplugin.Backend {
	t.Helper()
	path, sum := simPlugin(t)
	if opts.Path == "" {
		opts.Path = path
	}
	if opts.SHA256 == "" {
		opts.SHA256 = sum
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger(t)
	}
	b, err := grpcplugin.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func device(t testing.TB, b hal.Backend, kind hal.LoadKind) *hal.Device {
	t.Helper()
	d, err := hal.NewDevice(b, kind)
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
		if y == nil || x.DType != y.DType || !graph.SameShape(x.Shape, y.Shape) {
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

// The four real models: the simulation backend in process and out of
// process (same claimed ops) give bit-identical outputs.
func TestModelsInAndOutOfProcessIdentical(t *testing.T) {
	root := shared.Path(t, "testdata/models")
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	ops := []string{"Conv", "Relu", "Add", "MatMul"}
	ctx := context.Background()
	plug := device(t, openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: ops})}}), hal.LoadProcess)
	n := 0
	for _, dir := range dirs {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			continue
		}
		n++
		t.Run(filepath.Base(dir), func(t *testing.T) {
			in := device(t, sim.New(sim.Options{Ops: ops}), hal.LoadLinked)
			mIn, err := swrt.LoadDir(ctx, dir, &swrt.Options{Backends: []*hal.Device{in}})
			if err != nil {
				t.Fatal(err)
			}
			defer mIn.Close()
			mOut, err := swrt.LoadDir(ctx, dir, &swrt.Options{Backends: []*hal.Device{plug}})
			if err != nil {
				t.Fatal(err)
			}
			defer mOut.Close()
			if a, b := mIn.Plan().Text(), mOut.Plan().Text(); a != b {
				t.Fatalf("placement differs:\n%s\nvs\n%s", a, b)
			}
			ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]*graph.Tensor{}
			for i, vi := range mIn.Inputs() {
				if i < len(ins) {
					feeds[vi.Name] = ins[i]
				}
			}
			want, err := mIn.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			for run := 0; run < 2; run++ { // second run reuses regions and output sizes
				got, err := mOut.Run(ctx, feeds)
				if err != nil {
					t.Fatal(err)
				}
				if err := equalOutputs(want, got); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
			calls := int64(0)
			for _, ps := range mOut.PartitionStats() {
				calls += ps.Calls
			}
			t.Logf("%d partition calls through the plugin", calls)
		})
	}
	if n != 4 {
		t.Errorf("found %d model directories, want 4", n)
	}
}

func reluAddModel(n int) []byte {
	g := &graph.Graph{
		Name:    "small",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n)}}},
		Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
			{OpType: "Add", Inputs: []string{"y", "x"}, Outputs: []string{"z"}},
		},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

// kill -9 of the plugin during a Run: that Run fails with Unavailable
// within a second, and the next Run succeeds on the restarted process.
func TestKillDuringRun(t *testing.T) {
	ctx := context.Background()
	b := openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}, Faults: sim.Faults{ExecuteDelay: 400 * time.Millisecond}})}})
	dev := device(t, b, hal.LoadProcess)
	m, err := swrt.LoadBytes(ctx, reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}
	if _, err := m.Run(ctx, x); err != nil {
		t.Fatal(err)
	}
	pid := b.PID()
	errc := make(chan error, 1)
	go func() { _, err := m.Run(ctx, x); errc <- err }()
	time.Sleep(100 * time.Millisecond)
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-errc:
		took := time.Since(killed)
		t.Logf("in-flight Run failed %v after kill -9: %v", took, err)
		if !errors.Is(err, hal.ErrUnavailable) {
			t.Fatalf("want Unavailable, got %v", err)
		}
		if took > time.Second {
			t.Fatalf("Unavailable took %v", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight Run did not fail after kill -9")
	}
	start := time.Now()
	got, err := m.Run(ctx, x)
	if err != nil {
		t.Fatalf("Run after restart: %v", err)
	}
	t.Logf("next Run succeeded after %v on pid %d (was %d), generation %d", time.Since(start), b.PID(), pid, b.Generation())
	if want := []float32{-1, 4, -3, 8}; fmt.Sprint(graph.Data[float32](got["z"])) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got["z"], want)
	}
	if b.PID() == pid || b.Generation() < 2 {
		t.Fatalf("plugin was not restarted (pid %d, generation %d)", b.PID(), b.Generation())
	}
}

// A plugin whose Execute never returns (and ignores its context): the
// call's deadline fires.
func TestHangingPluginDeadline(t *testing.T) {
	ctx := context.Background()
	b := openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}}), "SWITCHYARD_SIMPLUGIN_HANG=1"}})
	dev := device(t, b, hal.LoadProcess)
	m, err := swrt.LoadBytes(ctx, reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Run(dctx, x)
	took := time.Since(start)
	t.Logf("hung call returned after %v: %v", took, err)
	if !errors.Is(err, hal.ErrDeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
	if took > 2*time.Second {
		t.Fatalf("deadline fired late: %v", took)
	}
	// the plugin is still alive and answers other calls
	if err := b.Health(ctx); err != nil {
		t.Fatal(err)
	}
}

// The default per-call deadline applies when the caller sets none.
func TestDefaultCallTimeout(t *testing.T) {
	b := openPlugin(t, grpcplugin.Options{CallTimeout: 150 * time.Millisecond, Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}}), "SWITCHYARD_SIMPLUGIN_HANG=1"}})
	dev := device(t, b, hal.LoadProcess)
	m, err := swrt.LoadBytes(context.Background(), reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Run(context.Background(), map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})})
	if !errors.Is(err, hal.ErrDeadlineExceeded) {
		t.Fatalf("want DeadlineExceeded, got %v", err)
	}
}

func TestChecksumMismatchNamesBothHashes(t *testing.T) {
	path, sum := simPlugin(t)
	wrong := strings.Repeat("ab", 32)
	_, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: path, SHA256: wrong, Logger: quietLogger(t)})
	if err == nil || !strings.Contains(err.Error(), wrong) || !strings.Contains(err.Error(), sum) {
		t.Fatalf("want both %s and %s named, got %v", wrong, sum, err)
	}
	if !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Fatalf("code: %v", err)
	}
}

func TestIncompatibleHALNamesBothVersions(t *testing.T) {
	r := hal.VersionRange{Min: hal.Version{Major: 2}, Max: hal.Version{Major: 2, Minor: 3}}
	path, sum := simPlugin(t)
	_, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: path, SHA256: sum, Logger: quietLogger(t),
		Env: []string{simEnv(sim.Options{Ops: []string{"Relu"}, HAL: &r})}})
	if err == nil || !strings.Contains(err.Error(), hal.Current.String()) || !strings.Contains(err.Error(), r.String()) {
		t.Fatalf("want versions %s and %s named, got %v", hal.Current, r, err)
	}
	if !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Fatalf("code: %v", err)
	}
}

// helperHost is the test binary re-run as a host process that opens the
// plugin, prints its pid and waits to be killed.
func helperHost() {
	b, err := grpcplugin.Open(context.Background(), grpcplugin.Options{Path: os.Getenv("SWITCHYARD_TEST_PLUGIN"), SHA256: os.Getenv("SWITCHYARD_TEST_PLUGIN_SHA256"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pid", b.PID())
	time.Sleep(time.Minute)
	os.Exit(0)
}

func pidGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// a zombie waiting for its new parent to reap it has exited too
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func TestHostDeathKillsPlugin(t *testing.T) {
	path, sum := simPlugin(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SWITCHYARD_TEST_HELPER_HOST=1", "SWITCHYARD_TEST_PLUGIN="+path, "SWITCHYARD_TEST_PLUGIN_SHA256="+sum)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper host: %v (%q)", err, line)
	}
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "pid" {
		t.Fatalf("helper host said %q", line)
	}
	pid, _ := strconv.Atoi(f[1])
	if pidGone(pid) {
		t.Fatalf("plugin %d is not running", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	killed := time.Now()
	for !pidGone(pid) {
		if time.Since(killed) > 5*time.Second {
			t.Fatalf("plugin %d still running 5 s after its host was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("plugin %d exited %v after its host was killed", pid, time.Since(killed))
}

// Tensors and constants far over gRPC's 4 MiB default go through shared
// memory; an output of unknown shape that outgrows the space offered comes
// back in a plugin-created region.
func TestLargeTensorsAndConstants(t *testing.T) {
	const n = 4 << 20 // 16 MiB of float32
	c := make([]float32, n)
	x := make([]float32, n)
	for i := range c {
		c[i], x[i] = float32(i%97), float32(i%89)-44
	}
	g := &graph.Graph{
		Name:         "big",
		Inputs:       []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n)}}},
		Outputs:      []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Initializers: map[string]*graph.Tensor{"c": graph.MustFromSlice([]int{n}, c)},
		Nodes: []*graph.Node{
			{OpType: "Add", Inputs: []string{"x", "c"}, Outputs: []string{"y"}},
			{OpType: "Relu", Inputs: []string{"y"}, Outputs: []string{"z"}},
		},
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	ctx := context.Background()
	ops := []string{"Relu", "Add"}
	want := graph.Tensor{}
	in := device(t, sim.New(sim.Options{Ops: ops}), hal.LoadLinked)
	ci, err := in.Compile(ctx, sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	xt := graph.MustFromSlice([]int{n}, x)
	if err := ci.Execute(ctx, []*graph.Tensor{xt}, []*graph.Tensor{&want}); err != nil {
		t.Fatal(err)
	}
	out := device(t, openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: ops})}}), hal.LoadProcess)
	vs, err := out.Supports(ctx, sg)
	if err != nil || !vs[0].Supported || !vs[1].Supported {
		t.Fatalf("supports: %v %v", vs, err)
	}
	co, err := out.Compile(ctx, sg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 3; run++ {
		got := graph.Tensor{}
		if run == 2 {
			got = graph.Tensor{DType: graph.Float32, Shape: []int{n}, Data: make([]float32, n)}
		}
		if err := co.Execute(ctx, []*graph.Tensor{xt}, []*graph.Tensor{&got}); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if err := equalOutputs(map[string]*graph.Tensor{"z": &want}, map[string]*graph.Tensor{"z": &got}); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	_ = co.Release()
}

func countFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		backendtest.SkipUnlessRequired(t, "grpc", "no /proc/self/fd to count open files")
	}
	return len(ents)
}

func socketDirs() int {
	d, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("switchyard-plugin-%d-*", os.Getpid())))
	return len(d)
}

// Open, run, crash, restart, close: no goroutine, descriptor or socket
// directory is left behind.
func TestNoLeaks(t *testing.T) {
	simPlugin(t)
	runtime.GC()
	g0, f0, s0 := runtime.NumGoroutine(), countFDs(t), socketDirs()
	func() {
		ctx := context.Background()
		path, sum := simPlugin(t)
		b, err := grpcplugin.Open(ctx, grpcplugin.Options{Path: path, SHA256: sum, Logger: quietLogger(t), Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}})}})
		if err != nil {
			t.Fatal(err)
		}
		dev, err := hal.NewDevice(b, hal.LoadProcess)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		m, err := swrt.LoadBytes(ctx, reluAddModel(1<<16), &swrt.Options{Backends: []*hal.Device{dev}})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1 << 16}, make([]float32, 1<<16))}
		for i := 0; i < 5; i++ {
			if _, err := m.Run(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		_ = b.Kill()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := m.Run(ctx, x); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("no recovery: %v", err)
			}
		}
		if b.Generation() < 2 {
			t.Fatal("not restarted")
		}
	}()
	var g1, f1, s1 int
	for i := 0; i < 100; i++ {
		runtime.GC()
		g1, f1, s1 = runtime.NumGoroutine(), countFDs(t), socketDirs()
		if g1 <= g0 && f1 <= f0 && s1 <= s0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("goroutines %d -> %d, fds %d -> %d, socket dirs %d -> %d", g0, g1, f0, f1, s0, s1)
	if g1 > g0 || f1 > f0 || s1 > s0 {
		buf := make([]byte, 1<<20)
		t.Fatalf("leak: goroutines %d -> %d, fds %d -> %d, socket dirs %d -> %d\n%s", g0, g1, f0, f1, s0, s1, buf[:runtime.Stack(buf, true)])
	}
}

// With restarts disabled, a crash leaves the backend Unavailable (the
// runtime's policy can then re-place on cpu).
func TestRestartDisabled(t *testing.T) {
	b := openPlugin(t, grpcplugin.Options{Restart: grpcplugin.RestartPolicy{Disabled: true}, Env: []string{simEnv(sim.Options{Ops: []string{"Relu"}})}})
	_ = b.Kill()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := b.Health(context.Background())
		if errors.Is(err, hal.ErrUnavailable) && strings.Contains(err.Error(), "restarts are disabled") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want Unavailable, got %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A plugin that dies with restarts disabled, under the runtime's
// ReplaceOnCPU policy: the Run that hit the dead process and every later
// Run succeed on the reference kernels, and the placement report says so.
func TestCrashReplacedOnCPU(t *testing.T) {
	ctx := context.Background()
	b := openPlugin(t, grpcplugin.Options{Restart: grpcplugin.RestartPolicy{Disabled: true}, Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}})}})
	dev := device(t, b, hal.LoadProcess)
	m, err := swrt.LoadBytes(ctx, reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}, OnUnavailable: swrt.ReplaceOnCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}
	if _, err := m.Run(ctx, x); err != nil {
		t.Fatal(err)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		got, err := m.Run(ctx, x)
		if err != nil {
			t.Fatalf("run %d after the crash: %v", i, err)
		}
		if want := []float32{-1, 4, -3, 8}; fmt.Sprint(graph.Data[float32](got["z"])) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got["z"], want)
		}
	}
	r := m.Plan().Partitions[0].Replaced
	if r == nil || r.To != "cpu" {
		t.Fatalf("placement report does not record the re-placement:\n%s", m.Plan().Text())
	}
	t.Logf("re-placed: %s", r.Reason)
}

// Device buffers: tensors allocated in shared memory travel by descriptor
// (no copy in), outputs are written in place (no copy out), and they keep
// working after the plugin process is restarted.
func TestDeviceBuffers(t *testing.T) {
	ctx := context.Background()
	b := openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{"Relu"}})}})
	dev := device(t, b, hal.LoadProcess)
	c, err := dev.Compile(ctx, identity(5, "Relu"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	x, err := dev.AllocTensor(ctx, graph.Float32, []int{5})
	if err != nil {
		t.Fatal(err)
	}
	y, err := dev.AllocTensor(ctx, graph.Float32, []int{5})
	if err != nil {
		t.Fatal(err)
	}
	copy(graph.Data[float32](x), []float32{-2, -1, 0, 1, 2})
	check := func(what string) {
		t.Helper()
		if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := fmt.Sprint(graph.Data[float32](y)); got != "[0 0 0 1 2]" {
			t.Fatalf("%s: y = %s", what, got)
		}
	}
	check("first call")
	graph.Data[float32](x)[4] = 7 // the plugin reads the caller's memory
	if err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y}); err != nil || graph.Data[float32](y)[4] != 7 {
		t.Fatalf("second call: %v %v", err, y)
	}
	graph.Data[float32](x)[4] = 2
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{y})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery after restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("after restart")
	if err := dev.FreeTensor(x); err != nil {
		t.Fatal(err)
	}
	if err := dev.FreeTensor(x); err == nil {
		t.Error("freeing twice was accepted")
	}
	_ = dev.FreeTensor(y)
	// a backend without device buffers says so
	in := device(t, sim.New(sim.Options{Ops: []string{"Relu"}}), hal.LoadLinked)
	if _, err := in.AllocTensor(ctx, graph.Float32, []int{1}); !errors.Is(err, hal.ErrUnsupported) {
		t.Errorf("in-process sim: %v", err)
	}
}
