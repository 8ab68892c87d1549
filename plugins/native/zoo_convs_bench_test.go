//go:build amd64

package native_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

// BenchmarkZooNodesVsXNNPACK cuts every Conv (with the Relu, Clip or
// PRelu right after it when that is its only reader, as native fuses it)
// out of the zoo models at their real shapes and weights and times it
// through native's and xnnpack's Execute at one thread, alternating the
// two, and prints a table per model: the node, its geometry, the least
// time of each and native/xnnpack, the slowest classes first. This is
// where a model's gap to the peers comes from, op by op:
//
//	ZOO_MODELS=ultraface_rfb_320,yolox_nano go test ./plugins/native -run '^$' -bench ZooNodesVsXNNPACK -benchtime 1x
//
// ZOO_ROUNDS sets the alternations per node (default 20); ZOO_DWPACKED=0
// turns native's packed depthwise path off.
func BenchmarkZooNodesVsXNNPACK(b *testing.B) {
	xb, err := xnnpack.New(context.Background(), xnnpack.Options{Threads: 1})
	if err != nil {
		if backendtest.Required(xnnpack.Name) {
			b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		b.Skipf("xnnpack unavailable: %v", err)
	}
	defer xb.Close()
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	root := shared.Path(b, "testdata/zoo")
	models := []string{"ultraface_rfb_320", "yolox_nano", "deeplab_v3", "yunet_120x160"}
	if s := os.Getenv("ZOO_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 20
	if os.Getenv("ZOO_DWPACKED") == "0" && native.UsePackedDW(false) {
		defer native.UsePackedDW(true)
	}
	if s := os.Getenv("ZOO_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, m := range models {
		b.Run(m, func(b *testing.B) {
			for b.Loop() {
				zooNodes(b, nb, xb, root, m, rounds)
			}
		})
	}
}

func zooNodes(b *testing.B, nb, xb hal.Backend, root, m string, rounds int) {
	dir := filepath.Join(root, m)
	file := filepath.Join(dir, "model.onnx")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(dir, "model.tflite")
	}
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
	rng := rand.New(rand.NewPCG(5, 6))
	type row struct {
		name, geo string
		nat, xnn  time.Duration
	}
	var rows []row
	var totN, totX time.Duration
	for _, n := range g.Nodes {
		if n.OpType != "Conv" || len(n.Inputs) < 2 || g.Initializers[n.Inputs[1]] == nil {
			continue
		}
		xt, ok := types[n.Inputs[0]]
		xs, static := xt.Shape.Ints()
		if !ok || !static {
			continue
		}
		nodes := []*graph.Node{{Name: "conv", OpType: "Conv", Inputs: n.Inputs, Outputs: []string{"c"}, Attrs: n.Attrs}}
		out := "c"
		act := ""
		if rs := readers[n.Outputs[0]]; len(rs) == 1 {
			switch a := rs[0]; a.OpType {
			case "Relu", "Clip", "PRelu":
				in := append([]string{"c"}, a.Inputs[1:]...)
				nodes = append(nodes, &graph.Node{Name: "act", OpType: a.OpType, Inputs: in, Outputs: []string{"y"}, Attrs: a.Attrs})
				out, act = "y", "+"+a.OpType
			}
		}
		sub := &graph.Graph{Name: n.Name, Nodes: nodes, Initializers: map[string]*graph.Tensor{},
			Inputs:    []graph.ValueInfo{{Name: n.Inputs[0], Type: xt}},
			Outputs:   []graph.ValueInfo{{Name: out}},
			ValueInfo: []graph.ValueInfo{{Name: "c", Type: types[n.Outputs[0]]}}}
		for _, nd := range nodes {
			for _, in := range nd.Inputs[1:] {
				if t := g.Initializers[in]; t != nil {
					sub.Initializers[in] = t
				}
			}
		}
		w := g.Initializers[n.Inputs[1]].Shape
		geo := fmt.Sprintf("x%v w%v g%d s%v%s", xs, w, n.AttrInt("group", 1), n.AttrInts("strides", nil), act)
		sg := &hal.Subgraph{Graph: sub, Opsets: ir.Opsets}
		var exes [2]hal.Executable
		skip := false
		for i, be := range []hal.Backend{nb, xb} {
			vs, err := be.Supports(context.Background(), sg)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range vs {
				if !v.Supported {
					skip = true
					fmt.Printf("  %s: %s declines: %s\n", n.Name+"/"+n.Outputs[0], []string{"native", "xnnpack"}[i], v.Reason)
				}
			}
			if skip {
				break
			}
			e, err := be.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Release()
			exes[i] = e
		}
		if skip {
			continue
		}
		ne, _ := graph.NumElements(xs)
		v := make([]float32, ne)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		in := []*graph.Tensor{graph.MustFromSlice(xs, v)}
		outs := [2][]*graph.Tensor{{{}}, {{}}}
		best := [2]time.Duration{time.Hour, time.Hour}
		for it := 0; it < rounds+1; it++ {
			for i := range exes {
				t0 := time.Now()
				if err := exes[i].Execute(context.Background(), in, outs[i]); err != nil {
					b.Fatal(err)
				}
				if it > 0 {
					best[i] = min(best[i], time.Since(t0))
				}
			}
		}
		rows = append(rows, row{n.Name + "/" + n.Outputs[0], geo, best[0], best[1]})
		totN += best[0]
		totX += best[1]
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].nat-rows[i].xnn > rows[j].nat-rows[j].xnn })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %d Convs, native %.3f ms, xnnpack %.3f ms (%.2f)\n", m, len(rows), totN.Seconds()*1e3, totX.Seconds()*1e3, totN.Seconds()/totX.Seconds())
	for _, r := range rows {
		fmt.Fprintf(&sb, "  %8.1f %8.1f µs %5.2f  %-24s %s\n", r.nat.Seconds()*1e6, r.xnn.Seconds()*1e6, r.nat.Seconds()/r.xnn.Seconds(), r.name, r.geo)
	}
	fmt.Print(sb.String())
}
