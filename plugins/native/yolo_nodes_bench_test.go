package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
)

// BenchmarkYoloNodes cuts every Conv out of a zoo model at its real
// shape and weights, with the SiLU (Sigmoid and the Mul by it) or the
// Relu/Clip after it when the Conv's output has no other reader, compiles
// it on native at one thread and times it by the thread's CPU clock: with
// the activation and without it (the activation's share), and with each
// variant of YOLO_NODES_TOGGLE alternating (A/B of a kernel switch in
// one run on a loaded machine). Prints the least time of each, per node
// and summed per class:
//
//	YOLO_MODELS=yolox_nano go test ./plugins/native -run '^$' -bench YoloNodes -benchtime 1x
//
// YOLO_ROUNDS sets the alternations (default 20); YOLO_NODES_MATCH keeps
// the nodes whose name contains it.
func BenchmarkYoloNodes(b *testing.B) {
	root := shared.Path(b, "testdata/zoo")
	models := []string{"yolox_nano"}
	if s := os.Getenv("YOLO_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 20
	if s := os.Getenv("YOLO_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	threads := 1
	if s := os.Getenv("YOLO_THREADS"); s != "" {
		fmt.Sscan(s, &threads)
	}
	nb := New(Options{Threads: threads})
	defer nb.Close()
	for _, m := range models {
		b.Run(m, func(b *testing.B) {
			for b.Loop() {
				yoloNodes(b, nb, filepath.Join(root, m), rounds, threads)
			}
		})
	}
}

// yoloToggles are the switches BenchmarkYoloNodes alternates (each
// sets its variant and returns a function that restores the default).
var yoloToggles = map[string]func(on bool){
	"packB": func(on bool) { // B packed above 64 Ki floats, as before
		inPlaceBMax = math.MaxInt
		if on {
			inPlaceBMax = 64 << 10
		}
	},
}

func yoloNodes(b *testing.B, nb hal.Backend, dir string, rounds, threads int) {
	file := filepath.Join(dir, "model.onnx")
	ir, err := formats.LoadFile(file, formats.Options{})
	if err != nil {
		b.Fatal(err)
	}
	types, _ := runtime.InferTypes(ir)
	g := ir.Graph
	readers := map[string][]*graph.Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in] = append(readers[in], n)
		}
	}
	toggle := yoloToggles[os.Getenv("YOLO_NODES_TOGGLE")]
	match := os.Getenv("YOLO_NODES_MATCH")
	rng := rand.New(rand.NewPCG(5, 6))
	type row struct {
		name, geo string
		t         [3]int64 // with the activation (toggle off, on), without it
	}
	var rows []row
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	for _, n := range g.Nodes {
		if n.OpType != "Conv" || len(n.Inputs) < 2 || g.Initializers[n.Inputs[1]] == nil || !strings.Contains(n.Name, match) {
			continue
		}
		xt, ok := types[n.Inputs[0]]
		xs, static := xt.Shape.Ints()
		if !ok || !static {
			continue
		}
		conv := &graph.Node{Name: "conv", OpType: "Conv", Inputs: n.Inputs, Outputs: []string{"c"}, Attrs: n.Attrs}
		nodes := []*graph.Node{conv}
		act := ""
		rs := readers[n.Outputs[0]]
		switch {
		case len(rs) == 2 && (rs[0].OpType == "Sigmoid" && rs[1].OpType == "Mul" || rs[1].OpType == "Sigmoid" && rs[0].OpType == "Mul"):
			nodes = append(nodes, &graph.Node{Name: "sig", OpType: "Sigmoid", Inputs: []string{"c"}, Outputs: []string{"s"}},
				&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{"c", "s"}, Outputs: []string{"y"}})
			act = "+SiLU"
		case len(rs) == 1 && (rs[0].OpType == "Relu" || rs[0].OpType == "Clip"):
			in := append([]string{"c"}, rs[0].Inputs[1:]...)
			nodes = append(nodes, &graph.Node{Name: "act", OpType: rs[0].OpType, Inputs: in, Outputs: []string{"y"}, Attrs: rs[0].Attrs})
			act = "+" + rs[0].OpType
		}
		w := g.Initializers[n.Inputs[1]].Shape
		geo := fmt.Sprintf("x%v w%v g%d s%v%s", xs, w, n.AttrInt("group", 1), n.AttrInts("strides", nil), act)
		// A: with the activation; B: the same compiled and run with the
		// toggle on; C: the Conv alone
		var exes []hal.Executable
		for k, ns := range [][]*graph.Node{nodes, nodes, nodes[:1]} {
			if k == 1 {
				if toggle == nil {
					exes = append(exes, nil)
					continue
				}
				toggle(true)
			}
			out := ns[len(ns)-1].Outputs[0]
			sub := &graph.Graph{Name: n.Name, Nodes: ns, Initializers: map[string]*graph.Tensor{},
				Inputs:    []graph.ValueInfo{{Name: n.Inputs[0], Type: xt}},
				Outputs:   []graph.ValueInfo{{Name: out}},
				ValueInfo: []graph.ValueInfo{{Name: "c", Type: types[n.Outputs[0]]}, {Name: "s", Type: types[n.Outputs[0]]}}}
			for _, nd := range ns {
				for _, in := range nd.Inputs[1:] {
					if t := g.Initializers[in]; t != nil {
						sub.Initializers[in] = t
					}
				}
			}
			e, err := nb.Compile(context.Background(), &hal.Subgraph{Graph: sub, Opsets: ir.Opsets}, hal.CompileOptions{Threads: threads})
			if k == 1 {
				toggle(false)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer e.Release()
			exes = append(exes, e)
		}
		ne, _ := graph.NumElements(xs)
		v := make([]float32, ne)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		in := []*graph.Tensor{graph.MustFromSlice(xs, v)}
		outs := []*graph.Tensor{{}}
		r := row{name: n.Name, geo: geo, t: [3]int64{1 << 62, 1 << 62, 1 << 62}}
		for it := 0; it < rounds+1; it++ {
			for k := range r.t {
				e := exes[k]
				if k == 1 {
					if toggle == nil {
						continue
					}
					toggle(true)
				}
				clock := threadClock
				if threads > 1 {
					clock = func() int64 { return time.Now().UnixNano() }
				}
				c0 := clock()
				if err := e.Execute(context.Background(), in, outs); err != nil {
					b.Fatal(err)
				}
				d := clock() - c0
				if k == 1 {
					toggle(false)
				}
				if it > 0 {
					r.t[k] = min(r.t[k], d)
				}
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].t[0] > rows[j].t[0] })
	var tot [3]int64
	var sb strings.Builder
	for _, r := range rows {
		for k := range tot {
			tot[k] += r.t[k]
		}
		fmt.Fprintf(&sb, "  %8.1f %8.1f %8.1f µs  %-10s %s\n", float64(r.t[0])/1e3, float64(r.t[1])/1e3, float64(r.t[2])/1e3, r.name, r.geo)
	}
	fmt.Printf("%s: %d Convs; least CPU µs: with activation (A), with it and the toggle (B), without it; sums %.1f %.1f %.1f\n%s",
		filepath.Base(dir), len(rows), float64(tot[0])/1e3, float64(tot[1])/1e3, float64(tot[2])/1e3, sb.String())
}

// BenchmarkYoloVMath times each vector math kernel on 4096 floats in L1
// by the thread's CPU clock, the least of many short repetitions (the
// steadiest figure on a loaded machine), in ns an element.
func BenchmarkYoloVMath(b *testing.B) {
	x := make([]float32, 4096)
	lo, step := float32(-10), float32(0.1) // YOLO_VMATH_RANGE=-100,0.05: 200 values from -100 a step
	if s := os.Getenv("YOLO_VMATH_RANGE"); s != "" {
		fmt.Sscanf(s, "%g,%g", &lo, &step)
	}
	for i := range x {
		x[i] = lo + float32(i%200)*step
	}
	y := make([]float32, len(x))
	for _, f := range vmFuncs() {
		b.Run(f.name, func(b *testing.B) {
			goruntime.LockOSThread()
			defer goruntime.UnlockOSThread()
			best := int64(1 << 62)
			for b.Loop() {
				c0 := threadClock()
				for r := 0; r < 10; r++ {
					f.vec(y, x)
				}
				best = min(best, threadClock()-c0)
			}
			b.ReportMetric(float64(best)/10/float64(len(x)), "least-ns/elem")
		})
	}
}
