package llm_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
	_ "github.com/switchyard-hal/switchyard/plugins/native" // the benchmark's default backend
)

// repetitivePrompt is text a greedy continuation copies from: the
// stories model goes on repeating the sentence.
var repetitivePrompt = strings.Repeat("Lily saw a big red ball in the park. ", 4)

// TestPromptLookupIsGreedy: prompt-lookup speculation gives the plain
// greedy tokens exactly — on the golden prompt (little to copy) and on a
// repetitive one (most of the output drafted) — for several draft
// lengths and n-gram bounds, switching itself off or not; on the
// repetitive prompt drafts are accepted (measured: 36–60% of the drafted
// tokens) and the run takes at most three steps for four tokens
// (measured: about one for two); with the default settings (drafting
// where the shadow drafts say it pays) it drafts there too. From ids too
// (no tokenizer, no early stop), and on the ONNX export's growing cache
// (trimmed by copying).
func TestPromptLookupIsGreedy(t *testing.T) {
	g, dir := readGolden(t)
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		t.Fatal(err)
	}
	d := decoder(t, filepath.Join(dir, "stories260K.bin"))
	ctx := context.Background()
	none := func(llm.Token) error { return nil }
	// a growing (ONNX past/present) cache is trimmed by copying
	onnx := decoder(t, filepath.Join(dir, "stories260K_kv.onnx"))
	plain, err := onnx.Generate(ctx, tok, repetitivePrompt, llm.Options{Steps: 160}, none)
	if err != nil {
		t.Fatal(err)
	}
	res, err := onnx.PromptLookup(ctx, tok, repetitivePrompt, llm.Options{Steps: 160}, llm.Lookup{Always: true}, none)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, plain.Tokens) || res.Accepted == 0 || res.Accepted == res.Proposed {
		t.Fatalf("ONNX cache: lookup %v (%d of %d accepted)\nplain %v", res.Tokens, res.Accepted, res.Proposed, plain.Tokens)
	}
	for _, prompt := range []string{g.Prompt, repetitivePrompt} {
		plain, err := d.Generate(ctx, tok, prompt, llm.Options{Steps: 200}, none)
		if err != nil {
			t.Fatal(err)
		}
		for _, lk := range []llm.Lookup{{}, {Always: true}, {Draft: 1, Always: true}, {Draft: 5, MinNgram: 1, MaxNgram: 4, Always: true}, {Draft: 16}} {
			var streamed []int
			res, err := d.PromptLookup(ctx, tok, prompt, llm.Options{Steps: 200}, lk, func(tk llm.Token) error {
				streamed = append(streamed, tk.ID)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Tokens, plain.Tokens) || !slices.Equal(streamed, plain.Tokens) {
				t.Fatalf("%q %+v: lookup\n%v\nplain greedy\n%v", prompt[:min(20, len(prompt))], lk, res.Tokens, plain.Tokens)
			}
			if res.Generated != plain.Generated || res.Accepted > res.Proposed || res.Rounds+res.Accepted != res.Generated {
				t.Errorf("%+v: %d generated (plain %d), %d rounds, %d of %d accepted", lk, res.Generated, plain.Generated, res.Rounds, res.Accepted, res.Proposed)
			}
			t.Logf("%q %+v: %d tokens in %d steps (%d plain), %d of %d drafted accepted (%.2f), off %d×",
				prompt[:min(20, len(prompt))], lk, res.Generated, res.Rounds, res.PlainRounds, res.Accepted, res.Proposed, res.AcceptanceRate(), res.SwitchedOff)
			if prompt == repetitivePrompt && lk.Always && lk.Draft != 1 && (res.AcceptanceRate() < 0.3 || res.Rounds*4 > res.Generated*3) {
				t.Errorf("repetitive prompt %+v: acceptance %.2f, %d steps for %d tokens", lk, res.AcceptanceRate(), res.Rounds, res.Generated)
			}
			if prompt == repetitivePrompt && lk == (llm.Lookup{}) && res.Proposed == 0 {
				t.Errorf("repetitive prompt, default settings: nothing drafted (%d matches declined)", res.Declined)
			}
		}
	}
	ids := append([]int(nil), g.PromptTokens...)
	plain, err = d.GenerateIDs(ctx, ids, llm.Options{Steps: 64}, nil, none)
	if err != nil {
		t.Fatal(err)
	}
	res, err = d.PromptLookupIDs(ctx, ids, llm.Options{Steps: 64}, llm.Lookup{Always: true}, none)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Tokens, plain.Tokens) {
		t.Fatalf("from ids: lookup %v, plain %v", res.Tokens, plain.Tokens)
	}
	// refused: sampling, bad bounds
	if _, err := d.PromptLookup(ctx, tok, g.Prompt, llm.Options{Steps: 8, Temperature: 1}, llm.Lookup{}, none); err == nil {
		t.Error("sampling accepted")
	}
	for _, lk := range []llm.Lookup{{Draft: 65}, {MinNgram: 3, MaxNgram: 2}, {MaxNgram: 5}, {Draft: -1}} {
		if _, err := d.PromptLookup(ctx, tok, g.Prompt, llm.Options{Steps: 8}, lk, none); err == nil {
			t.Errorf("%+v accepted", lk)
		}
	}
}

// BenchmarkPromptLookup: stories260K (float32, on native,cpu or
// SWITCHYARD_BENCH_BACKENDS; SWITCHYARD_BENCH_LOOKUP_MODEL names another
// model file, such as a full-size GGUF), 256 positions, plain greedy
// decoding against prompt-lookup speculation (default settings: it drafts
// only where it expects to gain) on a repetitive prompt and on the
// golden, non-repetitive one, alternating the two within each iteration;
// reports both decode rates, the median over the pairs of lookup's time
// per token over plain decoding's (wall time, and the process's CPU time:
// steadier on a shared machine), the acceptance rate, and what share of
// the plain output a one-token lookup draft would have given (repeats:
// whether the prompt's continuation repeats at all on this model; a
// random-weight model's often does not, or does on every prompt). Each
// generation starts after a garbage collection (the previous one's
// cache is garbage), so neither pays for the other's.
func BenchmarkPromptLookup(b *testing.B) {
	d, t := lookupBenchDecoder(b)
	ctx := context.Background()
	var err error
	none := func(llm.Token) error { return nil }
	o := llm.Options{Steps: 256}
	if s := os.Getenv("SWITCHYARD_BENCH_LOOKUP_STEPS"); s != "" {
		if o.Steps, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct{ name, prompt string }{{"repetitive", repetitivePrompt}, {"plain-text", "Once upon a time"}, {"list", listPrompt}} {
		// warm-up: every step length planned once
		if _, err := d.PromptLookup(ctx, t, c.prompt, o, llm.Lookup{Always: true}, none); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			// plain and lookup alternate (which goes first too); each
			// pair's ratio of time per token is kept, and the median
			// reported: a pair slowed by another process moves one ratio
			var wall, cpu []float64     // lookup ÷ plain, per pair
			var tokens, secs [2]float64 // plain, lookup
			var cpuSum [2]time.Duration
			var acc, prop, repeats float64
			for i := 0; i < b.N; i++ {
				var per, perCPU [2]float64
				for j := range 2 {
					which := (i + j) % 2 // 0 plain, 1 lookup
					runtime.GC()         // the other run's garbage (its cache) collected outside the timing
					c0, cpuOK := processCPU()
					var r *llm.Result
					if which == 0 {
						if r, err = d.Generate(ctx, t, c.prompt, o, none); err != nil {
							b.Fatal(err)
						}
						if i == 0 {
							hits, n := lookupHits(r.Tokens, len(r.PromptTokens)-1)
							repeats = float64(hits) / float64(n)
						}
					} else {
						lr, err := d.PromptLookup(ctx, t, c.prompt, o, llm.Lookup{}, none)
						if err != nil {
							b.Fatal(err)
						}
						acc += float64(lr.Accepted)
						prop += float64(lr.Proposed)
						r = &lr.Result
					}
					c1, _ := processCPU()
					n := float64(r.Generated)
					tokens[which] += n
					secs[which] += r.Decode.Seconds()
					per[which] = r.Decode.Seconds() / n
					if cpuOK {
						cpuSum[which] += c1 - c0
						perCPU[which] = (c1 - c0).Seconds() / n
					}
				}
				wall = append(wall, per[1]/per[0])
				if perCPU[0] > 0 {
					cpu = append(cpu, perCPU[1]/perCPU[0])
				}
			}
			b.ReportMetric(tokens[0]/secs[0], "plain-tokens/s")
			b.ReportMetric(tokens[1]/secs[1], "lookup-tokens/s")
			b.ReportMetric(median(wall), "lookup/plain")
			if len(cpu) > 0 {
				b.ReportMetric(median(cpu), "cpu-lookup/plain")
				b.ReportMetric(float64(cpuSum[0].Microseconds())/tokens[0], "plain-cpu-µs/token")
			}
			if prop > 0 {
				b.ReportMetric(acc/prop, "accepted")
			}
			b.ReportMetric(repeats, "repeats")
		})
	}
}

// listPrompt is a list to go on with: the stories model and the
// random-weight GGUFs (the Qwen2.5 and Llama 3 shapes) go on repeating
// tokens after it.
var listPrompt = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24"

// lookupHits counts the tokens of seq from start on that a one-token
// lookup draft would have given: the token after the most recent earlier
// occurrence of the 3 (else 2) tokens before it; and the tokens counted.
// What share of a generation repeats what came before, whatever the
// model: BenchmarkPromptLookup reports it (repeats) beside the speed.
func lookupHits(seq []int, start int) (hits, n int) {
	for i := start; i < len(seq); i++ {
		d := -1
		for m := min(3, i-1); m >= 2 && d < 0; m-- {
			for at := i - m - 1; at >= 0; at-- {
				if slices.Equal(seq[at:at+m], seq[i-m:i]) {
					d = seq[at+m]
					break
				}
			}
		}
		n++
		if d == seq[i] {
			hits++
		}
	}
	return hits, n
}

// median of v (v is reordered).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}

// lookupBenchDecoder opens BenchmarkPromptLookup's model: stories260K
// (float32, on native,cpu or SWITCHYARD_BENCH_BACKENDS) or the file
// SWITCHYARD_BENCH_LOOKUP_MODEL names, and its tokenizer.
func lookupBenchDecoder(b testing.TB) (*llm.Decoder, llm.Tokenizer) {
	dir := shared.Path(b, "testdata/llm/stories260K")
	tok, err := llm.LoadLlama2cTokenizer(filepath.Join(dir, "tok512.bin"), 512)
	if err != nil {
		b.Fatal(err)
	}
	backends := []string{"native", "cpu"}
	if os.Getenv("SWITCHYARD_BENCH_BACKENDS") != "" {
		backends = benchBackends()
	}
	file := filepath.Join(dir, "stories260K.bin")
	var t llm.Tokenizer = tok
	if f := os.Getenv("SWITCHYARD_BENCH_LOOKUP_MODEL"); f != "" {
		file = f
	}
	m, err := switchyard.Open(context.Background(), file, &switchyard.OpenOptions{Backends: backends})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	d, err := llm.NewDecoder(m)
	if err != nil {
		b.Fatal(err)
	}
	if file != filepath.Join(dir, "stories260K.bin") {
		if t, err = llm.LoadGGUFVocab(file); err != nil {
			b.Fatal(err)
		}
	}
	return d, t
}

// BenchmarkLookupStepCost: what prompt lookup's verification steps cost,
// on BenchmarkPromptLookup's model: decode steps where every fourth
// verifies k drafted tokens (one step of 1+k tokens, the draft rejected:
// the cache trimmed back), the others plain; reports, in the process's
// CPU time, the median plain step far from a verification
// (plain-cpu-µs), and the verification step and the plain step right
// after it as multiples of it (verify/plain, after/plain).
func BenchmarkLookupStepCost(b *testing.B) {
	d, t := lookupBenchDecoder(b)
	ctx := context.Background()
	prompt, err := t.Encode("Once upon a time", true)
	if err != nil {
		b.Fatal(err)
	}
	measure := func(f func()) float64 {
		c0, _ := processCPU()
		f()
		c1, _ := processCPU()
		return float64(c1 - c0)
	}
	for _, k := range []int{1, 2, 4, 8} {
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			var plain, verify, after []float64
			kOf := func(i int) int {
				if i%4 == 3 {
					return k
				}
				return 0
			}
			err := llm.StepPattern(ctx, d, prompt, 64*b.N, 200, kOf, measure, func(i, ki int, cost float64) {
				switch {
				case ki > 0:
					verify = append(verify, cost)
				case i%4 == 0 && i > 0:
					after = append(after, cost)
				case i%4 == 2:
					plain = append(plain, cost)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			p := median(plain)
			b.ReportMetric(p/1e3, "plain-cpu-µs")
			b.ReportMetric(median(verify)/p, "verify/plain")
			b.ReportMetric(median(after)/p, "after/plain")
		})
	}
}
