package native

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"

	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// BenchmarkT2bNodeScaling compiles each model on native at 1 and 2
// threads and runs them alternating, each call right after the last of
// its kind (the pool hot and its worker awake), and prints each node's
// least time at 1 and 2 threads with its family and shapes, worst loss
// against an ideal halving first: which kernels' splits do not scale.
//
//	T2B_MODELS=hand_landmark_full go test ./plugins/native -run '^$' -bench T2bNodeScaling -benchtime 1x
func BenchmarkT2bNodeScaling(b *testing.B) {
	root := shared.Path(b, "testdata")
	models := []string{"hand_landmark_full", "pose_detection"}
	if s := os.Getenv("T2B_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 60
	if s := os.Getenv("T2B_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, m := range models {
		b.Run(m, func(b *testing.B) {
			for b.Loop() {
				t2bNodeScaling(b, root, m, rounds)
			}
		})
	}
}

func t2bNodeScaling(b *testing.B, root, m string, rounds int) {
	file := filepath.Join(root, "zoo", m, "model.tflite")
	if _, err := os.Stat(file); err != nil {
		file = filepath.Join(root, "zoo", m, "model.onnx")
	}
	var zs [2]*zooProfiled
	for i := range zs {
		z, err := compileZooProfiledThreads(file, i+1)
		if err != nil {
			b.Fatal(err)
		}
		defer z.close()
		zs[i] = z
	}
	var best [2]map[string]time.Duration
	var calls [2]time.Duration
	var cpu [2]time.Duration
	var order []string
	for i := range best {
		best[i] = map[string]time.Duration{}
	}
	for it := 0; it < rounds; it++ {
		for i, z := range zs {
			for rep := 0; rep < 3; rep++ {
				c0 := cpuNow()
				p, err := z.exe.ExecuteProfiled(context.Background(), z.in, z.outs)
				if rep == 2 {
					cpu[i] += cpuNow() - c0
				}
				if err != nil {
					b.Fatal(err)
				}
				if d := time.Duration(p.EndNS - p.StartNS); calls[i] == 0 || d < calls[i] {
					calls[i] = d
				}
				for _, k := range p.Kernels {
					key := strings.Join(k.Nodes, ",")
					d := time.Duration(k.EndNS - k.StartNS)
					if old, ok := best[i][key]; !ok || d < old {
						if _, seen := best[0][key]; !seen && i == 0 {
							order = append(order, key)
						}
						best[i][key] = d
					}
				}
			}
		}
	}
	sg := zs[0].sg
	fg, fused := fuse(sg)
	desc := map[string]string{}
	for _, n := range fg.Nodes {
		var cin, cout, hin, win, hout, wout int
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
		kind := opcost.Family(n, sg)
		if f := fused[n]; f != nil {
			if f.pw != nil {
				kind += "+pw" + fmt.Sprint(f.pw.AttrInt("group", 1))
				if y, ok := sg.TypeOf(f.pw.Outputs[0]); ok {
					if d, ok := y.Shape.Ints(); ok && len(d) == 4 {
						cout = d[1]
					}
				}
			}
			kind += fmt.Sprintf("/c%d", len(f.chain))
		}
		desc[n.Name] = fmt.Sprintf("%-22s %4d->%-4d %3dx%-3d -> %3dx%-3d g%d", kind, cin, cout, hin, win, hout, wout, n.AttrInt("group", 1))
	}
	var sb strings.Builder
	var s1, s2 time.Duration
	for _, k := range order {
		s1 += best[0][k]
		s2 += best[1][k]
	}
	fmt.Fprintf(&sb, "%s (%d rounds): call least 1t %.3f ms 2t %.3f ms; node sums %.3f / %.3f ms; CPU of a call %.3f / %.3f ms\n", m, rounds,
		calls[0].Seconds()*1e3, calls[1].Seconds()*1e3, s1.Seconds()*1e3, s2.Seconds()*1e3, cpu[0].Seconds()*1e3/float64(rounds), cpu[1].Seconds()*1e3/float64(rounds))
	loss := func(k string) time.Duration { return best[1][k] - best[0][k]/2 }
	sort.SliceStable(order, func(i, j int) bool { return loss(order[i]) > loss(order[j]) })
	for _, k := range order {
		fmt.Fprintf(&sb, "  1t %7.1f  2t %7.1f  %.2fx loss %6.1f  %s  %.40s\n", best[0][k].Seconds()*1e6, best[1][k].Seconds()*1e6,
			best[0][k].Seconds()/best[1][k].Seconds(), loss(k).Seconds()*1e6, desc[strings.Split(k, ",")[0]], k)
	}
	fmt.Print(sb.String())
}

// BenchmarkT2bDW3Threads runs hand_landmark_full's 3×3 depthwise layers
// (the path shapeFor picks) at 1 and 2 threads on a hot pool: "warm", the same input
// each call (in both cores' caches); "produced", the input first
// rewritten by a parallel loop of 16 tasks (as the 1×1 convolution before
// it writes it: half of it then in the other core's cache). Wall time per
// call (the producer's included; "produce" alone is its cost).
//
//	chrt -r 1 go test ./plugins/native -run '^$' -bench T2bDW3Threads
func BenchmarkT2bDW3Threads(b *testing.B) {
	if dw3Kernels == nil {
		b.Skip("no row kernels")
	}
	for _, sh := range [][4]int{{480, 14, 14, 1}, {672, 14, 14, 1}, {1152, 7, 7, 1}, {240, 28, 28, 1}, {144, 56, 56, 2}, {240, 28, 28, 2}, {96, 28, 28, 1}, {144, 56, 56, 1}} {
		c, h, w, s := sh[0], sh[1], sh[2], sh[3]
		p, _, _ := dwBenchPlan(b, c, h, w, 3, s)
		xt := &graph.Tensor{DType: graph.Float32, Shape: []int{1, c, h, w}}
		cs, err := p.shapeFor(xt)
		if err != nil {
			b.Fatal(err)
		}
		path := "planar"
		if cs.zero != nil {
			path = "rows"
		} else if cs.packed != nil {
			path = fmt.Sprintf("packed%d", cs.packed.L)
		}
		x := make([]float32, c*h*w)
		for i := range x {
			x[i] = float32(i%7) * 0.1
		}
		y := make([]float32, c*cs.g.oh*cs.g.ow)
		produce := func(pl *pool) {
			parallelFor(pl, 16, x, func(x []float32, t int) {
				seg := x[len(x)*t/16 : len(x)*(t+1)/16]
				for i := range seg {
					seg[i] = seg[i]*0.5 + 0.25
				}
			})
		}
		for _, th := range []int{1, 2} {
			pl := newPool(th)
			pl.begin()
			name := fmt.Sprintf("%s-%dx%dx%d-s%d/threads=%d", path, c, h, w, s, th)
			b.Run("warm/"+name, func(b *testing.B) {
				for b.Loop() {
					depthwise(pl, p, cs, x, y, 1)
				}
			})
			b.Run("produced/"+name, func(b *testing.B) {
				for b.Loop() {
					produce(pl)
					depthwise(pl, p, cs, x, y, 1)
				}
			})
			b.Run("produce/"+name, func(b *testing.B) {
				for b.Loop() {
					produce(pl)
				}
			})
			pl.end()
			pl.close()
		}
	}
}
