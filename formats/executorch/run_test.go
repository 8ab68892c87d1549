package executorch_test

import (
	"context"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/shared"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/runtime"
)

// run lowers method of a shared program and runs it on inputs (in order).
func run(t *testing.T, rel, method string, data []string, inputs ...*graph.Tensor) []*graph.Tensor {
	t.Helper()
	path := shared.Path(t, "testdata/executorch/"+rel)
	var files []string
	for _, d := range data {
		files = append(files, shared.Path(t, "testdata/executorch/"+d))
	}
	ir, err := executorch.LoadFile(path, method, files, 0)
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatalf("%s: prepare: %v", rel, err)
	}
	defer m.Close()
	feeds := map[string]*graph.Tensor{}
	for i, in := range m.Inputs() {
		if i < len(inputs) {
			feeds[in.Name] = inputs[i]
		}
	}
	out, err := m.Run(context.Background(), feeds)
	if err != nil {
		t.Fatalf("%s: run: %v", rel, err)
	}
	var res []*graph.Tensor
	for _, o := range m.Outputs() {
		res = append(res, out[o.Name])
	}
	return res
}

func near(t *testing.T, what string, got *graph.Tensor, want []float64, tol float64) {
	t.Helper()
	g := got.Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, g, want)
	}
	for i := range g {
		if math.Abs(g[i]-want[i]) > tol {
			t.Fatalf("%s: got %v, want %v", what, g, want)
		}
	}
}

func TestRunSmall(t *testing.T) {
	f := func(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
	out := run(t, "add.pte", "", nil, f([]int{1}, 2), f([]int{1}, 3.5))
	near(t, "add", out[0], []float64{5.5}, 0)
	out = run(t, "add_one.pte", "", nil, f([]int{3}, 1, 2, 3))
	near(t, "add_one", out[0], []float64{2, 3, 4}, 0)
	out = run(t, "more/arduino_add.pte", "", nil, f([]int{3}, 1, 2, 3))
	near(t, "arduino_add", out[0], []float64{2, 3, 4}, 0)
	out = run(t, "mean_where.pte", "", nil, f([]int{1, 2}, 1, 2))
	near(t, "mean_where", out[0], []float64{1.5}, 0)
	// 3x + 2 with both constants in the deprecated inline buffer.
	out = run(t, "linear_deprecated_constant_buffer.pte", "", nil, f([]int{2, 2}, 1, 2, 3, 4))
	near(t, "deprecated constant buffer", out[0], []float64{5, 8, 11, 14}, 0)
	// linear(I) = W^T + b, W and b from linear.ptd (found beside the
	// program), the values read from its bytes.
	out = run(t, "linear.pte", "", nil, f([]int{3, 3}, 1, 0, 0, 0, 1, 0, 0, 0, 1))
	near(t, "linear", out[0], []float64{0.50694513, -0.41487929, 0.25344688, 0.49849865, -0.10767099, 0.36129457, -0.23635349, 0.28466302, -0.20947401}, 1e-7)
}

func TestBundled(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "testdata/executorch/bundled_program.bpte"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := executorch.ParseBundled(data, 0)
	if err != nil {
		t.Fatal(err)
	}
	ir, err := executorch.LoadFile(shared.Path(t, "testdata/executorch/bundled_program.bpte"), "", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	n := 0
	for _, s := range b.Suites {
		for ci, c := range s.Cases {
			feeds := map[string]*graph.Tensor{}
			for i, in := range m.Inputs() {
				feeds[in.Name] = c.Inputs[i]
			}
			out, err := m.Run(context.Background(), feeds)
			if err != nil {
				t.Fatalf("%s case %d: %v", s.Method, ci, err)
			}
			for i, o := range m.Outputs() {
				got, want := out[o.Name], c.Expected[i]
				if got.DType != want.DType || !slices.Equal(got.Shape, want.Shape) || !slices.Equal(got.Float64s(), want.Float64s()) {
					t.Fatalf("%s case %d output %d: got %v, want %v", s.Method, ci, i, got, want)
				}
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no bundled test cases")
	}
	t.Logf("%d bundled cases pass", n)
}
