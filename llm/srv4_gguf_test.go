package llm_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/llm"
)

// srv4OpenBatched opens path's batched decoder on native and cpu
// (openBatchDecoder's, for a test).
func srv4OpenBatched(t testing.TB, path string) *llm.Decoder {
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSrv4BatchedGGUFSameTokens: on a quantized .gguf
// (SWITCHYARD_BATCH_BENCH_MODEL; skipped without it), four sequences
// decoded greedily together (each step one run of 4 rows: the few-row
// products) produce the tokens each produces alone (steps of one row),
// step for step.
func TestSrv4BatchedGGUFSameTokens(t *testing.T) {
	path := os.Getenv("SWITCHYARD_BATCH_BENCH_MODEL")
	if path == "" || testing.Short() {
		t.Skip("SWITCHYARD_BATCH_BENCH_MODEL (a .gguf) not set, or -short")
	}
	ctx := context.Background()
	d := srv4OpenBatched(t, path)
	prompts := [][]int{{1, 100}, {1, 2000, 30}, {1, 777}, {1, 9, 50000, 12}}
	const n = 12
	greedy := func(seqs []*llm.Sequence, first [][]float32) [][]int {
		out := make([][]int, len(seqs))
		ids := make([]int, len(seqs))
		for i, l := range first {
			ids[i] = argmaxOf(l)
		}
		for range n {
			for i := range seqs {
				out[i] = append(out[i], ids[i])
			}
			ls, err := d.FeedBatch(ctx, seqs, ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range ls {
				ids[i] = argmaxOf(l)
			}
		}
		return out
	}
	start := func() ([]*llm.Sequence, [][]float32) {
		seqs := make([]*llm.Sequence, len(prompts))
		first := make([][]float32, len(prompts))
		for i, p := range prompts {
			s, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			l, err := s.Feed(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			seqs[i], first[i] = s, slices.Clone(l)
		}
		return seqs, first
	}
	seqs, first := start()
	together := greedy(seqs, first)
	seqs, first = start()
	for i := range seqs {
		alone := greedy(seqs[i:i+1], first[i:i+1])[0]
		if !slices.Equal(alone, together[i]) {
			t.Errorf("sequence %d: together %v, alone %v", i, together[i], alone)
		}
	}
}
