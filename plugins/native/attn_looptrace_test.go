package native

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/llm"
)

// TestAttnDecodeAB (a measurement tool, skipped without ATTN_MODEL, a
// .gguf): a single sequence's decode steps at 2 threads (ATTN_THREADS)
// with a context of ATTN_CTX positions (default 128: a float32 KV cache
// for Qwen2.5-0.5B, as `generate --steps 128` keeps it), alternating step
// by step the float32 attention's split and untransposed values
// (attn_split.go: new) with run's serial, transposed path (old), in
// several rounds of fresh sequences: each one's median and least µs a
// step.
//
//	ATTN_MODEL=/work/tmp/qwen2-Q4_0.gguf go test ./plugins/native -run TestAttnDecodeAB -v
func TestAttnDecodeAB(t *testing.T) {
	path := os.Getenv("ATTN_MODEL")
	if path == "" {
		t.Skip("ATTN_MODEL not set")
	}
	ctxLen, threads := 128, 2
	if v, err := strconv.Atoi(os.Getenv("ATTN_CTX")); err == nil {
		ctxLen = v
	}
	if v, err := strconv.Atoi(os.Getenv("ATTN_THREADS")); err == nil {
		threads = v
	}
	ctx := context.Background()
	m, err := switchyard.Open(ctx, path, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}, Threads: threads, ContextLength: ctxLen})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	defer func(s, r bool) { attnSplitF32On, attnF32Rows = s, r }(attnSplitF32On, attnF32Rows)
	rows := attnF32Rows
	var ts [2][]float64 // new, old
	for round := 0; round < 4; round++ {
		s, err := d.NewSequence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Feed(ctx, []int{1, 2, 3, 4, 5}); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < ctxLen-8; i++ {
			v := (i + round) % 2
			attnSplitF32On, attnF32Rows = v == 0, v == 0 && rows
			t0 := time.Now()
			if _, err := s.Feed(ctx, []int{7 + i%50}); err != nil {
				t.Fatal(err)
			}
			if i >= 4 {
				ts[v] = append(ts[v], float64(time.Since(t0).Nanoseconds())/1e3)
			}
		}
		s.Close()
	}
	med := func(x []float64) float64 {
		s := slices.Clone(x)
		slices.Sort(s)
		return s[len(s)/2]
	}
	fmt.Printf("context %d, %d threads: new median %.0f µs (least %.0f), old median %.0f µs (least %.0f), %d steps each\n",
		ctxLen, threads, med(ts[0]), slices.Min(ts[0]), med(ts[1]), slices.Min(ts[1]), len(ts[0]))
}
