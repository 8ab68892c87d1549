// Package onnxtest runs model directories in the ONNX backend-test layout
// (model.onnx plus test_data_set_N/{input,output}_K.pb) through the runtime
// and compares the outputs with the expected ones. A directory with
// model.tflite instead (the zoo's TFLite models) is read the same way, its
// tensors from input_K.npy and output_K.npy; one whose REFUSED.txt says
// TFLite itself refuses the model is skipped when Switchyard refuses it too. It backs `switchyard
// verify` and the regression tests over ../shared/testdata.
package onnxtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/runtime"
)

// Status is the outcome of one directory.
type Status string

const (
	Pass Status = "ok"
	Fail Status = "FAIL"
	Skip Status = "skip"
)

// Result is the outcome of one test directory.
type Result struct {
	Name     string        `json:"name"`
	Dir      string        `json:"dir"`
	Status   Status        `json:"status"`
	Reason   string        `json:"reason,omitempty"`
	Sets     int           `json:"sets"`
	Duration time.Duration `json:"duration_ns"`
}

// Options are the comparison tolerances. Floats match when
// |got-want| <= Atol + Rtol*|want|; NaN matches NaN; infinities must be
// equal; integers, bools and strings must be equal.
type Options struct {
	Rtol, Atol float64
	Timeout    time.Duration
	// Runtime configures loading (backends, policy); nil = cpu only.
	Runtime *runtime.Options
}

// DefaultOptions are `switchyard verify`'s defaults.
func DefaultOptions() Options { return Options{Rtol: 1e-3, Atol: 1e-7, Timeout: 2 * time.Minute} }

// RunDir loads dir/model.onnx and checks every test_data_set_N in dir.
func RunDir(ctx context.Context, dir string, opt Options) (res Result) {
	res = Result{Name: filepath.Base(filepath.Clean(dir)), Dir: dir}
	start := time.Now()
	defer func() {
		res.Duration = time.Since(start)
		if p := recover(); p != nil {
			res.Status, res.Reason = Fail, fmt.Sprintf("panic: %v", p)
		}
	}()
	if opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
	}
	file := filepath.Join(dir, "model.onnx")
	if _, err := os.Stat(file); err != nil {
		if _, terr := os.Stat(filepath.Join(dir, "model.tflite")); terr == nil {
			file = filepath.Join(dir, "model.tflite")
		}
	}
	m, err := runtime.Load(ctx, file, opt.Runtime)
	if err != nil {
		if refused, rerr := os.ReadFile(filepath.Join(dir, "REFUSED.txt")); rerr == nil {
			res.Status, res.Reason = Skip, fmt.Sprintf("refused, as its reference engine refuses it (%s): %v", strings.TrimSpace(string(refused)), err)
			return res
		}
		if isSkip(err) {
			res.Status, res.Reason = Skip, err.Error()
		} else {
			res.Status, res.Reason = Fail, "load: "+err.Error()
		}
		return res
	}
	defer m.Close()
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Slice(sets, func(i, j int) bool { return setIndex(sets[i]) < setIndex(sets[j]) })
	if len(sets) == 0 {
		res.Status, res.Reason = Fail, "no test_data_set_* directories"
		return res
	}
	for _, set := range sets {
		if err := runSet(ctx, m, set, opt); err != nil {
			if Unsupported(err) {
				res.Status, res.Reason = Skip, err.Error()
			} else {
				res.Status, res.Reason = Fail, filepath.Base(set)+": "+err.Error()
			}
			return res
		}
		res.Sets++
	}
	res.Status = Pass
	return res
}

func isSkip(err error) bool {
	var ue *runtime.UnsupportedError
	return errors.As(err, &ue) || errors.Is(err, onnx.ErrUnsupportedType)
}

func setIndex(p string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "test_data_set_"))
	return n
}

// ReadSet reads prefix_K.pb files (K = 0, 1, …) from a test_data_set dir.
func ReadSet(set, prefix string) ([]*graph.Tensor, error) {
	var out []*graph.Tensor
	for k := 0; ; k++ {
		p := filepath.Join(set, fmt.Sprintf("%s_%d.pb", prefix, k))
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			// the .npy of the zoo's TFLite sets
			t, nerr := tensorio.ReadFile(strings.TrimSuffix(p, ".pb") + ".npy")
			if errors.Is(nerr, os.ErrNotExist) {
				return out, nil
			}
			if nerr != nil {
				return nil, nerr
			}
			out = append(out, t)
			continue
		}
		if err != nil {
			return nil, err
		}
		t, _, err := onnx.DecodeTensor(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		out = append(out, t)
	}
}

func runSet(ctx context.Context, m *runtime.Model, set string, opt Options) error {
	ins, err := ReadSet(set, "input")
	if err != nil {
		return err
	}
	wants, err := ReadSet(set, "output")
	if err != nil {
		return err
	}
	// the set's files are the inputs without a default, in order (as the
	// ONNX backend test runner binds them)
	var declared []graph.ValueInfo
	for _, in := range m.Inputs() {
		if !m.HasDefault(in.Name) {
			declared = append(declared, in)
		}
	}
	if len(ins) > len(declared) {
		return fmt.Errorf("%d input files for %d model inputs", len(ins), len(declared))
	}
	feeds := map[string]*graph.Tensor{}
	for i, t := range ins {
		feeds[declared[i].Name] = t
	}
	got, err := m.Run(ctx, feeds)
	if err != nil {
		return err
	}
	outs := m.Outputs()
	if len(wants) != len(outs) {
		return fmt.Errorf("%d expected outputs for %d model outputs", len(wants), len(outs))
	}
	for i, w := range wants {
		g := got[outs[i].Name]
		if err := Compare(g, w, opt.Rtol, opt.Atol); err != nil {
			return fmt.Errorf("output %d %q: %w", i, outs[i].Name, err)
		}
	}
	return nil
}

// Compare checks got against want: same dtype and shape, and every element
// within tolerance (see Options). The error names the first bad element.
func Compare(got, want *graph.Tensor, rtol, atol float64) error {
	if got == nil {
		return errors.New("missing")
	}
	if got.DType != want.DType {
		return fmt.Errorf("dtype %v, want %v", got.DType, want.DType)
	}
	if !graph.SameShape(got.Shape, want.Shape) {
		return fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	n := want.Len()
	bad, first := 0, -1
	var firstMsg string
	for i := 0; i < n; i++ {
		ok := true
		var gs, ws string
		switch {
		case want.DType == graph.String:
			g, w := got.Data.([]string)[i], want.Data.([]string)[i]
			ok, gs, ws = g == w, strconv.Quote(g), strconv.Quote(w)
		case want.DType.IsFloat():
			g, w := got.Float64At(i), want.Float64At(i)
			ok = closeEnough(g, w, rtol, atol)
			gs, ws = strconv.FormatFloat(g, 'g', 9, 64), strconv.FormatFloat(w, 'g', 9, 64)
		case want.DType == graph.Uint64:
			g, w := got.Data.([]uint64)[i], want.Data.([]uint64)[i]
			ok, gs, ws = g == w, fmt.Sprint(g), fmt.Sprint(w)
		default:
			g, w := got.Int64At(i), want.Int64At(i)
			ok, gs, ws = g == w, fmt.Sprint(g), fmt.Sprint(w)
			if want.DType == graph.Bool {
				gs, ws = fmt.Sprint(g != 0), fmt.Sprint(w != 0)
			}
		}
		if !ok {
			bad++
			if first < 0 {
				first = i
				firstMsg = fmt.Sprintf("element %v (flat %d): got %s, want %s", unravel(i, want.Shape), i, gs, ws)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%s (%d of %d elements differ)", firstMsg, bad, n)
	}
	return nil
}

func closeEnough(g, w, rtol, atol float64) bool {
	if math.IsNaN(w) || math.IsNaN(g) {
		return math.IsNaN(w) && math.IsNaN(g)
	}
	if math.IsInf(w, 0) || math.IsInf(g, 0) {
		return g == w
	}
	return math.Abs(g-w) <= atol+rtol*math.Abs(w)
}

func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// Unsupported reports whether err means "outside the supported set".
func Unsupported(err error) bool { return isSkip(err) || errors.Is(err, kernels.ErrUnsupported) }
