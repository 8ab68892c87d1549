package llm_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkPattnPrefillGGUF: the prefill of a prompt (the comma-separated ids
// in the file SWITCHYARD_BENCH_IDS, else 128 ids) on the GGUF file
// SWITCHYARD_BENCH_GGUF (skipped without it) through the native backend
// at int8 precision, as `switchyard generate` runs a GGUF: one op is one
// generation of len(prompt) positions (the prefill and the argmax).
// cpu-ms/op is the least CPU time of one prefill (all threads together:
// the machine's other work inflates wall time, much less this), ms/op
// the least wall time. The threads are GOMAXPROCS (-cpu).
//
//	SWITCHYARD_BENCH_GGUF=/work/tmp/qwen2-Q4_0.gguf go test -run '^$' -bench PattnPrefillGGUF -cpu 1,2 ./llm
func BenchmarkPattnPrefillGGUF(b *testing.B) {
	path := os.Getenv("SWITCHYARD_BENCH_GGUF")
	if path == "" {
		b.Skip("SWITCHYARD_BENCH_GGUF names no GGUF file")
	}
	prompt := make([]int, 128)
	for i := range prompt {
		prompt[i] = 1000 + 7*i
	}
	if f := os.Getenv("SWITCHYARD_BENCH_IDS"); f != "" {
		raw, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		prompt = prompt[:0]
		for _, s := range strings.Split(strings.TrimSpace(string(raw)), ",") {
			v, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				b.Fatal(err)
			}
			prompt = append(prompt, v)
		}
	}
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"},
		Precision: switchyard.PrecisionInt8, Threads: runtime.GOMAXPROCS(0)})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{ContextLength: len(prompt)})
	if err != nil {
		b.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	o := llm.Options{Steps: len(prompt)}
	run := func() {
		if _, err := d.GenerateIDs(ctx, prompt, o, nil, func(llm.Token) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	run() // plans and allocates
	bestCPU, bestWall := time.Duration(1<<62), time.Duration(1<<62)
	for b.Loop() {
		t0, w0 := cpuTime(), time.Now()
		run()
		bestCPU, bestWall = min(bestCPU, cpuTime()-t0), min(bestWall, time.Since(w0))
	}
	b.ReportMetric(float64(bestCPU.Microseconds())/1e3, "cpu-ms/op")
	b.ReportMetric(float64(bestWall.Microseconds())/1e3, "best-ms/op")
}
