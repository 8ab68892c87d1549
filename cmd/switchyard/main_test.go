package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/demo"
)

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "switchyard-cli")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "switchyard")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func sy(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// testDir writes an ONNX-test-layout directory for the demo model with the
// given expected output.
func testDir(t *testing.T, root, name string, want *graph.Tensor) string {
	t.Helper()
	dir := filepath.Join(root, name)
	set := filepath.Join(dir, "test_data_set_0")
	if err := os.MkdirAll(set, 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "model.onnx"), demo.Bytes(), 0o644))
	must(t, os.WriteFile(filepath.Join(set, "input_0.pb"), onnx.EncodeTensor(demo.InputName, demo.Input()), 0o644))
	must(t, os.WriteFile(filepath.Join(set, "output_0.pb"), onnx.EncodeTensor(demo.OutputName, want), 0o644))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRunDemo(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.json")
	out, code := sy(t, "run", "--trace", trace, "--backends", "cpu")
	if code != 0 || !strings.Contains(out, "probabilities: float32[1 10]") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	b, err := os.ReadFile(trace)
	must(t, err)
	var tr struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Dur  float64
		}
	}
	must(t, json.Unmarshal(b, &tr))
	convs := 0
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && strings.HasPrefix(e.Name, "Conv") {
			convs++
		}
	}
	if convs != 2 {
		t.Errorf("trace has %d Conv events, want 2", convs)
	}
}

func TestRunJSONAndOutputDir(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.npy")
	f, err := os.Create(in)
	must(t, err)
	must(t, tensorio.EncodeNPY(f, demo.Input()))
	f.Close()
	model := filepath.Join(dir, "demo.onnx")
	must(t, os.WriteFile(model, demo.Bytes(), 0o644))
	out, code := sy(t, "run", model, "--input", demo.InputName+"="+in, "--output-dir", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	var res struct {
		Outputs []struct {
			Name  string
			Shape []int
			Min   float64
			Max   float64
		}
	}
	must(t, json.Unmarshal([]byte(out), &res))
	if len(res.Outputs) != 1 || res.Outputs[0].Name != demo.OutputName || res.Outputs[0].Max > 1 || res.Outputs[0].Min < 0 {
		t.Fatalf("%+v", res)
	}
	p, err := tensorio.ReadFile(filepath.Join(dir, demo.OutputName+".npy"))
	must(t, err)
	sum := 0.0
	for _, v := range graph.Data[float32](p) {
		sum += float64(v)
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("softmax output sums to %g", sum)
	}
	if out, code := sy(t, "run", model, "--input", "nope="+in); code == 0 || !strings.Contains(out, `no input "nope"`) {
		t.Errorf("unknown input: exit %d %s", code, out)
	}
	// A bare FILE binds the inputs in order; one too many is refused.
	out2, code := sy(t, "run", model, "--input", in, "--json")
	var res2 struct{ Outputs []struct{ Min, Max float64 } }
	if code != 0 || json.Unmarshal([]byte(out2), &res2) != nil || len(res2.Outputs) != 1 || res2.Outputs[0].Min != res.Outputs[0].Min || res2.Outputs[0].Max != res.Outputs[0].Max {
		t.Errorf("positional input: exit %d\n%s", code, out2)
	}
	if out, code := sy(t, "run", model, "--input", in, "--input", in); code == 0 || !strings.Contains(out, "only 1 inputs") {
		t.Errorf("extra positional input: exit %d %s", code, out)
	}
}

func TestVerifyLinesAndExitStatus(t *testing.T) {
	root := t.TempDir()
	dir, _ := os.MkdirTemp(root, "")
	p := filepath.Join(dir, "p.npy")
	out, code := sy(t, "run", "--output-dir", dir)
	if code != 0 {
		t.Fatal(out)
	}
	want, err := tensorio.ReadFile(filepath.Join(dir, demo.OutputName+".npy"))
	must(t, err)
	_ = p
	good := testDir(t, root, "test_good", want)
	wrong := want.Clone()
	graph.Data[float32](wrong)[3] += 0.5
	bad := testDir(t, root, "test_bad", wrong)
	unsup := testDir(t, root, "test_unsupported", want)
	m := demo.Model()
	m.Graph.Nodes[1].OpType = "FancyRelu"
	must(t, os.WriteFile(filepath.Join(unsup, "model.onnx"), onnx.Encode(m), 0o644))

	out, code = sy(t, "verify", good)
	if code != 0 || !strings.HasSuffix(out, "ok test_good\n1 passed, 0 failed, 0 skipped\n") {
		t.Fatalf("good: exit %d:\n%s", code, out)
	}
	out, code = sy(t, "verify", good, bad, unsup, "--atol", "1e-6")
	if code != 1 {
		t.Errorf("exit %d with a failure", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[3] != "1 passed, 1 failed, 1 skipped" {
		t.Fatalf("output:\n%s", out)
	}
	if !strings.HasPrefix(lines[1], "FAIL test_bad: ") || !strings.Contains(lines[1], "element [0 3]") || !strings.Contains(lines[1], "got") {
		t.Errorf("fail line: %s", lines[1])
	}
	if !strings.HasPrefix(lines[2], "skip test_unsupported: ") || !strings.Contains(lines[2], "FancyRelu") {
		t.Errorf("skip line: %s", lines[2])
	}
}

func TestInspectAndBench(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "demo.onnx")
	must(t, os.WriteFile(model, demo.Bytes(), 0o644))
	out, code := sy(t, "inspect", model)
	for _, want := range []string{"opsets: ai.onnx 17", "image: float32[batch,1,28,28]", "Conv", "unsupported: none"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q:\n%s", want, out)
		}
	}
	out, code = sy(t, "bench", model, "--runs", "3", "--warmup", "1", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["median_ms"] == nil || res["allocs_per_run"] == nil {
		t.Fatalf("bench: exit %d %s", code, out)
	}
}

func TestBackendsAndExplain(t *testing.T) {
	out, code := sy(t, "backends")
	if code != 0 || !strings.Contains(out, "cpu") || strings.Contains(out, "simulated") || !strings.Contains(out, "speaks HAL "+hal.Current.String()) {
		t.Fatalf("backends (the sim test double registered only when asked for): exit %d\n%s", code, out)
	}
	out, code = syEnvCombined(t, []string{"SWITCHYARD_SIM_OPS=Relu"}, "backends")
	if code != 0 || !strings.Contains(out, "simulated") {
		t.Fatalf("SWITCHYARD_SIM_OPS=Relu backends: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "demo.onnx")
	must(t, os.WriteFile(model, demo.Bytes(), 0o644))
	out, code = sy(t, "explain", model, "--backends", "sim")
	if code != 0 || !strings.Contains(out, "on sim (delegated)") || !strings.Contains(out, "declined by sim: op MaxPool is not in the simulated set") {
		t.Fatalf("explain: exit %d\n%s", code, out)
	}
	out, code = sy(t, "explain", model, "--backends", "sim", "--json")
	var plan struct {
		Partitions []struct{ Backend string }
		Nodes      []struct{ Backend string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Nodes) != 9 {
		t.Fatalf("explain --json: exit %d\n%s", code, out)
	}
	page := filepath.Join(dir, "explain.html")
	if out, code := sy(t, "explain", model, "--backends", "sim", "--html", page); code != 0 {
		t.Fatalf("explain --html: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "<svg") || !strings.Contains(string(b), "partition") {
		t.Errorf("explain --html wrote %d bytes, err %v", len(b), err)
	}
	out, code = sy(t, "run", model, "--backends", "sim", "--strict")
	if code == 0 || !strings.Contains(out, "strict mode") || !strings.Contains(out, "MaxPool") {
		t.Fatalf("strict: exit %d\n%s", code, out)
	}
	out, code = sy(t, "run", model, "--backends", "nosuch")
	if code == 0 || !strings.Contains(out, `unknown backend "nosuch"`) {
		t.Fatalf("unknown backend: exit %d\n%s", code, out)
	}
	// the same outputs with and without the delegate
	a, _ := sy(t, "run", model, "--json", "--backends", "cpu")
	b, _ := sy(t, "run", model, "--json", "--backends", "sim")
	strip := func(s string) string {
		var v map[string]any
		_ = json.Unmarshal([]byte(s), &v)
		o, _ := json.Marshal(v["outputs"])
		return string(o)
	}
	if strip(a) == "" || strip(a) != strip(b) {
		t.Errorf("outputs differ with the sim backend:\n%s\n%s", a, b)
	}
}

// syEnv is sy with extra environment variables.
func syEnvCombined(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}

// With the device-memory double as "sim": explain lists every transfer
// with its bytes (JSON and text), run --trace has a track for the device
// with its uploads, executions and downloads, bench reports the bytes.
func TestTransfersShown(t *testing.T) {
	env := []string{`SWITCHYARD_SIM_OPTIONS={"ops":["Conv","Relu","Add","MatMul"],"device_memory":true}`}
	dir := t.TempDir()
	model := filepath.Join(dir, "demo.onnx")
	must(t, os.WriteFile(model, demo.Bytes(), 0o644))
	out, code := syEnvCombined(t, env, "explain", model, "--backends", "sim", "--json")
	var plan struct {
		Partitions []struct{ Backend, Device string }
		Transfers  []struct {
			Value, Direction, From, To string
			Bytes                      int64
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Transfers) == 0 {
		t.Fatalf("explain --json: exit %d\n%s", code, out)
	}
	for _, tr := range plan.Transfers {
		if tr.Value == "" || tr.Bytes == 0 || (tr.Direction != "upload" && tr.Direction != "download") || tr.From == tr.To {
			t.Errorf("transfer %+v", tr)
		}
	}
	out, code = syEnvCombined(t, env, "explain", model, "--backends", "sim")
	if code != 0 || !strings.Contains(out, "transfers per run:") || !strings.Contains(out, "host → sim:0") {
		t.Errorf("explain text:\n%s", out)
	}
	trace := filepath.Join(dir, "trace.json")
	out, code = syEnvCombined(t, env, "run", model, "--backends", "sim", "--trace", trace)
	if code != 0 || !strings.Contains(out, "transfers:") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			Pid      int
			Args     map[string]any
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	pid := 0
	kinds := map[string]int{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" && e.Args["name"] == "device sim:0" {
			pid = e.Pid
		}
	}
	for _, e := range tr.TraceEvents {
		if e.Pid == pid && e.Ph == "X" {
			kinds[strings.Fields(e.Name)[0]]++
		}
	}
	if pid == 0 || kinds["upload"] == 0 || kinds["execute"] == 0 || kinds["download"] == 0 {
		t.Errorf("device track: pid %d, spans %v", pid, kinds)
	}
	out, code = syEnvCombined(t, env, "bench", model, "--backends", "sim", "--runs", "2", "--warmup", "0", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["upload_bytes_per_run"] == nil || res["upload_bytes_per_run"].(float64) <= 0 {
		t.Fatalf("bench: exit %d %s", code, out)
	}
}
