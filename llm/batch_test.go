package llm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	_ "github.com/switchyard-hal/switchyard/plugins/native"
)

func argmaxOf(l []float32) int {
	b := 0
	for i, x := range l {
		if x > l[b] {
			b = i
		}
	}
	return b
}

// openBatched opens stories260K.bin in its batched form on cpu.
func openBatched(t *testing.T, dir string) *llm.Decoder {
	t.Helper()
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	m, err := eng.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 128})
	if err != nil {
		t.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Batched() || !d.SharedCache() {
		t.Fatalf("Batched %v, SharedCache %v", d.Batched(), d.SharedCache())
	}
	return d
}

// greedyAlone is prompt's greedy continuation of n tokens, one sequence alone.
func greedyAlone(t *testing.T, d *llm.Decoder, prompt []int, n int) []int {
	t.Helper()
	ctx := context.Background()
	s, err := d.NewSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Feed(ctx, prompt)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for len(out) < n {
		id := argmaxOf(l)
		out = append(out, id)
		if l, err = s.Feed(ctx, []int{id}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestBatchedDecoderGolden: the batched form of stories260K generates the
// golden continuation alone (Generate), and four sequences decoded
// together — joining at different steps, one leaving early, one parked
// and resumed, so that they change slots — each produce exactly the
// tokens they produce alone on the single-sequence graph.
func TestBatchedDecoderGolden(t *testing.T) {
	g, dir := readGolden(t)
	ctx := context.Background()
	d := openBatched(t, dir)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Generate(ctx, tok, g.Prompt, llm.Options{Steps: g.Steps}, func(llm.Token) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, g.Tokens) {
		t.Fatalf("batched Generate: %v\nwant %v", res.Tokens, g.Tokens)
	}

	m1, err := switchyard.Open(ctx, filepath.Join(dir, "stories260K.bin"), &switchyard.OpenOptions{Backends: []string{"cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	single, err := llm.NewDecoder(m1)
	if err != nil {
		t.Fatal(err)
	}
	prompts := [][]int{g.PromptTokens, {1, 403}, {1, 403, 407, 261, 378, 432, 383, 286}, {1, 260, 300, 310}}
	const n = 40
	want := make([][]int, len(prompts))
	for i, p := range prompts {
		want[i] = greedyAlone(t, single, p, n)
	}
	if !slices.Equal(want[0], g.Tokens[len(g.PromptTokens)-1:][:n]) {
		t.Fatalf("single-sequence reference %v is not the golden one", want[0])
	}
	type stream struct {
		seq  *llm.Sequence
		got  []int
		last []float32
		join int // the step it joins at
		stop int // the step it leaves at (0: runs to the end)
		park int // a step it sits out, parked
	}
	ss := []*stream{{join: 0}, {join: 3, stop: 25}, {join: 5, park: 12}, {join: 9}}
	widest := 0
	for step := 0; ; step++ {
		var seqs []*llm.Sequence
		var ids []int
		var who []*stream
		active := false
		for i, s := range ss {
			if step == s.join {
				if s.seq, err = d.NewSequence(ctx); err != nil {
					t.Fatal(err)
				}
				if s.last, err = s.seq.Feed(ctx, prompts[i]); err != nil {
					t.Fatal(err)
				}
			}
			if s.seq == nil || len(s.got) == n || s.stop > 0 && step >= s.stop {
				continue
			}
			active = true
			if step == s.park {
				s.seq.Park()
				continue
			}
			id := argmaxOf(s.last)
			s.got = append(s.got, id)
			seqs, ids, who = append(seqs, s.seq), append(ids, id), append(who, s)
		}
		if !active && step > 10 {
			break
		}
		if len(seqs) == 0 {
			continue
		}
		widest = max(widest, len(seqs))
		ls, err := d.FeedBatch(ctx, seqs, ids)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for j, s := range who {
			s.last = ls[j]
		}
	}
	if widest != len(ss) {
		t.Fatalf("at most %d sequences stepped together", widest)
	}
	for i, s := range ss {
		w := want[i]
		if s.stop > 0 {
			w = w[:len(s.got)]
		}
		if len(s.got) == 0 || !slices.Equal(s.got, w) {
			t.Errorf("stream %d batched: %v\nalone: %v", i, s.got, w)
		}
		_ = s.seq.Close()
	}
}

// BenchmarkFeedBatch: one decode step of B sequences in one run of a
// batched decoder (SWITCHYARD_BATCH_BENCH_MODEL, a .gguf; default
// stories260K.bin), on native and cpu, for B = 1, 2, 3, 4; tokens/s is B
// over the step's time.
func BenchmarkFeedBatch(b *testing.B) {
	ctx := context.Background()
	path := os.Getenv("SWITCHYARD_BATCH_BENCH_MODEL")
	if path == "" {
		path = filepath.Join(shared.Path(b, "testdata/llm/stories260K"), "stories260K.bin")
	}
	d := openBatchDecoder(b, path)
	var err error
	for _, B := range []int{1, 2, 3, 4} {
		b.Run(fmt.Sprintf("B=%d", B), func(b *testing.B) {
			seqs := make([]*llm.Sequence, B)
			ids := make([]int, B)
			for i := range seqs {
				if seqs[i], err = d.NewSequence(ctx); err != nil {
					b.Fatal(err)
				}
				defer seqs[i].Close()
				if _, err := seqs[i].Feed(ctx, []int{1, 100 + i}); err != nil {
					b.Fatal(err)
				}
				ids[i] = 7 + i
			}
			b.ResetTimer()
			c0 := cpuTime()
			for k := range b.N {
				if k > 0 && k%200 == 0 {
					for _, s := range seqs {
						if err := s.Truncate(2); err != nil {
							b.Fatal(err)
						}
					}
				}
				if _, err := d.FeedBatch(ctx, seqs, ids); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(B*b.N)/b.Elapsed().Seconds(), "tokens/s")
			// the process's CPU time a step: what a step of B costs,
			// which a loaded machine's other work does not stretch
			b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/step")
		})
	}
}

// TestFeedChunksPrefillTogether: prompt chunks of three sequences
// prefilled in one batched run (FeedChunks), one of them holding cached
// positions already, give each sequence the greedy continuation it has
// alone; chunks of different lengths are refused and leave the sequences
// usable.
func TestFeedChunksPrefillTogether(t *testing.T) {
	_, dir := readGolden(t)
	ctx := context.Background()
	d := openBatched(t, dir)
	prompts := [][]int{
		{1, 403, 407, 261, 378},
		{1, 68, 338, 366, 302},
		{1, 437, 260, 297, 261},
	}
	const n = 12
	want := make([][]int, len(prompts))
	for i, p := range prompts {
		want[i] = greedyAlone(t, d, p, n)
	}
	seqs := make([]*llm.Sequence, len(prompts))
	for i := range seqs {
		s, err := d.NewSequence(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		seqs[i] = s
	}
	// the third has its first two positions already (another slot's worth
	// of history): its chunk is at positions 2.., the others' at 0..
	if _, err := seqs[2].Feed(ctx, prompts[2][:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := d.FeedChunks(ctx, seqs, [][]int{prompts[0][:3], prompts[1][:3], prompts[2][2:4]}); err == nil {
		t.Fatal("chunks of different lengths were taken")
	}
	if _, err := d.FeedChunks(ctx, seqs[:2], [][]int{prompts[0][:2], prompts[1][:2]}); err != nil {
		t.Fatal(err)
	}
	ls, err := d.FeedChunks(ctx, seqs, [][]int{prompts[0][2:], prompts[1][2:], prompts[2][2:]})
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]int, len(seqs))
	ids := make([]int, len(seqs))
	for len(got[0]) < n {
		for i, l := range ls {
			ids[i] = argmaxOf(l)
			got[i] = append(got[i], ids[i])
		}
		if ls, err = d.FeedBatch(ctx, seqs, ids); err != nil {
			t.Fatal(err)
		}
	}
	// FeedChunksInto writes what FeedChunks returns into the caller's
	// buffers (forks of the sequences stepped the same)
	forks := make([]*llm.Sequence, len(seqs))
	dst := make([][]float32, len(seqs))
	for i, s := range seqs {
		if forks[i], err = s.Fork(s.Len()); err != nil {
			t.Fatal(err)
		}
		defer forks[i].Close()
		dst[i] = make([]float32, d.Vocab())
	}
	chunks := [][]int{{ids[0], 9}, {ids[1], 9}, {ids[2], 9}}
	if err := d.FeedChunksInto(ctx, forks, chunks, dst[:2]); err == nil {
		t.Fatal("FeedChunksInto with too few buffers")
	}
	ref, err := d.FeedChunks(ctx, seqs, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.FeedChunksInto(ctx, forks, chunks, dst); err != nil {
		t.Fatal(err)
	}
	for i := range seqs {
		if !slices.Equal(ref[i], dst[i]) {
			t.Errorf("sequence %d: FeedChunksInto's logits differ from FeedChunks'", i)
		}
		if err := seqs[i].Truncate(seqs[i].Len() - 2); err != nil {
			t.Fatal(err)
		}
	}
	for i := range seqs {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("sequence %d prefilled together: %v\nalone: %v", i, got[i], want[i])
		}
		if seqs[i].Len() != len(prompts[i])+n {
			t.Errorf("sequence %d holds %d positions, want %d", i, seqs[i].Len(), len(prompts[i])+n)
		}
	}
}

// TestFeedChunksArena: FeedChunksArena gives each sequence the logits
// FeedChunks gives it, bit for bit, as pieces of the caller's arena, for
// prompt chunks and decode steps, the
// sequences passed in an order other than their slots'; a short arena is
// refused.
func TestFeedChunksArena(t *testing.T) {
	_, dir := readGolden(t)
	ctx := context.Background()
	d := openBatched(t, dir)
	v := d.Vocab()
	open := func() []*llm.Sequence {
		seqs := make([]*llm.Sequence, 3)
		for i := range seqs {
			s, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			seqs[i] = s
		}
		return seqs
	}
	a, b := open(), open()
	arena := make([]float32, 3*v)
	if _, err := d.FeedChunksArena(ctx, a, [][]int{{1}, {1}, {1}}, arena[:3*v-1]); err == nil {
		t.Fatal("a short arena was taken")
	}
	chunks := [][]int{{1, 403, 407}, {1, 68, 338}, {1, 437, 260}}
	for step := range 6 {
		if step == 3 {
			// the sequences in another order than their slots'
			a[0], a[2] = a[2], a[0]
			b[0], b[2] = b[2], b[0]
			chunks[0], chunks[2] = chunks[2], chunks[0]
		}
		got, err := d.FeedChunksArena(ctx, a, chunks, arena)
		if err != nil {
			t.Fatal(err)
		}
		want, err := d.FeedChunks(ctx, b, chunks)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if len(got[i]) != v || !slices.Equal(got[i], want[i]) {
				t.Fatalf("step %d, sequence %d: logits differ from FeedChunks'", step, i)
			}
			if p := &got[i][0]; uintptr(unsafe.Pointer(p)) < uintptr(unsafe.Pointer(&arena[0])) || uintptr(unsafe.Pointer(p)) > uintptr(unsafe.Pointer(&arena[2*v])) {
				t.Fatalf("step %d, sequence %d: logits not in the arena", step, i)
			}
		}
		for i := range chunks {
			chunks[i] = []int{argmaxOf(want[i])}
		}
	}
}

// openBatchDecoder opens path on native and cpu with the batched method
// (context 256) for a benchmark; the engine closes when b ends.
func openBatchDecoder(b *testing.B, path string) *llm.Decoder {
	ctx := context.Background()
	eng, err := switchyard.NewEngine(ctx, &switchyard.OpenOptions{Backends: []string{"native", "cpu"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	m, err := eng.Open(ctx, path, &switchyard.OpenOptions{Method: llama.BatchMethod, ContextLength: 256})
	if err != nil {
		b.Fatal(err)
	}
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	return d
}
