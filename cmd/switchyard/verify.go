package main

import (
	"encoding/json"
	"fmt"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"os"
	"runtime"
	"sync"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/internal/onnxtest"
)

func verifyCmd() *cobra.Command {
	opt := onnxtest.DefaultOptions()
	var asJSON bool
	var jobs int
	var bf backendFlags
	var mf memoryFlags
	cmd := &cobra.Command{
		Use:   "verify [--rtol R] [--atol A] [--json] DIR|FILE.bpte...",
		Short: "Run ONNX-test-layout directories (or ExecuTorch bundled programs) and compare with their expected outputs",
		Long: `Each DIR holds model.onnx and test_data_set_N/{input,output}_K.pb, or
model.tflite and test_data_set_N/{input,output}_K.npy (a REFUSED.txt beside
it, saying TFLite refuses the model, makes Switchyard's refusal a skip); an
ExecuTorch bundled program (.bpte) carries its own test cases.
Prints one line per DIR (ok NAME, FAIL NAME: reason, skip NAME: reason) and
finally "N passed, N failed, N skipped". Exit status 1 if any failed.
Floats match when |got-want| <= atol + rtol*|want|; NaN equals NaN;
integers, bools and strings must be equal.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			eng, err := bf.engine(cmd.Context(), &mf)
			if err != nil {
				return err
			}
			defer eng.Close()
			opt.Runtime = apiaccess.EngineRuntimeOptions(eng)
			results := make([]onnxtest.Result, len(dirs))
			done := make([]chan struct{}, len(dirs))
			for i := range done {
				done[i] = make(chan struct{})
			}
			if jobs < 1 {
				jobs = 1
			}
			sem := make(chan struct{}, jobs)
			var wg sync.WaitGroup
			go func() {
				for i, d := range dirs {
					sem <- struct{}{}
					wg.Add(1)
					go func(i int, d string) {
						defer wg.Done()
						defer func() { <-sem }()
						if isBundledFile(d) {
							results[i] = runBundled(cmd.Context(), d, opt)
						} else {
							results[i] = onnxtest.RunDir(cmd.Context(), d, opt)
						}
						close(done[i])
					}(i, d)
				}
			}()
			passed, failed, skipped := 0, 0, 0
			for i := range dirs {
				<-done[i]
				r := results[i]
				switch r.Status {
				case onnxtest.Pass:
					passed++
				case onnxtest.Fail:
					failed++
				default:
					skipped++
				}
				if !asJSON {
					if r.Status == onnxtest.Pass {
						fmt.Printf("ok %s\n", r.Name)
					} else {
						fmt.Printf("%s %s: %s\n", r.Status, r.Name, r.Reason)
					}
				}
			}
			wg.Wait()
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(map[string]any{"results": results, "passed": passed, "failed": failed, "skipped": skipped})
			}
			fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
			if failed > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().Float64Var(&opt.Rtol, "rtol", opt.Rtol, "relative tolerance")
	cmd.Flags().Float64Var(&opt.Atol, "atol", opt.Atol, "absolute tolerance")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print results as JSON (the summary line follows)")
	cmd.Flags().IntVar(&jobs, "jobs", runtime.GOMAXPROCS(0), "directories verified in parallel")
	cmd.Flags().DurationVar(&opt.Timeout, "timeout", opt.Timeout, "time limit per directory")
	bf.add(cmd)
	mf.add(cmd)
	return cmd
}
