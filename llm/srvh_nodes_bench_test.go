package llm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkSrvhStepNodes: where a batched decode step's time goes, by
// kernel kind, for one sequence and four (SWITCHYARD_BATCH_BENCH_MODEL, a
// .gguf; skipped without it), alternating step by step in one loop. The
// model is opened profiled: each step's device profile times the native
// partition's kernels (BlockQuantMatMul, GroupQueryAttention, ...), and
// "(between kernels)" is the rest of the partition's call (the
// executor's own time); graph nodes outside the partition are listed as
// "graph OP". Each row is the median over the steps of that kind's time
// a step (SRVH_LEAST=1: the least), printed to stderr as a table, with
// the partition's and the run's whole time (a median of sums is not the
// sum of the medians on a loaded machine: load spikes land in random
// kernels). SRVH_PREFILL=n runs prompt chunks of n tokens a sequence
// instead of decode steps (each sequence cut back to 2 positions before
// each). It reports the kernels a step and the median run of each.
//
//	SWITCHYARD_BATCH_BENCH_MODEL=/work/tmp/qwen2-Q4_K_M.gguf go test ./llm -run '^$' -bench SrvhStepNodes -benchtime 200x
func BenchmarkSrvhStepNodes(b *testing.B) {
	path := os.Getenv("SWITCHYARD_BATCH_BENCH_MODEL")
	if path == "" {
		b.Skip("SWITCHYARD_BATCH_BENCH_MODEL (a .gguf) not set")
	}
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	var last *switchyard.Stats
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 256, Profile: true,
		OnRun: func(_ string, st *switchyard.Stats) { last = st }})
	if err != nil {
		b.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	seqs := make([]*llm.Sequence, 5)
	for i := range seqs {
		if seqs[i], err = d.NewSequence(ctx); err != nil {
			b.Fatal(err)
		}
		defer seqs[i].Close()
		if _, err := seqs[i].Feed(ctx, []int{1, 100 + i}); err != nil {
			b.Fatal(err)
		}
	}
	arena := make([]float32, 4*d.Vocab())
	groups := [][]*llm.Sequence{seqs[:1], seqs[1:]}
	chunks := [][][]int{{{7}}, {{7}, {8}, {9}, {10}}}
	// SRVH_PREFILL=n: prompt chunks of n tokens instead of decode steps
	// (each sequence cut back to its 2 positions after each)
	prefill, _ := strconv.Atoi(os.Getenv("SRVH_PREFILL"))
	if prefill > 0 {
		for g := range chunks {
			for i := range chunks[g] {
				c := make([]int, prefill)
				for k := range c {
					c[k] = 7 + i + k
				}
				chunks[g][i] = c
			}
		}
	}
	byOp := [2]map[string][]time.Duration{{}, {}}
	var total, pt, ex [2][]time.Duration
	nodes := [2]int{}
	step := func(g int, record bool) {
		last = nil
		if prefill > 0 {
			for _, s := range groups[g] {
				if err := s.Truncate(2); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := d.FeedChunksArena(ctx, groups[g], chunks[g], arena); err != nil {
			b.Fatal(err)
		}
		if !record || last == nil {
			return
		}
		sum := map[string]time.Duration{}
		nk := 0
		var partition, execute time.Duration
		for _, op := range last.DeviceOps {
			if len(op.Kernels) == 0 {
				sum[op.Kind+" "+op.Name] += op.Duration
				continue
			}
			var in time.Duration
			execute += op.Duration
			for _, k := range op.Kernels {
				sum[kernelKind(k.Name)] += k.Duration
				in += k.Duration
				nk++
			}
			sum["(between kernels)"] += op.Duration - in
		}
		for _, n := range last.Nodes {
			if n.OpType != "Partition" {
				sum["graph "+n.OpType] += n.Duration
			} else {
				partition += n.Duration
			}
		}
		for op, t := range sum {
			byOp[g][op] = append(byOp[g][op], t)
		}
		total[g] = append(total[g], last.Duration)
		pt[g] = append(pt[g], partition)
		ex[g] = append(ex[g], execute)
		nodes[g] = nk
	}
	for range 2 {
		step(0, false)
		step(1, false)
	}
	for k := range b.N {
		if k > 0 && k%200 == 0 {
			for _, s := range seqs {
				if err := s.Truncate(2); err != nil {
					b.Fatal(err)
				}
			}
		}
		step(k%2, true)
		step(1-k%2, true)
	}
	med := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	mins := func(ds []time.Duration) time.Duration { return slices.Min(ds) }
	if os.Getenv("SRVH_LEAST") != "" {
		med = mins
	}
	ops := []string{}
	for op := range byOp[1] {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return med(byOp[1][ops[i]]) > med(byOp[1][ops[j]]) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-28s %10s %10s\n", "op (median µs a step)", "1 row", "4 rows")
	var sum [2]time.Duration
	for _, op := range ops {
		a, c := med(byOp[0][op]), med(byOp[1][op])
		sum[0], sum[1] = sum[0]+a, sum[1]+c
		fmt.Fprintf(&sb, "%-28s %10.0f %10.0f\n", op, float64(a.Microseconds()), float64(c.Microseconds()))
	}
	fmt.Fprintf(&sb, "%-28s %10.0f %10.0f\n", "sum of ops", float64(sum[0].Microseconds()), float64(sum[1].Microseconds()))
	fmt.Fprintf(&sb, "%-28s %10.0f %10.0f\n", "partition node", float64(med(pt[0]).Microseconds()), float64(med(pt[1]).Microseconds()))
	fmt.Fprintf(&sb, "%-28s %10.0f %10.0f\n", "partition execute", float64(med(ex[0]).Microseconds()), float64(med(ex[1]).Microseconds()))
	fmt.Fprintf(&sb, "%-28s %10.0f %10.0f\n", "run", float64(med(total[0]).Microseconds()), float64(med(total[1]).Microseconds()))
	fmt.Fprint(os.Stderr, sb.String())
	b.ReportMetric(float64(nodes[1]), "kernels")
	b.ReportMetric(float64(med(total[0]).Microseconds())/1000, "ms-median-1")
	b.ReportMetric(float64(med(total[1]).Microseconds())/1000, "ms-median-4")
}

// kernelKind is a kernel's name without its node's: what it is.
func kernelKind(name string) string {
	if i := strings.IndexAny(name, ":("); i > 0 {
		return name[:i]
	}
	return name
}
