package switchyard_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/internal/tflitepeer"
)

// BenchmarkVsTFLiteXNNPACK times every TFLite model of ../shared (the zoo's
// model.tflite dirs, testdata/tflite and its mediapipe folder) on Switchyard
// and on TFLite 2.9 with its XNNPACK delegate (the delegate TFLite's
// standard builds apply by default; internal/tflitepeer), the two
// alternating run after run on the same input, at 1 and 2 threads, for the
// default backends and for native,cpu. Before timing, Switchyard's outputs
// are checked: against the zoo's reference outputs at the MANIFEST's
// suggested tolerance, and for the other models against TFLite's own
// builtin kernels (float: rtol 1e-3, atol 1e-3 of the output's range). An
// int8 output's largest difference in quantization steps is shown in the
// table, not failed: the importer rounds requantization ties away from zero
// and follows the fixed LSTM hidden zero point, where TFLite 2.9 differs
// (formats/tflite's TestInt8MatchesTFLite holds those to TFLite exactly,
// with the options that follow 2.9). Each sub-benchmark reports both
// engines' least wall time, its ratio (switchyard/tflite) and the ratio of
// their least process CPU time, and the run logs one table line per case:
//
//	go test . -run '^$' -bench VsTFLiteXNNPACK -benchtime 20x
//
// On a shared machine the CPU-time ratio is the steadier figure at one
// thread (a run descheduled midway costs wall time, not CPU time); at two
// threads only a quiet machine gives meaningful wall times (both engines'
// thread pools wait for a descheduled worker).
//
// SWITCHYARD_BENCH_MODELS (comma-separated substrings of the case names)
// picks cases. A model TFLite refuses (MediaPipe custom ops) is skipped with
// TFLite's message.
func BenchmarkVsTFLiteXNNPACK(b *testing.B) {
	lib, err := tflitepeer.Open()
	if err != nil {
		b.Skip(err)
	}
	var pick []string
	if v := os.Getenv("SWITCHYARD_BENCH_MODELS"); v != "" {
		pick = strings.Split(v, ",")
	}
	var table []string
	for _, c := range tfliteCases(b) {
		for _, threads := range []int{1, 2} {
			for _, placement := range []string{"default", "native,cpu"} {
				name := fmt.Sprintf("%s/threads=%d/%s", c.name, threads, strings.ReplaceAll(placement, ",", "+"))
				if len(pick) > 0 && !containsAny(name, pick) {
					continue
				}
				var once sync.Once
				var pb *peerBench
				b.Run(name, func(b *testing.B) {
					once.Do(func() { pb = newPeerBench(b, lib, c, threads, placement) })
					if pb == nil || b.Skipped() || b.Failed() {
						b.SkipNow()
					}
					pb.run(b)
					if b.N > 1 || pb.rounds > 1 {
						pb.line = pb.tableLine()
					}
				})
				if pb != nil && pb.line != "" {
					table = append(table, pb.line)
					pb.close()
				}
			}
		}
	}
	if len(table) > 0 {
		load, _ := os.ReadFile("/proc/loadavg")
		b.Logf("Switchyard vs TFLite 2.9 + XNNPACK (least time of alternating runs; load %s):\n%-34s %8s %8s %6s %6s %7s %s\n%s",
			strings.TrimSpace(string(load)), "model", "ours ms", "peer ms", "ratio", "cpu", "threads", "placement", strings.Join(table, "\n"))
	}
}

func containsAny(s string, subs []string) bool {
	for _, p := range subs {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// tfliteCase is one .tflite model and what its outputs are checked against.
type tfliteCase struct {
	name, file string
	refDir     string // test_data_set_0 of a zoo model; "" for the others
	rtol, atol float64
	refused    string // REFUSED.txt: TFLite's own refusal
	input      string // raw bytes of the (one) input, "" for random values
}

// tfliteCases lists the TFLite models of ../shared.
func tfliteCases(b *testing.B) []tfliteCase {
	zoo := shared.Path(b, "testdata/zoo")
	tols := manifestTolerances(filepath.Join(zoo, "MANIFEST.md"))
	var cs []tfliteCase
	dirs, err := os.ReadDir(zoo)
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range dirs {
		file := filepath.Join(zoo, d.Name(), "model.tflite")
		if _, err := os.Stat(file); err != nil {
			continue
		}
		c := tfliteCase{name: d.Name(), file: file, refDir: filepath.Join(zoo, d.Name(), "test_data_set_0"), rtol: 1e-3, atol: 1e-4}
		if t, ok := tols[d.Name()]; ok {
			c.rtol, c.atol = t[0], t[1]
		}
		if msg, err := os.ReadFile(filepath.Join(zoo, d.Name(), "REFUSED.txt")); err == nil {
			c.refused = strings.TrimSpace(string(msg))
		}
		cs = append(cs, c)
	}
	tfl := shared.Path(b, "testdata/tflite")
	for _, dir := range []string{tfl, filepath.Join(tfl, "mediapipe")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.tflite"))
		sort.Strings(files)
		for _, f := range files {
			c := tfliteCase{name: strings.TrimSuffix(filepath.Base(f), ".tflite"), file: f, rtol: 1e-3, atol: 1e-3}
			if strings.HasPrefix(c.name, "mobilenet_v2_quantized") {
				// the photograph it ships with (README.md)
				c.input = filepath.Join(tfl, "dog_1x3x224x224.bin")
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// manifestTolerances reads "suggested tolerance: rtol R, atol A" under each
// "## name" heading of the zoo's MANIFEST.
func manifestTolerances(path string) map[string][2]float64 {
	out := map[string][2]float64{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	name := ""
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			name = strings.TrimSpace(line[3:])
			continue
		}
		rest, ok := strings.CutPrefix(line, "- suggested tolerance: ")
		if !ok || name == "" {
			continue
		}
		var tol [2]float64
		n := 0
		for _, f := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == ' ' || r == '(' }) {
			if v, err := strconv.ParseFloat(f, 64); err == nil && n < 2 {
				tol[n] = v
				n++
			}
		}
		if n == 2 {
			out[name] = tol
		}
	}
	return out
}

// peerBench is one case at one thread count and placement: the two engines
// loaded and fed the same input.
type peerBench struct {
	c                  tfliteCase
	threads            int
	placement          string
	ip                 *tflitepeer.Interpreter
	m                  *switchyard.Model
	feeds, outs        switchyard.Tensors
	ours, peer         time.Duration // least wall time
	oursCPU, peerCPU   time.Duration // least process CPU time
	rounds             int
	line               string
	procs              int
	partitions, onSlow int
	int8Steps          int // the largest int8 output difference from TFLite
}

func newPeerBench(b *testing.B, lib *tflitepeer.Lib, c tfliteCase, threads int, placement string) *peerBench {
	if c.refused != "" {
		b.Skipf("TFLite refuses it (REFUSED.txt): %s", c.refused)
	}
	data, err := os.ReadFile(c.file)
	if err != nil {
		b.Fatal(err)
	}
	ip, err := lib.NewInterpreterWith(data, tflitepeer.Options{Threads: threads, XNNPACK: true})
	if err != nil {
		b.Skipf("TFLite cannot run %s: %v", c.name, err)
	}
	pb := &peerBench{c: c, threads: threads, placement: placement, ip: ip}
	ctx := context.Background()
	opts := &switchyard.OpenOptions{Threads: threads}
	if placement != "default" {
		opts.Backends = strings.Split(placement, ",")
	}
	pb.m, err = switchyard.Open(ctx, c.file, opts)
	if err != nil {
		pb.close()
		if errors.Is(err, switchyard.ErrUnavailable) {
			b.Skipf("%s: %v", placement, err)
		}
		b.Fatalf("open: %v", err)
	}
	for _, p := range pb.m.Plan().Partitions {
		pb.partitions++
		if p.Backend == "cpu" {
			pb.onSlow += len(p.Nodes)
		}
	}
	raws, err := pb.inputs()
	if err != nil {
		pb.close()
		b.Fatal(err)
	}
	if err := ip.Set(raws); err != nil {
		pb.close()
		b.Fatal(err)
	}
	if err := ip.Invoke(); err != nil {
		pb.close()
		b.Fatal(err)
	}
	got, err := pb.m.Run(ctx, pb.feeds)
	if err != nil {
		pb.close()
		b.Fatalf("run: %v", err)
	}
	pb.outs = switchyard.Tensors{}
	for k, v := range got {
		pb.outs[k] = v.Clone()
	}
	if err := pb.check(lib, data); err != nil {
		pb.close()
		b.Fatalf("outputs: %v", err)
	}
	pb.ours, pb.peer, pb.oursCPU, pb.peerCPU = math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64
	return pb
}

func (pb *peerBench) close() {
	if pb.ip != nil {
		pb.ip.Close()
		pb.ip = nil
	}
	if pb.m != nil {
		pb.m.Close()
		pb.m = nil
	}
}

// inputs makes the feeds (the zoo's input_K.npy, else seeded random values)
// and the same bytes for TFLite.
func (pb *peerBench) inputs() ([][]byte, error) {
	pb.feeds = switchyard.Tensors{}
	ins := pb.m.Inputs()
	pt := pb.ip.Inputs()
	if len(ins) != len(pt) {
		return nil, fmt.Errorf("%d inputs here, %d in TFLite", len(ins), len(pt))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var raws [][]byte
	for i, in := range ins {
		var x *switchyard.Tensor
		if pb.c.refDir != "" {
			g, err := tensorio.ReadFile(filepath.Join(pb.c.refDir, fmt.Sprintf("input_%d.npy", i)))
			if err != nil {
				return nil, err
			}
			x = apiaccess.Tensor(g).(*switchyard.Tensor)
		} else if pb.c.input != "" && in.DType == switchyard.Int8 && len(ins) == 1 {
			raw, err := os.ReadFile(pb.c.input)
			if err != nil {
				return nil, err
			}
			v := make([]int8, len(raw))
			for k, q := range raw {
				v[k] = int8(q)
			}
			if x, err = switchyard.NewTensor(in.Shape, v); err != nil {
				return nil, err
			}
		} else {
			shape := append([]int(nil), in.Shape...)
			n := 1
			for k := range shape {
				if shape[k] <= 0 {
					shape[k] = 1
				}
				n *= shape[k]
			}
			var err error
			switch in.DType {
			case switchyard.Int8:
				v := make([]int8, n)
				for k := range v {
					v[k] = int8(rng.IntN(256) - 128)
				}
				x, err = switchyard.NewTensor(shape, v)
			case switchyard.Float32:
				v := make([]float32, n)
				for k := range v {
					v[k] = rng.Float32()*2 - 1
				}
				x, err = switchyard.NewTensor(shape, v)
			default:
				return nil, fmt.Errorf("input %s: no generator for %v", in.Name, in.DType)
			}
			if err != nil {
				return nil, err
			}
		}
		raw, err := tensorBytes(x)
		if err != nil {
			return nil, fmt.Errorf("input %s: %v", in.Name, err)
		}
		if len(raw) != pt[i].Bytes {
			return nil, fmt.Errorf("input %s: %d bytes here, TFLite wants %d", in.Name, len(raw), pt[i].Bytes)
		}
		pb.feeds[in.Name] = x
		raws = append(raws, raw)
	}
	return raws, nil
}

// tensorBytes is a float32 or int8 tensor's little-endian bytes.
func tensorBytes(x *switchyard.Tensor) ([]byte, error) {
	switch x.DType() {
	case switchyard.Float32:
		v, _ := switchyard.Values[float32](x)
		raw := make([]byte, 4*len(v))
		for k, f := range v {
			binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(f))
		}
		return raw, nil
	case switchyard.Int8:
		v, _ := switchyard.Values[int8](x)
		raw := make([]byte, len(v))
		for k, q := range v {
			raw[k] = byte(q)
		}
		return raw, nil
	}
	return nil, fmt.Errorf("dtype %v", x.DType())
}

// check compares Switchyard's outputs with the zoo's references, or with
// TFLite's builtin kernels for a model without references.
func (pb *peerBench) check(lib *tflitepeer.Lib, data []byte) error {
	outs := pb.m.Outputs()
	var want [][]float64
	var int8Out []bool
	if pb.c.refDir != "" {
		for i := range outs {
			g, err := tensorio.ReadFile(filepath.Join(pb.c.refDir, fmt.Sprintf("output_%d.npy", i)))
			if err != nil {
				return err
			}
			w := apiaccess.Tensor(g).(*switchyard.Tensor)
			want = append(want, floats(w))
			int8Out = append(int8Out, w.DType() == switchyard.Int8)
		}
	} else {
		ref, err := lib.NewInterpreter(data, 1)
		if err != nil {
			return err
		}
		defer ref.Close()
		var raws [][]byte
		for _, in := range pb.m.Inputs() {
			raw, err := tensorBytes(pb.feeds[in.Name])
			if err != nil {
				return err
			}
			raws = append(raws, raw)
		}
		got, err := ref.Run(raws)
		if err != nil {
			return err
		}
		for i, o := range ref.Outputs() {
			switch o.Type {
			case 1: // float32
				v := make([]float64, len(got[i])/4)
				for k := range v {
					v[k] = float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i][4*k:])))
				}
				want = append(want, v)
				int8Out = append(int8Out, false)
			case 9: // int8
				v := make([]float64, len(got[i]))
				for k := range v {
					v[k] = float64(int8(got[i][k]))
				}
				want = append(want, v)
				int8Out = append(int8Out, true)
			default:
				return fmt.Errorf("TFLite output %d: type %d", i, o.Type)
			}
		}
	}
	if len(want) != len(outs) {
		return fmt.Errorf("%d outputs, %d references", len(outs), len(want))
	}
	for i, o := range outs {
		got := floats(pb.outs[o.Name])
		if len(got) != len(want[i]) {
			return fmt.Errorf("output %s: %d values, reference %d", o.Name, len(got), len(want[i]))
		}
		if int8Out[i] {
			for k := range got {
				pb.int8Steps = max(pb.int8Steps, int(math.Abs(got[k]-want[i][k])))
			}
			continue
		}
		rtol, atol := pb.c.rtol, pb.c.atol
		if pb.c.refDir == "" {
			// random inputs: the tolerance is relative to the output's range
			hi := 0.0
			for _, v := range want[i] {
				hi = math.Max(hi, math.Abs(v))
			}
			atol *= math.Max(1, hi)
		}
		bad, worst, at := 0, 0.0, 0
		for k := range got {
			d := math.Abs(got[k] - want[i][k])
			if d > atol+rtol*math.Abs(want[i][k]) || math.IsNaN(got[k]) != math.IsNaN(want[i][k]) {
				bad++
				if d > worst || math.IsNaN(d) {
					worst, at = d, k
				}
			}
		}
		if bad > 0 {
			return fmt.Errorf("output %s: %d of %d values outside rtol %g atol %g; worst at %d: %g vs %g",
				o.Name, bad, len(got), rtol, atol, at, got[at], want[i][at])
		}
	}
	return nil
}

func floats(t *switchyard.Tensor) []float64 {
	if t == nil {
		return nil
	}
	v := make([]float64, t.Len())
	for k := range v {
		v[k] = t.Float64At(k)
	}
	return v
}

// run alternates the two engines b.N times, keeping each one's least time.
func (pb *peerBench) run(b *testing.B) {
	ctx := context.Background()
	pb.procs = goruntime.GOMAXPROCS(0)
	for i := 0; i < b.N; i++ {
		w0, c0 := time.Now(), runClock()
		if err := pb.ip.Invoke(); err != nil {
			b.Fatal(err)
		}
		w1, c1 := time.Now(), runClock()
		if err := pb.m.RunInto(ctx, pb.feeds, pb.outs); err != nil {
			b.Fatal(err)
		}
		w2, c2 := time.Now(), runClock()
		pb.peer = min(pb.peer, w1.Sub(w0))
		pb.ours = min(pb.ours, w2.Sub(w1))
		pb.peerCPU = min(pb.peerCPU, c1-c0)
		pb.oursCPU = min(pb.oursCPU, c2-c1)
		pb.rounds++
	}
	b.ReportMetric(float64(pb.ours)/1e6, "ours-ms")
	b.ReportMetric(float64(pb.peer)/1e6, "tflite-ms")
	b.ReportMetric(float64(pb.ours)/float64(pb.peer), "ratio")
	b.ReportMetric(float64(pb.oursCPU)/float64(pb.peerCPU), "cpu-ratio")
}

func (pb *peerBench) tableLine() string {
	steps := ""
	if pb.int8Steps > 0 {
		steps = fmt.Sprintf("; int8 output up to %d steps from TFLite", pb.int8Steps)
	}
	return fmt.Sprintf("%-34s %8.3f %8.3f %6.2f %6.2f %7d %s (%d partitions, %d nodes on cpu; %d runs%s)",
		pb.c.name, float64(pb.ours)/1e6, float64(pb.peer)/1e6, float64(pb.ours)/float64(pb.peer),
		float64(pb.oursCPU)/float64(pb.peerCPU), pb.threads, pb.placement, pb.partitions, pb.onSlow, pb.rounds, steps)
}
