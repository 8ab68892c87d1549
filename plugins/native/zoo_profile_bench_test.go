package native_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// BenchmarkZooModelNodes compiles a whole model (a zoo directory's
// model.onnx or model.tflite, or a .tflite path under ../shared/testdata)
// on native at one thread, runs it profiled ZOO_ROUNDS times (default 30)
// and prints each node's least time and the sums per op: on a loaded
// machine the least time of each node is steadier than a mean, so this
// shows where a whole model's time goes inside native, op by op:
//
//	ZOO_MODELS=face_landmark,tflite/mediapipe/face_detection_short_range.tflite go test ./plugins/native -run '^$' -bench ZooModelNodes -benchtime 1x
//
// ZOO_DW3=0 turns the 3×3 depthwise row kernels off (the packed path
// and the planar tiles compute those planes).
func BenchmarkZooModelNodes(b *testing.B) {
	root := shared.Path(b, "testdata")
	models := []string{"face_landmark", "palm_detection_lite", "hand_landmark_full", "pose_detection"}
	if s := os.Getenv("ZOO_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 30
	if s := os.Getenv("ZOO_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	if os.Getenv("ZOO_DW3") == "0" {
		native.UseDW3Rows(false)
		defer native.UseDW3Rows(true)
	}
	for _, m := range models {
		b.Run(strings.ReplaceAll(m, "/", "_"), func(b *testing.B) {
			for b.Loop() {
				zooModelNodes(b, root, m, rounds)
			}
		})
	}
}

func zooModelNodes(b *testing.B, root, m string, rounds int) {
	file := filepath.Join(root, m)
	if !strings.HasSuffix(m, ".tflite") && !strings.HasSuffix(m, ".onnx") {
		file = filepath.Join(root, "zoo", m, "model.onnx")
		if _, err := os.Stat(file); err != nil {
			file = filepath.Join(root, "zoo", m, "model.tflite")
		}
	}
	pe, in, outs, release, err := native.CompileZooProfiled(file)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	best := map[string]time.Duration{}
	op := map[string]string{}
	var order []string
	total := time.Duration(1 << 62)
	for it := 0; it < rounds; it++ {
		p, err := pe.ExecuteProfiled(context.Background(), in, outs)
		if err != nil {
			b.Fatal(err)
		}
		total = min(total, time.Duration(p.EndNS-p.StartNS))
		for _, k := range p.Kernels {
			key := strings.Join(k.Nodes, ",")
			d := time.Duration(k.EndNS - k.StartNS)
			if old, ok := best[key]; !ok || d < old {
				if !ok {
					order = append(order, key)
					op[key] = k.Name
				}
				best[key] = d
			}
		}
	}
	byOp := map[string]time.Duration{}
	count := map[string]int{}
	var sum time.Duration
	for _, k := range order {
		byOp[op[k]] += best[k]
		count[op[k]]++
		sum += best[k]
	}
	ops := make([]string, 0, len(byOp))
	for o := range byOp {
		ops = append(ops, o)
	}
	sort.Slice(ops, func(i, j int) bool { return byOp[ops[i]] > byOp[ops[j]] })
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: least call %.3f ms, sum of least node times %.3f ms\n", m, total.Seconds()*1e3, sum.Seconds()*1e3)
	for _, o := range ops {
		fmt.Fprintf(&sb, "  %-20s %8.1f µs %5.1f%% (%d)\n", o, byOp[o].Seconds()*1e6, 100*byOp[o].Seconds()/sum.Seconds(), count[o])
	}
	sort.Slice(order, func(i, j int) bool { return best[order[i]] > best[order[j]] })
	for _, k := range order[:min(len(order), 25)] {
		fmt.Fprintf(&sb, "  %8.1f µs  %-12s %.90s\n", best[k].Seconds()*1e6, op[k], k)
	}
	fmt.Print(sb.String())
}
