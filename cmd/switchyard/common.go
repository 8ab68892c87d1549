package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"github.com/switchyard-hal/switchyard/internal/demo"
)

// loadModel loads MODEL onto the engine: an .onnx file, a directory in
// the ONNX test layout (its model.onnx; its test_data_set_0 inputs become
// the default inputs), or "" for the built-in demo model.
func loadModel(ctx context.Context, e *switchyard.Engine, path string) (*switchyard.Model, switchyard.Tensors, string, error) {
	if path == "" {
		m, err := e.OpenBytes(ctx, demo.Bytes(), &switchyard.OpenOptions{Name: "demo"})
		return m, switchyard.Tensors{demo.InputName: apiTensor(demo.Input())}, "demo", err
	}
	m, err := e.Open(ctx, path, &loadOpts)
	if err != nil {
		return nil, nil, "", err
	}
	feeds := switchyard.Tensors{}
	for k, v := range m.ExampleInputs() {
		feeds[k] = v
	}
	return m, feeds, filepath.Base(filepath.Clean(path)), nil
}

// completeInputs reads --input NAME=FILE (or FILE, in input order) flags and fills every other
// required input with seeded random values (symbolic dims become dims[name],
// 0 included, or 1 when not given).
func completeInputs(m *switchyard.Model, feeds switchyard.Tensors, flags []string, dims map[string]int, seed uint64) (switchyard.Tensors, error) {
	if feeds == nil {
		feeds = switchyard.Tensors{}
	}
	known := map[string]bool{}
	for _, in := range m.Inputs() {
		known[in.Name] = true
	}
	// NAME=FILE binds by name; a bare FILE binds the next input in order
	// (ExecuTorch and TFLite inputs have no meaningful names).
	next := 0
	ins := m.Inputs()
	for _, f := range flags {
		name, file, ok := strings.Cut(f, "=")
		if !ok || !known[name] {
			if ok {
				if _, err := os.Stat(f); err != nil {
					return nil, fmt.Errorf("--input %q: model has no input %q (inputs: %s)", f, name, inputList(ins))
				}
			}
			if next >= len(ins) {
				return nil, fmt.Errorf("--input %q: the model has only %d inputs (%s)", f, len(ins), inputList(ins))
			}
			name, file = ins[next].Name, f
			next++
		}
		t, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", name, err)
		}
		feeds[name] = apiTensor(t)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, in := range m.Inputs() {
		if _, ok := feeds[in.Name]; ok || in.Optional {
			continue
		}
		if in.Shape == nil {
			return nil, fmt.Errorf("input %q has unknown rank: give it with --input", in.Name)
		}
		shape := make([]int, len(in.Shape))
		for i, d := range in.Shape {
			switch {
			case d >= 0:
				shape[i] = d
			default:
				// --dim NAME=0 is honoured (a zero-length KV past)
				v, ok := dims[in.Dims[i]]
				if !ok {
					v = 1
				}
				shape[i] = v
			}
		}
		dt := in.DType
		if dt == 0 {
			dt = switchyard.Float32
		}
		t, err := tensorio.Random(graph.DType(dt), shape, rng)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		feeds[in.Name] = apiTensor(t)
	}
	return feeds, nil
}

// apiTensor is the API's view of a runtime tensor (the same memory).
func apiTensor(t *graph.Tensor) *switchyard.Tensor {
	return apiaccess.Tensor(t).(*switchyard.Tensor)
}

// graphTensor is the runtime's view of an API tensor (the same memory).
func graphTensor(t *switchyard.Tensor) *graph.Tensor { return apiaccess.GraphTensor(t) }

func inputList(ins []switchyard.ValueInfo) string {
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

// memoryFlags are the resource limits shared by run, bench and verify.
type memoryFlags struct {
	budget string
}

func (f *memoryFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.budget, "memory-budget", "auto", "the most memory a model's runs may hold in buffers (e.g. 512MiB, 4GiB, 2GB, 1000000 bytes); auto: 3/4 of the available memory; unlimited: none")
}

// parseMemoryBudget reads a byte count with an optional unit (B, KB, MB,
// GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024), "auto"
// (0: runtime.DefaultMemoryBudget) or "unlimited" (-1).
func parseMemoryBudget(s string) (int64, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "auto", "default":
		return 0, nil
	case "unlimited", "none", "off":
		return -1, nil
	}
	num := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	if num == "" {
		return 0, fmt.Errorf("want a size such as 512MiB or 4GiB, auto or unlimited")
	}
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	mult := map[string]int64{"": 1, "b": 1, "k": 1 << 10, "kb": 1e3, "kib": 1 << 10, "m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1e9, "gib": 1 << 30, "t": 1 << 40, "tb": 1e12, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q (want B, KB, KiB, MB, MiB, GB, GiB, TB or TiB)", unit)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("want a positive size that fits in 63 bits")
	}
	return n * mult, nil
}

// tensorStats summarises a tensor's values.
type tensorStats struct {
	Min, Max, Mean float64
	NaN, Inf       int
}

func statsOf(t *switchyard.Tensor) tensorStats {
	s := tensorStats{Min: math.Inf(1), Max: math.Inf(-1)}
	n := t.Len()
	if t.DType() == switchyard.String || n == 0 {
		return tensorStats{}
	}
	sum, cnt := 0.0, 0
	for i := 0; i < n; i++ {
		v := t.Float64At(i)
		switch {
		case math.IsNaN(v):
			s.NaN++
			continue
		case math.IsInf(v, 0):
			s.Inf++
		}
		s.Min, s.Max = math.Min(s.Min, v), math.Max(s.Max, v)
		if !math.IsInf(v, 0) {
			sum += v
			cnt++
		}
	}
	if cnt > 0 {
		s.Mean = sum / float64(cnt)
	}
	return s
}

func firstValues(t *switchyard.Tensor, k int) []any {
	n := min(t.Len(), k)
	out := make([]any, n)
	for i := 0; i < n; i++ {
		switch {
		case t.DType() == switchyard.String:
			v, _ := switchyard.Values[string](t)
			out[i] = v[i]
		case t.DType() == switchyard.Bool:
			out[i] = t.Float64At(i) != 0
		case t.DType().IsFloat():
			v := t.Float64At(i)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				out[i] = fmt.Sprint(v)
			} else {
				out[i] = v
			}
		default:
			out[i] = t.Int64At(i)
		}
	}
	return out
}
