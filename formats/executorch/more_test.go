package executorch_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

func ramp(shape []int, f func(i int) float32) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = f(i)
	}
	return graph.MustFromSlice(shape, v)
}

func TestCadencePortable(t *testing.T) {
	// _softmax over the last dim of [2, 4096].
	x := ramp([]int{2, 4096}, func(i int) float32 { return float32(i%97) / 13 })
	got := run(t, "more/cadence_softmax.pte", "", nil, x)[0].Float64s()
	xs := x.Float64s()
	for r := 0; r < 2; r++ {
		mx, sum := math.Inf(-1), 0.0
		for _, v := range xs[r*4096 : (r+1)*4096] {
			mx = math.Max(mx, v)
		}
		for _, v := range xs[r*4096 : (r+1)*4096] {
			sum += math.Exp(v - mx)
		}
		for i := r * 4096; i < (r+1)*4096; i += 511 {
			if want := math.Exp(xs[i]-mx) / sum; math.Abs(got[i]-want) > 1e-7 {
				t.Fatalf("softmax[%d] = %g, want %g", i, got[i], want)
			}
		}
	}
	// max_pool2d_with_indices, kernel 3, stride 2, padding 1 (ResNet's).
	x = ramp([]int{1, 64, 112, 112}, func(i int) float32 { return float32((i*7919)%1000) / 1000 })
	got = run(t, "more/cadence_maxpool2d.pte", "", nil, x)[0].Float64s()
	xs = x.Float64s()
	for c := 0; c < 64; c += 9 {
		for oy := 0; oy < 56; oy += 5 {
			for ox := 0; ox < 56; ox += 3 {
				want := math.Inf(-1)
				for ky := -1; ky <= 1; ky++ {
					for kx := -1; kx <= 1; kx++ {
						iy, ix := 2*oy+ky, 2*ox+kx
						if iy >= 0 && iy < 112 && ix >= 0 && ix < 112 {
							want = math.Max(want, xs[(c*112+iy)*112+ix])
						}
					}
				}
				if g := got[(c*56+oy)*56+ox]; g != want {
					t.Fatalf("maxpool[%d,%d,%d] = %g, want %g", c, oy, ox, g, want)
				}
			}
		}
	}
}

// TestRefusals: programs Switchyard cannot run say which method, which
// instruction and which operator or backend, before anything runs.
func TestRefusals(t *testing.T) {
	cases := []struct {
		rel, method string
		want        []string
	}{
		{"more/stories260k_hybrid_llama_qnn.pte", "kv_forward", []string{"method kv_forward cannot run", "instruction 0.0 calls delegate 0 for backend QnnBackend"}},
		{"more/stories260k_hybrid_llama_qnn.pte", "prefill_forward", []string{"method prefill_forward", "QnnBackend"}},
		{"more/xor.pte", "backward", []string{`no method "backward"`, "forward"}},
	}
	for _, c := range cases {
		_, err := executorch.LoadFile(shared.Path(t, "testdata/executorch/"+c.rel), c.method, nil, 0)
		if err == nil {
			t.Fatalf("%s %s loaded", c.rel, c.method)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v lacks %q", c.rel, err, w)
			}
		}
	}
	// linear.pte without its .ptd names the missing tensor.
	dir := t.TempDir()
	data, err := os.ReadFile(shared.Path(t, "testdata/executorch/linear.pte"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "linear.pte")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := executorch.LoadFile(p, "", nil, 0); err == nil || !strings.Contains(err.Error(), `"linear.weight" lives in an external data file`) {
		t.Errorf("linear without ptd: %v", err)
	}
	// Constants over the tensor limit are refused.
	if _, err := executorch.LoadFile(shared.Path(t, "testdata/executorch/kws/model.pte"), "", nil, 1024); !errors.Is(err, graph.ErrTooLarge) {
		t.Errorf("limit: %v", err)
	}
}

// TestEngineOpenWith: the Go API takes the method and the .ptd files.
func TestEngineOpenWith(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(shared.Path(t, "testdata/executorch/more/xor.pte"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "model.pte") // no sibling xor.ptd
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := switchyard.NewEngine(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx := context.Background()
	if _, err := eng.Open(ctx, p, &switchyard.OpenOptions{Method: "forward"}); err == nil || !strings.Contains(err.Error(), "net.linear.weight") {
		t.Fatalf("without data: %v", err)
	}
	m, err := eng.Open(ctx, p, &switchyard.OpenOptions{Method: "forward", DataFiles: []string{shared.Path(t, "testdata/executorch/more/xor.ptd")}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ins := m.Inputs()
	out, err := m.Run(ctx, switchyard.Tensors{ins[0].Name: mustTensor([]int{1, 2}, []float32{1, 0}), ins[1].Name: mustTensor([]int{1}, []int64{1})})
	if err != nil {
		t.Fatal(err)
	}
	if loss := out[m.Outputs()[0].Name].Float64At(0); math.Abs(loss-0.683540) > 1e-5 {
		t.Fatalf("loss %v", loss)
	}
	m2, err := eng.Open(ctx, p, &switchyard.OpenOptions{Method: "__et_training_parameters_index_forward"})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	out, err = m2.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := switchyard.Values[int64](out[m2.Outputs()[0].Name]); len(v) != 1 || v[0] != 6 {
		t.Fatalf("parameters index %v", v)
	}
}

// mustTensor is switchyard.NewTensor for literals.
func mustTensor[T switchyard.Elem](shape []int, data []T) *switchyard.Tensor {
	t, err := switchyard.NewTensor(shape, data)
	if err != nil {
		panic(err)
	}
	return t
}
