package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

func init() { extraCommands = append(extraCommands, conformanceCmd) }

func conformanceCmd() *cobra.Command {
	var (
		backend, reportDir, shardFlag, filter, profile, gapsFile, binary, sharedDir, level, sources string
		timeout                                                                                     time.Duration
		noProgress                                                                                  bool
	)
	cmd := &cobra.Command{
		Use:   "conformance --backend NAME [--report DIR] [--shard I/N] [--filter REGEX] [--timeout D]",
		Short: "Run the conformance suite against a backend and write certification reports",
		Long: `Runs every conformance case (generated per op, HAL contract, models, ONNX
node tests) through the runtime on backend NAME and compares with the cpu
reference kernels. With --report DIR it writes conformance.json (sealed,
versioned schema), junit.xml and conformance.html. --shard I/N runs one
deterministic slice; 'switchyard conformance merge' joins the slices into
the report of the full run. A case that crashes or hangs the backend fails
and the run goes on. Exit status 1 when a case failed or a gap entry is
stale, 2 for usage errors.

Reproduce one case by its ID: --filter '^op/Add/float32/bcast-row$'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if backend == "" {
				return fmt.Errorf("--backend is required (see 'switchyard backends')")
			}
			h := conformance.Harness{Profile: profile, Binary: binary}
			h.Level = conformance.Level(level)
			h.Timeout = timeout
			if shardFlag != "" {
				sh, err := conformance.ParseShard(shardFlag)
				if err != nil {
					return err
				}
				h.Shard = sh
			}
			if filter != "" {
				re, err := regexp.Compile(filter)
				if err != nil {
					return fmt.Errorf("--filter: %w", err)
				}
				h.Filter = re
			}
			if sources != "" {
				for _, s := range strings.Split(sources, ",") {
					h.Sources = append(h.Sources, conformance.Source(strings.TrimSpace(s)))
				}
			}
			if gapsFile != "" {
				b, err := os.ReadFile(gapsFile)
				if err != nil {
					return err
				}
				g, err := conformance.ParseGaps(b)
				if err != nil {
					return err
				}
				h.Gaps = g
			}
			h.SharedRoot = sharedDir
			if h.SharedRoot == "" {
				h.SharedRoot = shared.Root()
			}
			r := registry()
			h.Open = func(ctx context.Context) (*hal.Device, error) { return r.Open(ctx, backend) }
			if !noProgress && isTerminal(os.Stderr) {
				h.Progress = progressBar(os.Stderr)
			}
			rep, err := conformance.Execute(context.Background(), h)
			if h.Progress != nil {
				fmt.Fprint(os.Stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			fmt.Print(rep.Summary())
			for _, res := range rep.Results {
				if res.Status == conformance.Fail || res.Status == conformance.UnexpectedPass {
					fmt.Printf("%s %s: %s\n", strings.ToUpper(string(res.Status)), res.ID, firstLineOf(res.Message))
				}
			}
			if reportDir != "" {
				paths, err := rep.WriteFiles(reportDir)
				if err != nil {
					return err
				}
				fmt.Printf("reports: %s\n", strings.Join(paths, " "))
			}
			if !rep.Certification.Passed {
				return exitError{1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&backend, "backend", "", "backend to test (a registry name)")
	f.StringVar(&reportDir, "report", "", "write conformance.json, junit.xml and conformance.html to this directory")
	f.StringVar(&shardFlag, "shard", "", "run shard I of N (I/N, 0-based)")
	f.StringVar(&filter, "filter", "", "run only cases whose ID matches this regexp")
	f.DurationVar(&timeout, "timeout", time.Minute, "per-case timeout; a case still running after it (plus a grace period) fails as hung")
	f.StringVar(&profile, "profile", "", "relaxed tolerance profile the backend opts into (disclosed in the report)")
	f.StringVar(&gapsFile, "gaps", "", "gap declaration JSON (default: the suite's gaps/<backend>.json, if any)")
	f.StringVar(&binary, "binary", "", "plugin binary or library to checksum (default: this executable for linked backends)")
	f.StringVar(&sharedDir, "shared", "", "directory holding testdata/models and testdata/onnx-node (default: ../shared beside the checkout)")
	f.StringVar(&level, "level", string(conformance.Full), "case set: quick or full")
	f.StringVar(&sources, "sources", "", "comma-separated sources to run: op, contract, model, onnx-node (default all)")
	f.BoolVar(&noProgress, "no-progress", false, "no progress bar even on a terminal")
	cmd.AddCommand(conformanceMergeCmd(), conformanceVerifyCmd())
	return cmd
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func progressBar(w io.Writer) func(done, total int, r *conformance.Result) {
	failed := 0
	last := time.Time{}
	return func(done, total int, r *conformance.Result) {
		if r.Status == conformance.Fail || r.Status == conformance.UnexpectedPass {
			failed++
		}
		if time.Since(last) < 50*time.Millisecond && done < total {
			return
		}
		last = time.Now()
		const width = 30
		n := width * done / max(total, 1)
		id := r.ID
		if len(id) > 40 {
			id = id[:40]
		}
		fmt.Fprintf(w, "\r\033[K[%s%s] %d/%d %d failed  %s", strings.Repeat("#", n), strings.Repeat(".", width-n), done, total, failed, id)
	}
}

// reportPath accepts a report file or a directory holding conformance.json.
func reportPath(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return filepath.Join(p, conformance.JSONFile)
	}
	return p
}

func conformanceMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge --report DIR SHARD...",
		Short: "Merge the reports of the shards of one run into the full run's report",
		Long:  "Each SHARD is a conformance.json (or a directory holding one). Every input's seal is verified; they must come from the same backend, binary, suite, case set and tolerance profile, with distinct shards.",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var reps []*conformance.Report
			for _, a := range args {
				b, err := os.ReadFile(reportPath(a))
				if err != nil {
					return err
				}
				r, err := conformance.Verify(b)
				if err != nil {
					return fmt.Errorf("%s: %w", a, err)
				}
				reps = append(reps, r)
			}
			m, err := conformance.Merge(reps)
			if err != nil {
				return err
			}
			fmt.Print(m.Summary())
			if !m.Certification.Complete {
				fmt.Printf("incomplete: %d of %d cases (shards %v)\n", len(m.Results), m.Certification.CaseSetSize, m.Certification.Shards)
			}
			if out != "" {
				paths, err := m.WriteFiles(out)
				if err != nil {
					return err
				}
				fmt.Printf("reports: %s\n", strings.Join(paths, " "))
			}
			if !m.Certification.Passed {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "report", "", "write the merged conformance.json, junit.xml and conformance.html here")
	return cmd
}

func conformanceVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify-report FILE",
		Short: "Check that a conformance report was not edited after it was sealed",
		Long:  "Exit status 0 when the seal matches (the summary is printed), 1 when the report was edited or is not a report. Reports sealed with a lab key need " + conformance.KeyEnv + ".",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(reportPath(args[0]))
			if err != nil {
				return err
			}
			r, err := conformance.Verify(b)
			if err != nil {
				fmt.Fprintln(os.Stderr, "switchyard:", err)
				return exitError{1}
			}
			fmt.Printf("seal ok (%s %s)\n", r.Seal.Algorithm, r.Seal.Digest)
			fmt.Print(r.Summary())
			return nil
		},
	}
}
