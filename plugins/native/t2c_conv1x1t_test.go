package native

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
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// t2cPointwisePlan is a constant 1×1 convolution plan of cin → cout with
// random weights and bias, clamped to [-1, 1.5].
func t2cPointwisePlan(kern *microKernel, rng *rand.Rand, cout, cin int) *convPlan {
	win := window{autoPad: "NOTSET", nd: 2, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1}
	p := &convPlan{win: win, cout: cout, cin: cin, group: 1, kh: 1, kw: 1, w: randSlice(rng, cout*cin), constW: true,
		clamp: true, lo: -1, hi: 1.5, ss: &scratchSet{}, planeSS: &scratchSet{}, wideSS: &scratchSet{}}
	p.biasStride = (cout + kern.mr - 1) / kern.mr * kern.mr
	p.bias = make([]float32, p.biasStride)
	copy(p.bias, randSlice(rng, cout))
	return p
}

// runPointwiseTA computes exactly what runPointwiseT's three loops
// compute (the same multiply-adds in the same order: its kernels read
// A's values from the planes where the packed-A ones read the packed
// copy), at one and two threads: row tiles whole and partial, a partial
// last panel, more input channels than one kc block, a batch of 2.
func TestT2cPointwiseTAExact(t *testing.T) {
	kern := bestKernel()
	if gemmATKernels == nil || kern.mr != gemmATMR || kern.nr != gemmATNR {
		t.Skip("no A-transposed kernels on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range [][4]int{{192, 1152, 7, 7}, {112, 672, 14, 14}, {80, 480, 14, 14}, {200, 300, 5, 7}, {48, 64, 13, 13}, {33, 70, 3, 5}} {
		cout, cin, h, w := c[0], c[1], c[2], c[3]
		hw := h * w
		if !pointwiseTAWith(&kern, cout, cin) {
			t.Fatalf("%v: not a shape runPointwiseTA takes", c)
		}
		p := t2cPointwisePlan(&kern, rng, cout, cin)
		x := randSlice(rng, 2*cin*hw)
		for _, threads := range []int{1, 2} {
			pl := newPool(threads)
			bc := &buildCtx{kern: &kern, pool: pl}
			want := make([]float32, 2*cout*hw)
			got := make([]float32, 2*cout*hw)
			usePointwiseTA = false
			p.runPointwiseT(bc, x, want, 2, hw)
			usePointwiseTA = true
			p.runPointwiseT(bc, x, got, 2, hw)
			pl.close()
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%v threads %d: y[%d] = %v, three loops %v", c, threads, i, got[i], want[i])
					break
				}
			}
		}
	}
}

// BenchmarkT2cPointwiseTA times hand_landmark_full's and pose_detection's
// 1×1 convolutions over 7×7 and 14×14 through compute, planar (the
// positions on the GEMM's columns), transposed by runPointwiseT's three
// loops and by runPointwiseTA's one, alternating in one run, at one
// thread (CPU time per run) and two (a hot pool; wall time):
//
//	go test ./plugins/native -run '^$' -bench T2cPointwiseTA -benchtime 300x
func BenchmarkT2cPointwiseTA(b *testing.B) {
	kern := bestKernel()
	if gemmATKernels == nil || kern.mr != gemmATMR || kern.nr != gemmATNR {
		b.Skip("no A-transposed kernels on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][4]int{{192, 1152, 7, 7}, {1152, 192, 7, 7}, {192, 672, 7, 7}, {480, 80, 14, 14}, {80, 480, 14, 14},
		{672, 112, 14, 14}, {112, 672, 14, 14}, {192, 1152, 14, 14}, {192, 192, 14, 14}} {
		cout, cin, h, w := sh[0], sh[1], sh[2], sh[3]
		p := t2cPointwisePlan(&kern, rng, cout, cin)
		x := graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))
		ctx := &kernels.Context{Alloc: oneTensorAlloc{graph.MustFromSlice([]int{1, cout, h, w}, make([]float32, cout*h*w))}}
		for _, threads := range []int{1, 2} {
			pl := newPool(threads)
			bc := &buildCtx{kern: &kern, pool: pl}
			pl.begin()
			for _, mode := range []string{"planar", "three-loops", "one-loop"} {
				b.Run(fmt.Sprintf("%dx%dx%dx%d/threads=%d/%s", cout, cin, h, w, threads, mode), func(b *testing.B) {
					usePointwiseT, pointwiseTForce, usePointwiseTA = mode != "planar", true, mode == "one-loop"
					defer func() { usePointwiseT, pointwiseTForce, usePointwiseTA = true, false, true }()
					cpuLoop(b, func() {
						if _, err := p.compute(bc, ctx, x); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
			pl.end()
			pl.close()
		}
	}
}

// t2cToggles are the switches BenchmarkT2cModelAB compares, off against
// on (on: the default).
var t2cToggles = map[string]func(on bool){
	"pwta":       func(on bool) { usePointwiseTA = on },
	"pwta-kern":  func(on bool) { usePointwiseTA, pointwiseTAPrice = on, false },
	"pwta-price": func(on bool) { pointwiseTAPrice = on },
	"di3par":     func(on bool) { useDeinterleave3Par = on },
	"pwta-expand": func(on bool) {
		pointwiseTAMaxExpand = 1
		if on {
			pointwiseTAMaxExpand = 100
		}
	},
}

// BenchmarkT2cModelAB runs zoo models (T2C_MODELS, comma-separated;
// default hand_landmark_full) on native at 1 and 2 threads with a switch
// (T2C_TOGGLE, a key of t2cToggles) off and on, alternating call by call
// in one process (each variant 3 calls in a row, the pool hot), and
// prints each variant's least wall time and mean process CPU time a call
// (with T2C_PROFILE set, profiled calls, and the sum of each node's least
// time too):
//
//	T2C_TOGGLE=pwta go test ./plugins/native -run '^$' -bench T2cModelAB -benchtime 1x
func BenchmarkT2cModelAB(b *testing.B) {
	root := shared.Path(b, "testdata")
	models := []string{"hand_landmark_full"}
	if s := os.Getenv("T2C_MODELS"); s != "" {
		models = strings.Split(s, ",")
	}
	toggle := t2cToggles[os.Getenv("T2C_TOGGLE")]
	if toggle == nil {
		b.Skip("T2C_TOGGLE names no switch")
	}
	defer func() {
		usePointwiseTA, pointwiseTAPrice, pointwiseTAMaxExpand, useDeinterleave3Par = true, true, 1, true
	}()
	profile := os.Getenv("T2C_PROFILE") != ""
	rounds := 60
	if s := os.Getenv("T2C_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, m := range models {
		file := filepath.Join(root, "zoo", m, "model.tflite")
		if _, err := os.Stat(file); err != nil {
			file = filepath.Join(root, "zoo", m, "model.onnx")
		}
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", m, threads), func(b *testing.B) {
				z, err := compileZooProfiledThreads(file, threads)
				if err != nil {
					b.Fatal(err)
				}
				defer z.close()
				var best [2]time.Duration
				var cpu [2]time.Duration
				node := [2]map[string]time.Duration{{}, {}}
				for b.Loop() {
					for it := 0; it < rounds; it++ {
						for v := 0; v < 2; v++ {
							toggle(v == 1)
							for rep := 0; rep < 3; rep++ {
								c0, t0 := cpuNow(), time.Now()
								var err error
								if profile {
									var p *hal.CallProfile
									p, err = z.exe.ExecuteProfiled(context.Background(), z.in, z.outs)
									for _, k := range p.Kernels {
										key, d := strings.Join(k.Nodes, ","), time.Duration(k.EndNS-k.StartNS)
										if old, ok := node[v][key]; !ok || d < old {
											node[v][key] = d
										}
									}
								} else {
									err = z.exe.(hal.Executable).Execute(context.Background(), z.in, z.outs)
								}
								if err != nil {
									b.Fatal(err)
								}
								d := time.Since(t0)
								if rep == 2 {
									cpu[v] += cpuNow() - c0
								}
								if best[v] == 0 || d < best[v] {
									best[v] = d
								}
							}
						}
					}
				}
				if profile {
					var sum [2]time.Duration
					for v := range sum {
						for _, d := range node[v] {
							sum[v] += d
						}
					}
					var keys []string
					for k := range node[0] {
						keys = append(keys, k)
					}
					sort.Slice(keys, func(i, j int) bool { return node[0][keys[i]]-node[1][keys[i]] > node[0][keys[j]]-node[1][keys[j]] })
					for _, k := range keys {
						if d := node[0][k] - node[1][k]; d > 3*time.Microsecond || d < -3*time.Microsecond {
							fmt.Printf("  off %7.1f on %7.1f µs  %.60s\n", node[0][k].Seconds()*1e6, node[1][k].Seconds()*1e6, k)
						}
					}
					b.ReportMetric(sum[0].Seconds()*1e3, "off-nodes-ms")
					b.ReportMetric(sum[1].Seconds()*1e3, "on-nodes-ms")
				}
				n := float64(rounds * b.N)
				b.ReportMetric(best[0].Seconds()*1e3, "off-ms")
				b.ReportMetric(best[1].Seconds()*1e3, "on-ms")
				b.ReportMetric(best[1].Seconds()/best[0].Seconds(), "on/off")
				b.ReportMetric(cpu[0].Seconds()*1e3/n, "off-cpu-ms")
				b.ReportMetric(cpu[1].Seconds()*1e3/n, "on-cpu-ms")
			})
		}
	}
}
