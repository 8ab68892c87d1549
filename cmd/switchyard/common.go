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

	"github.com/switchyard-hal/switchyard/core/demo"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/onnxtest"
	"github.com/switchyard-hal/switchyard/core/runtime"
	"github.com/switchyard-hal/switchyard/core/tensorio"
)

// loadModel loads MODEL: an .onnx file, a directory in the ONNX test layout
// (its model.onnx; its test_data_set_0 inputs become the default inputs),
// or "" for the built-in demo model.
func loadModel(ctx context.Context, path string, opts *runtime.Options) (*runtime.Model, map[string]*graph.Tensor, string, error) {
	if path == "" {
		m, err := runtime.LoadBytes(ctx, demo.Bytes(), opts)
		return m, map[string]*graph.Tensor{demo.InputName: demo.Input()}, "demo", err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, "", err
	}
	if !st.IsDir() {
		m, err := runtime.Load(ctx, path, opts)
		return m, nil, filepath.Base(path), err
	}
	m, err := runtime.LoadDir(ctx, path, opts)
	if err != nil {
		return nil, nil, "", err
	}
	feeds := map[string]*graph.Tensor{}
	set := filepath.Join(path, "test_data_set_0")
	if ins, err := onnxtest.ReadSet(set, "input"); err == nil {
		declared := m.Inputs()
		for i, t := range ins {
			if i < len(declared) {
				feeds[declared[i].Name] = t
			}
		}
	}
	return m, feeds, filepath.Base(filepath.Clean(path)), nil
}

// completeInputs reads --input NAME=FILE flags and fills every other
// required input with seeded random values (symbolic dims become dims[name],
// 0 included, or 1 when not given).
func completeInputs(m *runtime.Model, feeds map[string]*graph.Tensor, flags []string, dims map[string]int, seed uint64) (map[string]*graph.Tensor, error) {
	if feeds == nil {
		feeds = map[string]*graph.Tensor{}
	}
	known := map[string]graph.ValueInfo{}
	for _, in := range m.Inputs() {
		known[in.Name] = in
	}
	for _, f := range flags {
		name, file, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("--input %q: want NAME=FILE", f)
		}
		if _, ok := known[name]; !ok {
			return nil, fmt.Errorf("--input %q: model has no input %q", f, name)
		}
		t, err := tensorio.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", name, err)
		}
		feeds[name] = t
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, in := range m.Inputs() {
		if _, ok := feeds[in.Name]; ok {
			continue
		}
		if _, hasDefault := m.IR().Graph.Initializers[in.Name]; hasDefault {
			continue
		}
		if in.Type.Shape == nil {
			return nil, fmt.Errorf("input %q has unknown rank: give it with --input", in.Name)
		}
		shape := make([]int, len(in.Type.Shape))
		for i, d := range in.Type.Shape {
			switch {
			case d.Static():
				shape[i] = int(d.Value)
			default:
				// --dim NAME=0 is honoured (a zero-length KV past)
				v, ok := dims[d.Param]
				if !ok {
					v = 1
				}
				shape[i] = v
			}
		}
		dt := in.Type.DType
		if dt == graph.Undefined {
			dt = graph.Float32
		}
		t, err := tensorio.Random(dt, shape, rng)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in.Name, err)
		}
		feeds[in.Name] = t
	}
	return feeds, nil
}

// memoryFlags are the resource limits shared by run, bench and verify.
type memoryFlags struct {
	budget string
}

func (f *memoryFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.budget, "memory-budget", "auto", "the most memory a model's runs may hold in buffers (e.g. 512MiB, 4GiB, 2GB, 1000000 bytes); auto: 3/4 of the available memory; unlimited: none")
}

// apply sets the budget in opts.
func (f *memoryFlags) apply(opts *runtime.Options) error {
	v, err := parseMemoryBudget(f.budget)
	if err != nil {
		return fmt.Errorf("--memory-budget %q: %w", f.budget, err)
	}
	opts.MemoryBudget = v
	return nil
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

func statsOf(t *graph.Tensor) tensorStats {
	s := tensorStats{Min: math.Inf(1), Max: math.Inf(-1)}
	n := t.Len()
	if t.DType == graph.String || n == 0 {
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

func firstValues(t *graph.Tensor, k int) []any {
	n := min(t.Len(), k)
	out := make([]any, n)
	for i := 0; i < n; i++ {
		switch {
		case t.DType == graph.String:
			out[i] = t.Data.([]string)[i]
		case t.DType == graph.Bool:
			out[i] = t.Float64At(i) != 0
		case t.DType.IsFloat():
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
