package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/internal/regular"
)

// The machine's memory bandwidth, measured once (`switchyard bench
// --memory`) and cached, is what generate's roofline line compares a
// decode with: decoding a language model at batch 1 reads every weight
// once a token, so tokens/s × weight bytes can at most reach it.

// triadBytes is the size of each of the triad's three arrays: far larger
// than any cache.
const triadBytes = 64 << 20

// bandwidthCache is the cached measurement: GB/s by thread count, with
// the CPU it was measured on.
type bandwidthCache struct {
	CPU      string             `json:"cpu"`
	Measured map[string]float64 `json:"triad_gb_per_s"`
	When     map[string]string  `json:"measured_at"`
}

// bandwidthPath is the cache file, under the user's cache directory.
func bandwidthPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "switchyard", "memory-bandwidth.json"), nil
}

// cpuName is the CPU's model name (Linux), "" where unknown: a cache
// measured on another CPU (a copied home directory) is not used.
func cpuName() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return goruntime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return goruntime.GOARCH
}

func readBandwidthCache() *bandwidthCache {
	c := &bandwidthCache{CPU: cpuName(), Measured: map[string]float64{}, When: map[string]string{}}
	p, err := bandwidthPath()
	if err != nil {
		return c
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return c
	}
	var got bandwidthCache
	if json.Unmarshal(b, &got) != nil || got.CPU != c.CPU || got.Measured == nil {
		return c
	}
	if got.When == nil {
		got.When = map[string]string{}
	}
	return &got
}

// cachedBandwidth is the cached triad GB/s at a thread count (ok false:
// never measured here).
func cachedBandwidth(threads int) (float64, bool) {
	v, ok := readBandwidthCache().Measured[fmt.Sprint(threads)]
	return v, ok && v > 0
}

// triad measures STREAM's triad, a[i] = b[i] + s·c[i] over float64
// arrays of the given bytes each, split over threads goroutines, and returns
// the best of runs in GB/s (24 bytes an element: two read, one written,
// as STREAM counts).
func triad(threads, runs, bytes int) float64 {
	n := bytes / 8
	a, b, c := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range b {
		b[i], c[i] = 1, 2
	}
	best := time.Duration(1 << 62)
	for r := 0; r < runs; r++ {
		t0 := time.Now()
		var wg sync.WaitGroup
		for t := 0; t < threads; t++ {
			lo, hi := n*t/threads, n*(t+1)/threads
			wg.Add(1)
			go func() {
				defer wg.Done()
				triadRange(a[lo:hi], b[lo:hi], c[lo:hi], 3)
			}()
		}
		wg.Wait()
		best = min(best, time.Since(t0))
	}
	return float64(3*8*n) / best.Seconds() / 1e9
}

func triadRange(a, b, c []float64, s float64) {
	b, c = b[:len(a)], c[:len(a)]
	for i := range a {
		a[i] = b[i] + s*c[i]
	}
}

// runMemoryBench measures the triad at 1 thread and at GOMAXPROCS (and
// at threads, when given), prints the figures and caches them.
func runMemoryBench(cmd *cobra.Command, threads int) error {
	counts := []int{1}
	if p := goruntime.GOMAXPROCS(0); p > 1 {
		counts = append(counts, p)
	}
	if threads > 1 && threads != goruntime.GOMAXPROCS(0) {
		counts = append(counts, threads)
	}
	c := readBandwidthCache()
	for _, t := range counts {
		gbs := triad(t, 10, triadBytes)
		c.Measured[fmt.Sprint(t)] = gbs
		c.When[fmt.Sprint(t)] = time.Now().UTC().Format(time.RFC3339)
		fmt.Fprintf(cmd.OutOrStdout(), "memory bandwidth (STREAM triad, 3 × %d MiB float64, best of 10): %d thread(s): %.1f GB/s\n", triadBytes>>20, t, gbs)
	}
	p, err := bandwidthPath()
	if err != nil {
		return fmt.Errorf("no cache directory to keep the figures in: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "cached in %s (generate's roofline line compares decode with it; other programs running now lower it: measure on a quiet machine)\n", p)
	return nil
}

// weightBytesPerToken is the bytes of a GGUF decoder's weights that one
// decode step reads: every tensor, less the token embedding when the
// model has its own classifier (output.weight; then a step reads one row
// of the embedding). ok is false for a file that is not a GGUF.
func weightBytesPerToken(path string) (int64, bool) {
	if !isGGUF(path) {
		return 0, false
	}
	data, err := regular.Map(path, 0)
	if err != nil {
		return 0, false
	}
	defer regular.Unmap(data) // nothing kept: the sizes are copied out
	f, err := gguf.Parse(data)
	if err != nil {
		return 0, false
	}
	var total int64
	for _, t := range f.Tensors {
		total += int64(t.Size)
	}
	if _, ok := f.Tensor("output.weight"); ok {
		if e, ok := f.Tensor("token_embd.weight"); ok {
			total -= int64(e.Size)
		}
	}
	return total, total > 0
}

// printRoofline writes the roofline line: decode tokens/s, the weight
// bytes a token reads, the GB/s that makes and its share of the
// bandwidth measured by `bench --memory` at this thread count.
func printRoofline(cmd *cobra.Command, path string, tokensPerSecond float64, threads int) {
	wb, ok := weightBytesPerToken(path)
	if !ok || tokensPerSecond <= 0 {
		return
	}
	gbs := float64(wb) * tokensPerSecond / 1e9
	line := fmt.Sprintf("roofline: %.1f tokens/s × %.1f MB of weights a token = %.2f GB/s", tokensPerSecond, float64(wb)/1e6, gbs)
	if bw, ok := cachedBandwidth(threads); ok {
		line += fmt.Sprintf(", %.0f%% of this machine's %.1f GB/s (triad, %d thread(s))", 100*gbs/bw, bw, threads)
	} else {
		line += fmt.Sprintf(" (no bandwidth measured for %d thread(s): run `switchyard bench --memory`)", threads)
	}
	fmt.Fprintln(cmd.ErrOrStderr(), line)
}
