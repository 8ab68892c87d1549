package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestZooNodeCosts compiles each model of COST_ZOO (zoo directory names,
// comma-separated, or model files by path) whole on native at one thread, runs it profiled
// COST_ZOO_ROUNDS times (default 40) and writes, per node of fuse's graph,
// its shape, its estimate and its least measured time as tab-separated
// lines to COST_ZOO_OUT (default stdout): where the cost model misses,
// node by node, with the features that drive kernel time. Skipped unless
// COST_ZOO is set.
//
//	COST_ZOO=palm_detection_lite,face_landmark go test ./plugins/native -run TestZooNodeCosts -v
func TestZooNodeCosts(t *testing.T) {
	list := os.Getenv("COST_ZOO")
	if list == "" {
		t.Skip("COST_ZOO not set: a measurement tool, not a check")
	}
	rounds := 40
	if s := os.Getenv("COST_ZOO_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	out := os.Stdout
	if p := os.Getenv("COST_ZOO_OUT"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		out = f
	}
	// the profile placement would read ($SWITCHYARD_COST_PROFILE), else
	// the built-in one
	if path, err := opcost.LoadDefaultProfile(); err != nil {
		t.Fatal(err)
	} else if path != "" {
		t.Logf("cost profile %s", path)
	}
	root := shared.Path(t, "testdata")
	fmt.Fprintln(out, "model\tnode\top\tfamily\tcin\tcout\tkh\tkw\tstride\tgroup\thin\twin\thout\twout\tchain\tflops\tbytes\test_us\tmeas_us")
	for _, m := range strings.Split(list, ",") {
		file := ""
		if strings.HasSuffix(m, ".onnx") || strings.HasSuffix(m, ".tflite") {
			file = m // a model file of its own (calibrate's networks, written out)
		}
		for _, set := range []string{"zoo", "models"} {
			for _, ext := range []string{"model.onnx", "model.tflite"} {
				if p := filepath.Join(root, set, m, ext); file == "" {
					if _, err := os.Stat(p); err == nil {
						file = p
					}
				}
			}
		}
		if file == "" {
			t.Fatalf("%s: no model", m)
		}
		zooNodeCosts(t, out, m, file, rounds)
	}
}

func zooNodeCosts(t *testing.T, out *os.File, m, file string, rounds int) {
	z, err := compileZooProfiled(file)
	if err != nil {
		t.Logf("%s: %v: skipped", m, err)
		return
	}
	defer z.close()
	sg, pe, in, outs := z.sg, z.exe, z.in, z.outs
	best := map[string]time.Duration{}
	for it := 0; it < rounds; it++ {
		p, err := pe.ExecuteProfiled(context.Background(), in, outs)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range p.Kernels {
			if len(k.Nodes) == 0 {
				continue
			}
			d := time.Duration(k.EndNS - k.StartNS)
			if old, ok := best[k.Nodes[0]]; !ok || d < old {
				best[k.Nodes[0]] = d
			}
		}
	}
	fg, fused := fuse(sg)
	var sumE, sumM float64
	for _, n := range fg.Nodes {
		var c float64
		if q, ok := quantNodeCost(sg, n, 1); ok {
			c = q
		} else if f := fused[n]; f != nil {
			c = fusedCost(sg, n, f, 1)
		} else {
			c = headCost(sg, n, 1)
		}
		c += opcost.InModel("native", opcost.Of(n, sg))
		meas, ok := best[n.Name]
		if !ok {
			continue
		}
		w := opcost.Of(n, sg)
		var cin, cout, kh, kw, hin, win, hout, wout int
		if x, ok := sg.TypeOf(n.Input(0)); ok {
			if d, ok := x.Shape.Ints(); ok && len(d) == 4 {
				cin, hin, win = d[1], d[2], d[3]
			}
		}
		if y, ok := sg.TypeOf(n.Outputs[0]); ok {
			if d, ok := y.Shape.Ints(); ok && len(d) == 4 {
				cout, hout, wout = d[1], d[2], d[3]
			}
		}
		if ks := n.AttrInts("kernel_shape", nil); len(ks) == 2 {
			kh, kw = int(ks[0]), int(ks[1])
		} else if wt, ok := sg.TypeOf(n.Input(1)); ok && n.OpType == "Conv" {
			if d, ok := wt.Shape.Ints(); ok && len(d) == 4 {
				kh, kw = d[2], d[3]
			}
		}
		stride := 1
		if s := n.AttrInts("strides", nil); len(s) > 0 {
			stride = int(s[0])
		}
		chain := 0
		if f := fused[n]; f != nil {
			chain = len(f.chain)
			if f.silu {
				chain = -1
			}
		}
		sumE += c
		sumM += float64(meas)
		fmt.Fprintf(out, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.0f\t%d\t%.2f\t%.2f\n", m, n.Name, n.OpType, opcost.Family(n, sg),
			cin, cout, kh, kw, stride, n.AttrInt("group", 1), hin, win, hout, wout, chain, w.FLOPs, w.BytesIn+w.BytesOut, c/1e3, float64(meas)/1e3)
	}
	t.Logf("%s: nodes estimated %.3f ms, measured (least of each) %.3f ms", m, sumE/1e6, sumM/1e6)
}
