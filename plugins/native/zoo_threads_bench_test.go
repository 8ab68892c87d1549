package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

// BenchmarkZooThreads compiles each model on native at 1 and at 2
// threads, runs 1 thread, 2 threads with the pool cold (no begin) and 2
// threads hot in turn, profiled, ZOO_ROUNDS times (default 30), and
// prints the calls' least and median times and CPU time, and each node's
// least time at 1 and at 2 threads (hot) and their ratio, worst-scaling
// nodes first by the time 2 threads lose against an ideal halving: where
// a model's second thread buys nothing (ops that do not split, or split
// into tasks too small for the pool's hand-off), and what it costs.
//
//	ZOO_MODELS=ultraface_rfb_320 go test ./plugins/native -run '^$' -bench ZooThreads -benchtime 1x
func BenchmarkZooThreads(b *testing.B) {
	root := shared.Path(b, "testdata")
	models := []string{"ultraface_rfb_320", "yolox_nano", "hand_landmark_full", "pose_detection"}
	if s := os.Getenv("ZOO_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	rounds := 30
	if s := os.Getenv("ZOO_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, m := range models {
		b.Run(strings.ReplaceAll(m, "/", "_"), func(b *testing.B) {
			for b.Loop() {
				zooThreads(b, root, m, rounds)
			}
		})
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func zooThreads(b *testing.B, root, m string, rounds int) {
	file := filepath.Join(root, m)
	if !strings.HasSuffix(m, ".tflite") && !strings.HasSuffix(m, ".onnx") {
		file = filepath.Join(root, "zoo", m, "model.onnx")
		if _, err := os.Stat(file); err != nil {
			file = filepath.Join(root, "zoo", m, "model.tflite")
		}
	}
	// variants: 1 thread, 2 threads without holding the pool hot, 2
	// threads hot (pool.begin); a pause between calls lets a hot pool's
	// workers park, so each call starts as a call after a pause does
	names := []string{"1t", "2t cold", "2t hot"}
	var zs [3]*zooProfiled
	for i := range zs {
		z, err := compileZooProfiledThreads(file, min(i+1, 2))
		if err != nil {
			b.Fatal(err)
		}
		defer z.close()
		zs[i] = z
	}
	defer func() { hotRuns = true }()
	var best [3]map[string]time.Duration
	var calls [3][]time.Duration
	var cpu [3]time.Duration
	op := map[string]string{}
	var order []string
	for i := range best {
		best[i] = map[string]time.Duration{}
	}
	for it := 0; it < rounds; it++ {
		for i, z := range zs {
			hotRuns = i == 2
			time.Sleep(3 * time.Millisecond)
			c0 := cpuNow()
			p, err := z.exe.ExecuteProfiled(context.Background(), z.in, z.outs)
			cpu[i] += cpuNow() - c0
			if err != nil {
				b.Fatal(err)
			}
			calls[i] = append(calls[i], time.Duration(p.EndNS-p.StartNS))
			for _, k := range p.Kernels {
				key := strings.Join(k.Nodes, ",")
				d := time.Duration(k.EndNS - k.StartNS)
				if old, ok := best[i][key]; !ok || d < old {
					if _, seen := op[key]; !seen {
						order = append(order, key)
						op[key] = k.Name
					}
					best[i][key] = d
				}
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s (%d rounds):\n", m, rounds)
	for i := range zs {
		var sum time.Duration
		for _, k := range order {
			sum += best[i][k]
		}
		c := calls[i]
		sort.Slice(c, func(a, b int) bool { return c[a] < c[b] })
		fmt.Fprintf(&sb, "  %-8s call least %.3f ms median %.3f ms; sum of least nodes %.3f ms; CPU %.3f ms/call\n", names[i],
			c[0].Seconds()*1e3, c[len(c)/2].Seconds()*1e3, sum.Seconds()*1e3, cpu[i].Seconds()*1e3/float64(rounds))
	}
	best[1] = best[2]
	byOp := map[string][2]time.Duration{}
	for _, k := range order {
		v := byOp[op[k]]
		v[0] += best[0][k]
		v[1] += best[1][k]
		byOp[op[k]] = v
	}
	ops := make([]string, 0, len(byOp))
	for o := range byOp {
		ops = append(ops, o)
	}
	sort.Slice(ops, func(i, j int) bool { return byOp[ops[i]][0] > byOp[ops[j]][0] })
	for _, o := range ops {
		v := byOp[o]
		fmt.Fprintf(&sb, "  %-20s 1t %8.1f µs  2t %8.1f µs  %.2fx\n", o, v[0].Seconds()*1e6, v[1].Seconds()*1e6, v[0].Seconds()/v[1].Seconds())
	}
	loss := func(k string) time.Duration { return best[1][k] - best[0][k]/2 }
	sort.Slice(order, func(i, j int) bool { return loss(order[i]) > loss(order[j]) })
	n := 30
	if s := os.Getenv("ZOO_TOP"); s != "" {
		fmt.Sscan(s, &n)
	}
	for _, k := range order[:min(len(order), n)] {
		fmt.Fprintf(&sb, "  1t %8.1f µs  2t %8.1f µs  %.2fx  %-12s %.60s\n", best[0][k].Seconds()*1e6, best[1][k].Seconds()*1e6,
			best[0][k].Seconds()/best[1][k].Seconds(), op[k], k)
	}
	fmt.Print(sb.String())
}

// BenchmarkGemmThreads runs UltraFace's 1×1 convolutions (m output
// channels, k input channels, n positions, B read in place) as gemm on a
// pool of 1 and 2 threads held hot, one call after another: the wall
// time of one split GEMM of 20-200 µs.
//
//	go test ./plugins/native -run '^$' -bench GemmThreads -cpu 2
func BenchmarkGemmThreads(b *testing.B) {
	kern := bestKernel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{32, 16, 19200}, {32, 32, 4800}, {64, 32, 1200}, {128, 128, 300}, {256, 256, 80}} {
		m, k, n := sh[0], sh[1], sh[2]
		a, x, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
		bias := make([]float32, (m+kern.mr-1)/kern.mr*kern.mr)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", m, k, n, th), func(b *testing.B) {
				p := newPool(th)
				defer p.close()
				p.begin()
				defer p.end()
				for b.Loop() {
					gemm(&kern, p, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: x, ldb: n, c: c, ldc: n, bias: bias, biasMode: initRowBias})
				}
			})
		}
	}
}
