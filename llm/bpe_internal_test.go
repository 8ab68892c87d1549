package llm

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/shared"
)

// naiveBPE is the textbook loop: merge the lowest-ranked adjacent pair
// (leftmost of equal ranks) until none is in the merge table.
func naiveBPE(ranks map[[2]string]int, syms []string) []string {
	syms = slices.Clone(syms)
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] += syms[at+1]
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	return syms
}

// TestHeapBPEMatchesNaive: the heap-based merge loop gives the naive
// loop's pieces on real text for both tokenizer kinds, and a 20000-letter
// word is quick.
func TestHeapBPEMatchesNaive(t *testing.T) {
	dir := shared.Path(t, "testdata/llm/tiny-random")
	text := "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. " +
		"aaaaaaaaaaaa bbbbbbb abababababab Ünïcödé naïve café 日本語のテキスト emoji 🦙🚀 antidisestablishmentarianism 1234567890"
	for _, p := range []string{"gpt2-fp32/tokenizer.json", "llama-fp16/tokenizer.json"} {
		tok, err := LoadHFTokenizer(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		var words [][]string
		if tok.byteLevel {
			for _, w := range gpt2Split(text) {
				var syms []string
				for i := 0; i < len(w); i++ {
					syms = append(syms, string(byteChars[w[i]]))
				}
				words = append(words, syms)
			}
		} else {
			var syms []string
			for _, r := range strings.ReplaceAll(" "+text, " ", "\u2581") {
				syms = append(syms, string(r))
			}
			words = append(words, syms)
		}
		for _, w := range words {
			want := naiveBPE(tok.ranks, w)
			if got := tok.bpe(slices.Clone(w)); !slices.Equal(got, want) {
				t.Fatalf("%s: heap BPE %q, naive %q", p, got, want)
			}
		}
		long := strings.Repeat("ab", 10000)
		if _, err := tok.Encode(long, false); err != nil {
			t.Fatal(err)
		}
	}
}
