package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
)

type outputReport struct {
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int   `json:"shape"`
	Values []any   `json:"first_values"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	NaN    int     `json:"nan_count"`
	Inf    int     `json:"inf_count"`
	File   string  `json:"file,omitempty"`
}

func runCmd() *cobra.Command {
	var inputs []string
	var outDir string
	var asJSON bool
	var seed uint64
	var dimFlags []string
	var traceOut string
	var bf backendFlags
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "run [MODEL] [--input NAME=FILE]... [--output-dir DIR] [--json]",
		Short: "Run a model (or the built-in demo) and print its outputs",
		Long: `Runs MODEL (an .onnx file, or a directory in the ONNX test layout whose
test_data_set_0 inputs are used) — or, with no MODEL, the built-in demo
model. Inputs come from --input NAME=FILE (.npy or TensorProto .pb); any
other input gets seeded random values (symbolic dims: --dim NAME=SIZE,
default 1; 0 is honoured, e.g. an empty KV cache). Prints each output's
name, dtype, shape, first values and stats; --output-dir writes each output
as NAME.npy. --memory-budget bounds the memory the run's buffers may hold
(default: 3/4 of what is available); a run that needs more fails naming
the node.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			t0 := time.Now()
			eng, err := bf.engine(ctx, &mf)
			if err != nil {
				return err
			}
			defer eng.Close()
			m, feeds, name, err := loadModel(ctx, eng, path)
			if err != nil {
				return err
			}
			loadTime := time.Since(t0)
			dims, err := parseDims(dimFlags)
			if err != nil {
				return err
			}
			feeds, err = completeInputs(m, feeds, inputs, dims, seed)
			if err != nil {
				return err
			}
			t1 := time.Now()
			outs, st, err := m.RunWithStats(ctx, feeds, &switchyard.RunOptions{Profile: traceOut != ""})
			if err != nil {
				return err
			}
			runTime := time.Since(t1)
			if traceOut != "" {
				f, err := os.Create(traceOut)
				if err != nil {
					return err
				}
				werr := m.WriteTrace(f, st)
				if cerr := f.Close(); werr == nil {
					werr = cerr
				}
				if werr != nil {
					return werr
				}
			}
			var reports []outputReport
			for _, o := range m.Outputs() {
				t := outs[o.Name]
				s := statsOf(t)
				r := outputReport{Name: o.Name, DType: t.DType().String(), Shape: t.Shape(), Values: firstValues(t, 8), Min: s.Min, Max: s.Max, Mean: s.Mean, NaN: s.NaN, Inf: s.Inf}
				if outDir != "" {
					if err := os.MkdirAll(outDir, 0o755); err != nil {
						return err
					}
					r.File = filepath.Join(outDir, safeName(o.Name)+".npy")
					f, err := os.Create(r.File)
					if err != nil {
						return err
					}
					werr := tensorio.EncodeNPY(f, graphTensor(t))
					if cerr := f.Close(); werr == nil {
						werr = cerr
					}
					if werr != nil {
						return fmt.Errorf("writing %s: %w", r.File, werr)
					}
				}
				reports = append(reports, r)
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"model": name, "load_ms": ms(loadTime), "run_ms": ms(runTime), "outputs": reports,
					"transfers": map[string]any{"uploads": st.Uploads, "upload_bytes": st.UploadBytes, "downloads": st.Downloads, "download_bytes": st.DownloadBytes, "declined_calls": st.Declined, "reruns": st.Reruns}})
			}
			fmt.Printf("model %s: loaded in %.2f ms, ran in %.3f ms\n", name, ms(loadTime), ms(runTime))
			if path == "" {
				// the demo shows the product: where every node ran and
				// why, then what it computed
				fmt.Printf("\nwhere it ran (switchyard explain MODEL prints this for any model):\n%s\n", m.Plan().Text())
				defer fmt.Println("\nnext: switchyard run MODEL.onnx|.tflite|.pte|.gguf, switchyard explain MODEL --html plan.html, switchyard bench MODEL, switchyard backends")
			}
			if st.Uploads+st.Downloads > 0 {
				fmt.Printf("transfers: %d upload(s) %d B, %d download(s) %d B\n", st.Uploads, st.UploadBytes, st.Downloads, st.DownloadBytes)
			}
			if st.Declined > 0 || st.Reruns > 0 {
				fmt.Printf("declined partition calls: %d, reruns after a lost device: %d (see explain)\n", st.Declined, st.Reruns)
			}
			for _, r := range reports {
				fmt.Printf("%s: %s%v %v\n", r.Name, r.DType, r.Shape, r.Values)
				fmt.Printf("  min %.6g max %.6g mean %.6g", r.Min, r.Max, r.Mean)
				if r.NaN+r.Inf > 0 {
					fmt.Printf(" nan %d inf %d", r.NaN, r.Inf)
				}
				if r.File != "" {
					fmt.Printf(" → %s", r.File)
				}
				fmt.Println()
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&inputs, "input", nil, "NAME=FILE input (.npy or .pb), or FILE to bind the next input in order; repeatable")
	cmd.Flags().StringVar(&outDir, "output-dir", "", "write each output to DIR/NAME.npy")
	cmd.Flags().StringVar(&traceOut, "trace", "", "profile the run and write a Chrome trace (JSON) to FILE: per-node timings on the cpu track, and per device a track of its uploads, executions and downloads")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed for random inputs")
	cmd.Flags().StringArrayVar(&dimFlags, "dim", nil, "NAME=SIZE (0 allowed) for a symbolic dimension of random inputs; repeatable")
	bf.add(cmd)
	mf.add(cmd)
	return cmd
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

func parseDims(flags []string) (map[string]int, error) {
	dims := map[string]int{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || k == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("--dim %q: want NAME=SIZE with SIZE ≥ 0", f)
		}
		dims[k] = n
	}
	return dims, nil
}
