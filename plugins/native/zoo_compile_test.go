package native

import (
	"context"
	"math/rand/v2"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// zooProfiled is a real model compiled whole on native at one thread
// with profiling, and random inputs to run it with: what the per-node
// benchmarks and cost tests of the zoo models run.
type zooProfiled struct {
	sg        *hal.Subgraph
	exe       hal.ProfilingExecutable
	in, outs  []*graph.Tensor
	closeFunc func()
}

// compileZooProfiled loads file (ONNX or TFLite), types every value of
// its graph (so that native compiles it as placement would hand it
// over) and compiles it; the caller calls close.
func compileZooProfiled(file string) (*zooProfiled, error) {
	return compileZooProfiledThreads(file, 1)
}

// compileZooProfiledThreads is compileZooProfiled on a pool of threads.
func compileZooProfiledThreads(file string, threads int) (*zooProfiled, error) {
	ir, err := formats.LoadFile(file, formats.Options{})
	if err != nil {
		return nil, err
	}
	types, _ := runtime.InferTypes(ir)
	g := *ir.Graph
	g.Inputs = append([]graph.ValueInfo(nil), g.Inputs...)
	for i, vi := range g.Inputs {
		if t, ok := types[vi.Name]; ok {
			g.Inputs[i].Type = t
		}
	}
	for name, t := range types {
		g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: name, Type: t})
	}
	sg := &hal.Subgraph{Graph: &g, Opsets: ir.Opsets}
	nb := New(Options{Threads: threads})
	exe, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: threads, Profile: true})
	if err != nil {
		nb.Close()
		return nil, err
	}
	z := &zooProfiled{sg: sg, exe: exe.(hal.ProfilingExecutable), closeFunc: func() { exe.Release(); nb.Close() }}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, vi := range g.Inputs {
		if _, ok := ir.Graph.Initializers[vi.Name]; ok {
			continue
		}
		xs, _ := vi.Type.Shape.Ints()
		ne, _ := graph.NumElements(xs)
		v := make([]float32, ne)
		for i := range v {
			v[i] = rng.Float32()
		}
		z.in = append(z.in, graph.MustFromSlice(xs, v))
	}
	z.outs = make([]*graph.Tensor, len(g.Outputs))
	for i := range z.outs {
		z.outs[i] = &graph.Tensor{}
	}
	return z, nil
}

func (z *zooProfiled) close() { z.closeFunc() }
