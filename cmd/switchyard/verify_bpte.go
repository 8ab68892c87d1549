package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/runtime"
)

// isBundledFile reports an ExecuTorch bundled program (.bpte) given to
// verify instead of an ONNX test directory.
func isBundledFile(path string) bool {
	st, err := os.Stat(path)
	if err != nil || st.IsDir() {
		return false
	}
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	head := make([]byte, 8)
	n, _ := fh.Read(head)
	return executorch.IsBundled(head[:n])
}

// runBundled runs every test case a bundled program carries, method by
// method, and compares with its expected outputs.
func runBundled(ctx context.Context, path string, opt onnxtest.Options) (res onnxtest.Result) {
	res = onnxtest.Result{Name: filepath.Base(path), Dir: path}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	fail := func(format string, args ...any) onnxtest.Result {
		res.Status, res.Reason = onnxtest.Fail, fmt.Sprintf(format, args...)
		return res
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fail("%v", err)
	}
	b, err := executorch.ParseBundled(data, 0)
	if err != nil {
		return fail("%v", err)
	}
	for _, s := range b.Suites {
		ir, err := executorch.LoadFile(path, s.Method, loadOpts.DataFiles, 0)
		if err != nil {
			if onnxtest.Unsupported(err) {
				res.Status, res.Reason = onnxtest.Skip, err.Error()
				return res
			}
			return fail("load %s: %v", s.Method, err)
		}
		m, err := runtime.Prepare(ctx, ir, opt.Runtime)
		if err != nil {
			return fail("prepare %s: %v", s.Method, err)
		}
		for ci, c := range s.Cases {
			ins, outs := m.Inputs(), m.Outputs()
			if len(c.Inputs) != len(ins) || len(c.Expected) != len(outs) {
				m.Close()
				return fail("%s case %d: %d inputs and %d outputs for a method of %d and %d", s.Method, ci, len(c.Inputs), len(c.Expected), len(ins), len(outs))
			}
			feeds := map[string]*graph.Tensor{}
			for i, t := range c.Inputs {
				feeds[ins[i].Name] = t
			}
			got, err := m.Run(ctx, feeds)
			if err != nil {
				m.Close()
				return fail("%s case %d: %v", s.Method, ci, err)
			}
			for i, w := range c.Expected {
				if err := onnxtest.Compare(got[outs[i].Name], w, opt.Rtol, opt.Atol); err != nil {
					m.Close()
					return fail("%s case %d output %d: %v", s.Method, ci, i, err)
				}
			}
			res.Sets++
		}
		m.Close()
	}
	res.Status = onnxtest.Pass
	return res
}
