package main

import (
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
)

func benchCmd() *cobra.Command {
	var runs, warmup int
	var asJSON, memory bool
	var seed uint64
	var bf backendFlags
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "bench MODEL [--runs N] [--warmup W] [--json] | bench --memory",
		Short: "Measure a model's latency (min/median/max) and allocations per run (RunInto, into the outputs of a first run)",
		Long: `MODEL is an .onnx file or a directory in the ONNX test layout (its
test_data_set_0 inputs are used; other inputs get seeded random values).
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
			feeds, err = completeInputs(m, feeds, nil, nil, seed)
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
			for i := range lat {
				t0 := time.Now()
				if err := m.RunInto(ctx, feeds, outs); err != nil {
					return err
				}
				lat[i] = time.Since(t0)
			}
			goruntime.ReadMemStats(&ms1)
			// one more run for its transfer account (not timed)
			_, st, err := m.RunWithStats(ctx, feeds, false)
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
			if asJSON {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
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
