package switchyard_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"github.com/switchyard-hal/switchyard/internal/demo"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
)

func openDemo(t testing.TB, opts *switchyard.OpenOptions) *switchyard.Model {
	t.Helper()
	m, err := switchyard.OpenBytes(context.Background(), demo.Bytes(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// Many goroutines running one model get the serial run's outputs (run
// with -race).
func TestConcurrentRuns(t *testing.T) {
	m := openDemo(t, nil)
	ctx := context.Background()
	in := switchyard.Tensors{demo.InputName: demoInput()}
	want, err := m.Run(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	wantP := f32s(want[demo.OutputName])
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				outs, err := m.Run(ctx, in)
				if err != nil {
					errs <- err
					return
				}
				got := f32s(outs[demo.OutputName])
				for j := range got {
					if got[j] != wantP[j] {
						errs <- fmt.Errorf("element %d: got %v, want %v", j, got[j], wantP[j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestInputErrors(t *testing.T) {
	m := openDemo(t, &switchyard.OpenOptions{Backends: []string{"native"}})
	ctx := context.Background()
	f32 := func(shape ...int) *switchyard.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		x, err := switchyard.NewTensor(shape, make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	i64, _ := switchyard.NewTensor([]int{1, 1, 28, 28}, make([]int64, 28*28))
	for _, c := range []struct {
		name string
		in   switchyard.Tensors
		want error
		says []string
	}{
		{"unknown", switchyard.Tensors{"pixels": f32(1, 1, 28, 28)}, switchyard.ErrUnknownInput, []string{`"pixels"`, `"image"`}},
		{"missing", switchyard.Tensors{}, switchyard.ErrMissingInput, []string{`"image"`, "float32"}},
		{"dtype", switchyard.Tensors{"image": i64}, switchyard.ErrDType, []string{"float32", "int64"}},
		{"rank", switchyard.Tensors{"image": f32(28, 28)}, switchyard.ErrShape, []string{"[28 28]", "28 28]"}},
		{"dim", switchyard.Tensors{"image": f32(1, 3, 28, 28)}, switchyard.ErrShape, []string{"[1 3 28 28]"}},
		{"nil", switchyard.Tensors{"image": nil}, switchyard.ErrInvalidTensor, []string{`"image"`}},
		{"bad data", switchyard.Tensors{"image": {}}, switchyard.ErrInvalidTensor, []string{`"image"`}},
	} {
		_, err := m.Run(ctx, c.in)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
			continue
		}
		var te *switchyard.TensorError
		if !errors.As(err, &te) {
			t.Errorf("%s: %v is not a *TensorError", c.name, err)
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", c.name, err, s)
			}
		}
	}
	// RunInto: an unknown output, a wrong destination
	in := switchyard.Tensors{"image": f32(1, 1, 28, 28)}
	if err := m.RunInto(ctx, in, switchyard.Tensors{"logits": f32(1, 10)}); !errors.Is(err, switchyard.ErrUnknownOutput) {
		t.Errorf("RunInto unknown output: %v", err)
	}
	if err := m.RunInto(ctx, in, switchyard.Tensors{"probabilities": f32(1, 9)}); !errors.Is(err, switchyard.ErrShape) {
		t.Errorf("RunInto wrong shape: %v", err)
	}
}

// Close interrupts or lets finish the Runs in flight; every Run after it
// fails with ErrClosed, and nothing panics.
func TestRunAfterClose(t *testing.T) {
	m, err := switchyard.OpenBytes(context.Background(), demo.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	in := switchyard.Tensors{demo.InputName: demoInput()}
	var wg sync.WaitGroup
	start := make(chan struct{})
	bad := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; i < 20; i++ {
				if _, err := m.Run(ctx, in); err != nil {
					if !errors.Is(err, switchyard.ErrClosed) {
						bad <- err
					}
					return
				}
			}
		}()
	}
	close(start)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Errorf("a Run interrupted by Close: %v, want ErrClosed", err)
	}
	if _, err := m.Run(ctx, in); !errors.Is(err, switchyard.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// An engine's Close closes its models; a context cancelled before the
// Run stops it.
func TestEngineCloseAndContext(t *testing.T) {
	ctx := context.Background()
	e, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Run(cctx, switchyard.Tensors{demo.InputName: demoInput()}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(ctx, switchyard.Tensors{demo.InputName: demoInput()}); !errors.Is(err, switchyard.ErrClosed) {
		t.Errorf("Run after the engine's Close: %v", err)
	}
	if _, err := e.OpenBytes(ctx, demo.Bytes(), nil); !errors.Is(err, switchyard.ErrClosed) {
		t.Errorf("OpenBytes after Close: %v", err)
	}
}

func TestBackendErrors(t *testing.T) {
	_, err := switchyard.OpenBytes(context.Background(), demo.Bytes(), &switchyard.OpenOptions{Backends: []string{"nosuch"}})
	var be *switchyard.BackendError
	if !errors.Is(err, switchyard.ErrUnknownBackend) || !errors.As(err, &be) || be.Backend != "nosuch" {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := switchyard.OpenBytes(context.Background(), []byte("not a model"), nil); err == nil {
		t.Error("garbage bytes loaded")
	}
	if _, err := switchyard.Open(context.Background(), filepath.Join(t.TempDir(), "none.onnx"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// expected reads a test-layout dir's first input and output sets.
func expected(t *testing.T, dir string) (in, out []*switchyard.Tensor) {
	gin, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
	if err != nil {
		t.Fatal(err)
	}
	gout, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "output")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gin {
		in = append(in, apiaccess.Tensor(g).(*switchyard.Tensor))
	}
	for _, g := range gout {
		out = append(out, apiaccess.Tensor(g).(*switchyard.Tensor))
	}
	return in, out
}

// close reports whether got matches want as `switchyard verify` compares
// floats (|got-want| <= atol + rtol*|want|, its defaults).
func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-7+1e-3*math.Abs(want) }

// A real model through the API gives the outputs `switchyard verify`
// checks against.
func TestSharedModelThroughAPI(t *testing.T) {
	dir := shared.Path(t, "testdata/models/ppocr_mobile_v2_cls")
	_, want := expected(t, dir)
	m, err := switchyard.Open(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	outs, err := m.Run(context.Background(), m.ExampleInputs())
	if err != nil {
		t.Fatal(err)
	}
	got := outs[m.Outputs()[0].Name]
	if fmt.Sprint(got.Shape()) != fmt.Sprint(want[0].Shape()) {
		t.Fatalf("shape %v, want %v", got.Shape(), want[0].Shape())
	}
	for i := 0; i < got.Len(); i++ {
		if !closeTo(got.Float64At(i), want[0].Float64At(i)) {
			t.Errorf("element %d: %v, want %v", i, got.Float64At(i), want[0].Float64At(i))
		}
	}
}

// externalMain is a whole program in a module of its own that imports only
// the switchyard package (under 30 lines).
const externalMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/switchyard-hal/switchyard"
)

func main() {
	ctx := context.Background()
	m, err := switchyard.Open(ctx, os.Args[1], nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer m.Close()
	outs, err := m.Run(ctx, m.ExampleInputs())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	probs, _ := switchyard.Values[float32](outs[m.Outputs()[0].Name])
	fmt.Println(probs)
}
`

// A new module outside this repository (replace directive) imports only
// the root package and runs a real model with the expected outputs.
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program (-short)")
	}
	dir := shared.Path(t, "testdata/models/ppocr_mobile_v2_cls")
	if n := strings.Count(externalMain, "\n"); n >= 30 {
		t.Fatalf("the user program has %d lines", n)
	}
	_, want := expected(t, dir)
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	// The app's go.mod lists the modules the root package links, as go
	// mod tidy would write them: with them the go command needs no go.mod
	// of a module that is not already in the module cache, which holds
	// what building this test fetched — and no more on a fresh machine
	// (GOPROXY is off here).
	reqs, err := requireBlocks(root)
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/app\n\ngo 1.26\n\nrequire github.com/switchyard-hal/switchyard v0.0.0\n\n" + reqs + "replace github.com/switchyard-hal/switchyard => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(externalMain)} {
		if err := os.WriteFile(filepath.Join(mod, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	out := run("run", ".", dir)
	line := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	fields := strings.Fields(strings.Trim(line, "[]"))
	if len(fields) != want[0].Len() {
		t.Fatalf("printed %q, want %d values", line, want[0].Len())
	}
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !closeTo(v, want[0].Float64At(i)) {
			t.Errorf("value %d: %q, want %v", i, f, want[0].Float64At(i))
		}
	}
}

// requireBlocks returns a require block of the modules that provide the
// packages the root package links (as go list -deps sees them from root),
// at the versions the build uses: what the app's go.mod needs to build it,
// and nothing whose go.mod a fresh module cache lacks (the module's own
// go.mod also lists modules only the command links, such as cobra's
// Windows-only mousetrap, which the build of the root package never
// fetches).
func requireBlocks(root string) (string, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}", ".")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -deps: %w", err)
	}
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString("require (\n")
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		b.WriteString("\t" + line + "\n")
	}
	b.WriteString(")\n\n")
	return b.String(), nil
}

// BenchmarkOverhead compares a Run through the API with the same Run on
// runtime directly (same backend, same inputs): the difference is
// the API's cost (input checks, error wrapping).
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	in := switchyard.Tensors{demo.InputName: demoInput()}
	b.Run("api", func(b *testing.B) {
		m := openDemo(b, &switchyard.OpenOptions{Backends: []string{"native"}})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Run(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("runtime", func(b *testing.B) {
		e, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native"}})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		m, err := runtime.LoadBytes(ctx, demo.Bytes(), apiaccess.EngineRuntimeOptions(e))
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close()
		rin := map[string]*graph.Tensor{demo.InputName: demo.Input()}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Run(ctx, rin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-only", func(b *testing.B) {
		// the API's own work per Run, without the model: an empty-graph
		// equivalent is not possible, so time the checks on a closed model
		m := openDemo(b, &switchyard.OpenOptions{Backends: []string{"native"}})
		_ = m.Close()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Run(ctx, in); !errors.Is(err, switchyard.ErrClosed) {
				b.Fatal(err)
			}
		}
	})
}

// RunInto hands the caller's tensor to whatever computes the output: the
// engine's reference kernels (cpu) or a backend (native) write it in
// place, so nothing is copied after the run (Stats.InPlace), and the
// values are Run's.
func TestRunIntoInPlace(t *testing.T) {
	ctx := context.Background()
	in := switchyard.Tensors{demo.InputName: demoInput()}
	for _, backends := range [][]string{{"cpu"}, {"native"}} {
		t.Run(strings.Join(backends, ","), func(t *testing.T) {
			var last *switchyard.Stats
			m := openDemo(t, &switchyard.OpenOptions{Backends: backends, OnRun: func(_ string, st *switchyard.Stats) { last = st }})
			want, err := m.Run(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			probs := make([]float32, 10)
			dst, _ := switchyard.NewTensor([]int{1, 10}, probs)
			for range 2 {
				if err := m.RunInto(ctx, in, switchyard.Tensors{demo.OutputName: dst}); err != nil {
					t.Fatal(err)
				}
				if last == nil || last.InPlace != 1 || last.Copied != 0 {
					t.Fatalf("stats %+v: want the output written in place (InPlace 1, Copied 0)", last)
				}
			}
			for i, w := range f32s(want[demo.OutputName]) {
				if probs[i] != w {
					t.Fatalf("element %d: %v, Run gives %v", i, probs[i], w)
				}
			}
		})
	}
}

// demoInput is the demo model's example input.
func demoInput() *switchyard.Tensor { return apiaccess.Tensor(demo.Input()).(*switchyard.Tensor) }

// f32s is a float32 tensor's elements.
func f32s(t *switchyard.Tensor) []float32 {
	v, err := switchyard.Values[float32](t)
	if err != nil {
		panic(err)
	}
	return v
}

// TestOpenOptionsOnEngine: the model fields of NewEngine's OpenOptions are
// its models' defaults, Engine.OpenBytes's own replace them, and an
// engine field given to an open engine is refused by name, not ignored.
func TestOpenOptionsOnEngine(t *testing.T) {
	ctx := context.Background()
	e, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}, Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	m, err := e.OpenBytes(ctx, demo.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "first" {
		t.Errorf("model named %q, want the engine's default %q", m.Name(), "first")
	}
	m2, err := e.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Name: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Name() != "second" {
		t.Errorf("model named %q, want %q", m2.Name(), "second")
	}
	_, err = e.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Threads: 2})
	if !errors.Is(err, switchyard.ErrInvalid) || !strings.Contains(fmt.Sprint(err), "Threads") {
		t.Errorf("an engine field on Engine.OpenBytes: %v, want ErrInvalid naming Threads", err)
	}
	if _, st, err := m2.RunWithStats(ctx, switchyard.Tensors{demo.InputName: demoInput()}, &switchyard.RunOptions{Profile: true}); err != nil || len(st.Nodes) == 0 {
		t.Errorf("RunWithStats with Profile: %v, %d node timings", err, len(st.Nodes))
	}
}
