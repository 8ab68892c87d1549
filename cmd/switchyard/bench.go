package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
)

func benchCmd() *cobra.Command {
	var runs, warmup, profileRuns int
	var asJSON, memory bool
	var inputs, dimFlags []string
	var seed uint64
	var bf backendFlags
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "bench MODEL [--input NAME=FILE]... [--runs N] [--warmup W] [--profile N] [--json] | bench --memory",
		Short: "Measure a model's latency (min/median/max) and allocations per run (RunInto, into the outputs of a first run)",
		Long: `MODEL is an .onnx file or a directory in the ONNX test layout (its
test_data_set_0 inputs are used; --input NAME=FILE (.npy or .pb) gives
others, as for run; the rest get seeded random values, symbolic dims from
--dim NAME=SIZE). --profile N runs N more times with per-node timings
(inside native partitions too, and any backend that profiles its calls)
and prints where the time goes, node by node.
Threads: GOMAXPROCS (set the GOMAXPROCS environment variable to change it).

--memory (no MODEL) measures the memory bandwidth instead (STREAM triad,
at 1 thread and at GOMAXPROCS) and caches it for generate's roofline line.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if memory {
				return runMemoryBench(cmd, 0)
			}
			if len(args) != 1 {
				return fmt.Errorf("bench needs MODEL (or --memory)")
			}
			ctx := cmd.Context()
			eng, err := bf.engine(ctx, &mf)
			if err != nil {
				return err
			}
			defer eng.Close()
			m, feeds, name, err := loadModel(ctx, eng, args[0])
			if err != nil {
				return err
			}
			dims, err := parseDims(dimFlags)
			if err != nil {
				return err
			}
			feeds, err = completeInputs(m, feeds, inputs, dims, seed)
			if err != nil {
				return err
			}
			if runs < 1 {
				return fmt.Errorf("--runs must be at least 1")
			}
			// the measured runs write into the outputs of a first run
			// (RunInto), as a steady-state caller does
			first, err := m.Run(ctx, feeds)
			if err != nil {
				return err
			}
			outs := switchyard.Tensors{}
			for k, v := range first {
				outs[k] = v.Clone()
			}
			for i := 0; i < warmup; i++ {
				if err := m.RunInto(ctx, feeds, outs); err != nil {
					return err
				}
			}
			lat := make([]time.Duration, runs)
			var ms0, ms1 goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&ms0)
			cpu0, cpuOK := processCPU()
			for i := range lat {
				t0 := time.Now()
				if err := m.RunInto(ctx, feeds, outs); err != nil {
					return err
				}
				lat[i] = time.Since(t0)
			}
			cpu1, _ := processCPU()
			goruntime.ReadMemStats(&ms1)
			// one more run for its transfer account (not timed)
			_, st, err := m.RunWithStats(ctx, feeds, nil)
			if err != nil {
				return err
			}
			sorted := append([]time.Duration{}, lat...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			var sum time.Duration
			for _, l := range lat {
				sum += l
			}
			res := map[string]any{
				"model":          name,
				"runs":           runs,
				"warmup":         warmup,
				"threads":        goruntime.GOMAXPROCS(0),
				"min_ms":         ms(sorted[0]),
				"median_ms":      ms(median(sorted)),
				"max_ms":         ms(sorted[len(sorted)-1]),
				"mean_ms":        ms(sum / time.Duration(runs)),
				"allocs_per_run": float64(ms1.Mallocs-ms0.Mallocs) / float64(runs),
				"bytes_per_run":  float64(ms1.TotalAlloc-ms0.TotalAlloc) / float64(runs),
				// host↔device copies of one run (0 without device backends)
				"uploads_per_run":        st.Uploads,
				"upload_bytes_per_run":   st.UploadBytes,
				"downloads_per_run":      st.Downloads,
				"download_bytes_per_run": st.DownloadBytes,
				"declined_per_run":       st.Declined,
			}
			if cpuOK {
				// process CPU time per timed run, all threads together
				res["cpu_ms_per_run"] = ms((cpu1 - cpu0) / time.Duration(runs))
			}
			var prof []nodeProfile
			if profileRuns > 0 {
				if prof, err = profileNodes(cmd.Context(), m, feeds, profileRuns); err != nil {
					return err
				}
				res["profile"] = prof
			}
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			defer printProfile(prof, profileRuns)
			fmt.Printf("model %s: %d runs after %d warm-up, %d threads\n", name, runs, warmup, res["threads"])
			fmt.Printf("latency ms: min %.3f  median %.3f  max %.3f  mean %.3f\n", res["min_ms"], res["median_ms"], res["max_ms"], res["mean_ms"])
			fmt.Printf("allocations per run: %.0f (%.1f KiB)\n", res["allocs_per_run"], res["bytes_per_run"].(float64)/1024)
			if st.Uploads+st.Downloads > 0 {
				fmt.Printf("transfers per run: %d upload(s) %.1f KiB, %d download(s) %.1f KiB\n", st.Uploads, float64(st.UploadBytes)/1024, st.Downloads, float64(st.DownloadBytes)/1024)
			}
			if st.Declined > 0 {
				fmt.Printf("partition calls declined at run time per run: %d (run on the fallback)\n", st.Declined)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&memory, "memory", false, "measure the memory bandwidth (STREAM triad) and cache it for generate's roofline line")
	cmd.Flags().IntVar(&runs, "runs", 20, "measured runs")
	cmd.Flags().IntVar(&warmup, "warmup", 3, "warm-up runs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON line")
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "NAME=FILE input (.npy or .pb), or FILE to bind the next input in order; repeatable")
	cmd.Flags().StringArrayVar(&dimFlags, "dim", nil, "NAME=SIZE for a symbolic dimension of random inputs; repeatable")
	cmd.Flags().IntVar(&profileRuns, "profile", 0, "after the timed runs, N profiled runs: time per node, inside partitions where the backend reports it")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed for random inputs")
	bf.add(cmd)
	mf.add(cmd)
	return cmd
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// nodeProfile is one node's time over the profiled runs.
type nodeProfile struct {
	Node    string  `json:"node"`
	Op      string  `json:"op"`
	Where   string  `json:"where"` // "cpu", or the partition (device kernels)
	MeanMS  float64 `json:"mean_ms"`
	Percent float64 `json:"percent"` // of the mean run
}

// profileNodes runs the model n times with profiling and sums each
// node's time: the runtime's own nodes (the fallback's, and a partition's
// call as one node where its backend reports nothing inside it) and the
// kernels backends report inside their calls (which replace the call's
// line).
func profileNodes(ctx context.Context, m *switchyard.Model, feeds switchyard.Tensors, n int) ([]nodeProfile, error) {
	type key struct{ node, op, where string }
	sum := map[key]time.Duration{}
	var total time.Duration
	for i := 0; i < n; i++ {
		_, st, err := m.RunWithStats(ctx, feeds, &switchyard.RunOptions{Profile: true})
		if err != nil {
			return nil, err
		}
		total += st.Duration
		inside := map[string]bool{} // calls whose kernels were reported
		for _, op := range st.DeviceOps {
			if op.Kind != "execute" || len(op.Kernels) == 0 {
				continue
			}
			inside[op.Name] = true
			for _, k := range op.Kernels {
				sum[key{strings.Join(k.Nodes, ","), k.Name, op.Name}] += k.Duration
			}
		}
		for _, nt := range st.Nodes {
			if nt.Depth > 0 || inside[nt.Node] {
				continue
			}
			where := "cpu"
			if nt.OpType == "Partition" {
				where = "call (no profile inside)"
			}
			sum[key{nt.Node, nt.OpType, where}] += nt.Duration
		}
	}
	out := make([]nodeProfile, 0, len(sum))
	for k, d := range sum {
		out = append(out, nodeProfile{Node: k.node, Op: k.op, Where: k.where, MeanMS: ms(d / time.Duration(n)), Percent: 100 * float64(d) / float64(max(total, 1))})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].MeanMS != out[j].MeanMS {
			return out[i].MeanMS > out[j].MeanMS
		}
		return out[i].Node < out[j].Node
	})
	return out, nil
}

// printProfile prints the profile's nodes by time, then the time per op
// type and place.
func printProfile(prof []nodeProfile, runs int) {
	if runs <= 0 {
		return
	}
	fmt.Printf("profile (%d run(s), mean per run):\n", runs)
	type opKey struct{ op, where string }
	byOp := map[opKey][2]float64{}
	for _, p := range prof {
		v := byOp[opKey{p.Op, p.Where}]
		byOp[opKey{p.Op, p.Where}] = [2]float64{v[0] + p.MeanMS, v[1] + 1}
	}
	ops := make([]opKey, 0, len(byOp))
	for k := range byOp {
		ops = append(ops, k)
	}
	sort.Slice(ops, func(i, j int) bool { return byOp[ops[i]][0] > byOp[ops[j]][0] })
	fmt.Println("  by op:")
	for _, k := range ops {
		fmt.Printf("    %-24s %-26s %8.3f ms  (%.0f node(s))\n", k.op, k.where, byOp[k][0], byOp[k][1])
	}
	fmt.Println("  top nodes:")
	for i, p := range prof {
		if i == 25 {
			fmt.Printf("    … %d more\n", len(prof)-i)
			break
		}
		fmt.Printf("    %8.3f ms %5.1f%%  %-20s %-26s %s\n", p.MeanMS, p.Percent, p.Op, p.Where, p.Node)
	}
}
