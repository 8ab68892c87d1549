package llm_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/formats/llama"
	"github.com/switchyard-hal/switchyard/llm"
)

// TestSequenceFeedTruncate: a Sequence fed the golden prompt picks the
// golden next token; cut back and fed again it gives the logits a fresh
// sequence gives — for a growing cache (the ONNX decoder) and a shared
// one (the llama2.c checkpoint's context-long buffers).
func TestSequenceFeedTruncate(t *testing.T) {
	g, dir := readGolden(t)
	ctx := context.Background()
	for _, file := range []string{"stories260K_kv.onnx", "stories260K.bin"} {
		t.Run(file, func(t *testing.T) {
			m, err := switchyard.Open(ctx, filepath.Join(dir, file), &switchyard.OpenOptions{Backends: []string{"cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			if d.SharedCache() != (file == "stories260K.bin") {
				t.Fatalf("shared cache %v", d.SharedCache())
			}
			argmax := func(l []float32) int {
				b := 0
				for i, x := range l {
					if x > l[b] {
						b = i
					}
				}
				return b
			}
			s, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			p := g.PromptTokens
			l, err := s.Feed(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			next := g.Tokens[len(p)-1]
			if len(l) != d.Vocab() || argmax(l) != next {
				t.Fatalf("after the prompt: %d logits, argmax %d, want %d", len(l), argmax(l), next)
			}
			// run on the golden tokens, then cut back to the prompt
			for _, id := range g.Tokens[len(p)-1 : len(p)+5] {
				if _, err := s.Feed(ctx, []int{id}); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != len(p)+6 || s.Bytes() <= 0 {
				t.Fatalf("Len %d, Bytes %d", s.Len(), s.Bytes())
			}
			if err := s.Truncate(s.Len() + 1); err == nil {
				t.Fatal("Truncate beyond the length accepted")
			}
			if err := s.Truncate(len(p)); err != nil {
				t.Fatal(err)
			}
			other := g.Tokens[len(p)+3] // not the golden next token
			cut, err := s.Feed(ctx, []int{other})
			if err != nil {
				t.Fatal(err)
			}
			f, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Feed(ctx, p); err != nil {
				t.Fatal(err)
			}
			fresh, err := f.Feed(ctx, []int{other})
			if err != nil {
				t.Fatal(err)
			}
			for i := range fresh {
				if math.Abs(float64(fresh[i]-cut[i])) > 1e-4 {
					t.Fatalf("logit %d: %v after Truncate, %v fresh", i, cut[i], fresh[i])
				}
			}
			if _, err := s.Feed(ctx, nil); err == nil {
				t.Fatal("Feed of no ids accepted")
			}
			s.Close()
			if _, err := s.Feed(ctx, []int{1}); err == nil {
				t.Fatal("Feed after Close accepted")
			}
		})
	}
}

// TestSequenceFork: a fork of a sequence's first positions continues as a
// fresh sequence fed those positions does, and the original is untouched
// — for a growing cache (the ONNX decoder) and a batched decoder's slot
// (in its slot and parked); a shared cache is refused.
func TestSequenceFork(t *testing.T) {
	g, dir := readGolden(t)
	ctx := context.Background()
	for _, c := range []struct {
		file, method string
	}{{"stories260K_kv.onnx", ""}, {"stories260K.bin", llama.BatchMethod}, {"stories260K.bin", ""}} {
		t.Run(c.file+"/"+c.method, func(t *testing.T) {
			m, err := switchyard.Open(ctx, filepath.Join(dir, c.file), &switchyard.OpenOptions{Backends: []string{"cpu"}, Method: c.method, ContextLength: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			d, err := llm.NewDecoder(m)
			if err != nil {
				t.Fatal(err)
			}
			p := g.PromptTokens
			feedAll := func(s *llm.Sequence, ids []int) []float32 {
				t.Helper()
				l, err := s.Feed(ctx, ids)
				if err != nil {
					t.Fatal(err)
				}
				return l
			}
			same := func(what string, a, b []float32) {
				t.Helper()
				for i := range a {
					if math.Abs(float64(a[i]-b[i])) > 1e-4 {
						t.Fatalf("%s: logit %d: %v, fresh %v", what, i, a[i], b[i])
					}
				}
			}
			s, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			run := append(append([]int(nil), p...), g.Tokens[len(p)-1:len(p)+5]...) // the prompt, 6 golden tokens
			feedAll(s, run)
			other := g.Tokens[len(p)+3]
			fr, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			feedAll(fr, p)
			fresh := feedAll(fr, []int{other})
			if d.SharedCache() && !d.Batched() {
				if _, err := s.Fork(len(p)); err == nil {
					t.Fatal("a shared cache forked")
				}
				return
			}
			for _, parked := range []bool{false, true} {
				if parked {
					s.Park()
				}
				f, err := s.Fork(len(p))
				if err != nil {
					t.Fatal(err)
				}
				if f.Len() != len(p) || s.Len() != len(p)+6 {
					t.Fatalf("fork of %d positions, the original %d", f.Len(), s.Len())
				}
				same("the fork", feedAll(f, []int{other}), fresh)
				_ = f.Close()
			}
			// the original goes on as before
			s2, err := d.NewSequence(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			feedAll(s2, run)
			same("the original", feedAll(s, []int{other}), feedAll(s2, []int{other}))
			if _, err := s.Fork(s.Len() + 1); err == nil {
				t.Fatal("Fork beyond the length accepted")
			}
		})
	}
}
