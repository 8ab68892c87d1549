package llm_test

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/llm"
)

// peerVocabDir is the llama.cpp peer kit's vocab/ folder (its setup.sh
// extracts llama.cpp's vocab-only GGUFs and tokenizer test cases there):
// a skip when absent, a failure when SWITCHYARD_REQUIRE_SHARED=1 or
// SWITCHYARD_REQUIRE_BACKENDS names llamacpp.
func peerVocabDir(t testing.TB) string {
	t.Helper()
	root := shared.Root()
	dir := filepath.Join(root, "peers", "llamacpp", "vocab")
	if root != "" {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.gguf.inp")); len(m) > 0 {
			return dir
		}
	}
	msg := "no llama.cpp vocabularies in ../shared/peers/llamacpp/vocab (run its setup.sh)"
	if shared.Required() {
		t.Fatalf("%s, and SWITCHYARD_REQUIRE_SHARED=1", msg)
	}
	backendtest.SkipUnlessRequired(t, "llamacpp", msg)
	return ""
}

// readVocabCases reads llama.cpp's tokenizer test cases for a vocab GGUF:
// .inp holds the texts, each followed by "\n__ggml_vocab_test__\n", .out
// one line of ids per text. As test-tokenizer-0 keeps them in a map, a
// text given twice is checked against its last line.
func readVocabCases(t *testing.T, path string) (map[string][]int, []string) {
	t.Helper()
	raw, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	outRaw, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	inp := strings.Split(string(raw), "\n__ggml_vocab_test__\n")
	if len(inp) > 0 && inp[len(inp)-1] == "" {
		inp = inp[:len(inp)-1]
	}
	out := strings.Split(string(outRaw), "\n")
	if len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	if len(inp) != len(out) {
		t.Fatalf("%s: %d inputs, %d outputs", path, len(inp), len(out))
	}
	cases := map[string][]int{}
	var order []string
	for i, s := range inp {
		ids := []int{}
		for _, f := range strings.Fields(out[i]) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", path, i+1, err)
			}
			ids = append(ids, n)
		}
		if _, ok := cases[s]; !ok {
			order = append(order, s)
		}
		cases[s] = ids
	}
	return cases, order
}

// requiredVocabs are the families the issue names: every case must pass.
var requiredVocabs = []string{"llama-spm", "llama-bpe", "qwen2", "qwen35", "phi-3", "gpt-2", "gemma-4"}

// TestGGUFVocabLlamaCppCases: llama.cpp's own tokenizer test cases
// (test-tokenizer-0: add_special and parse_special off) through the GGUF
// tokenizer, for every vocabulary the peer kit extracts; the families the
// issue names must pass every case, the others are reported.
func TestGGUFVocabLlamaCppCases(t *testing.T) {
	dir := peerVocabDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.gguf.inp"))
	sort.Strings(files)
	required := map[string]bool{}
	for _, n := range requiredVocabs {
		required["ggml-vocab-"+n+".gguf"] = true
	}
	total, passed, vocabsOK := 0, 0, 0
	for _, inp := range files {
		path := strings.TrimSuffix(inp, ".inp")
		name := filepath.Base(path)
		delete(required, name)
		mustPass := false
		for _, n := range requiredVocabs {
			mustPass = mustPass || name == "ggml-vocab-"+n+".gguf"
		}
		cases, order := readVocabCases(t, path)
		v, err := llm.LoadGGUFVocab(path)
		if err != nil {
			if mustPass {
				t.Errorf("%s: %v", name, err)
			} else {
				t.Logf("%-32s not supported: %v", name, err)
			}
			total += len(order)
			continue
		}
		ok := 0
		for _, s := range order {
			got, err := v.Tokenize(s, false, false)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, s, err)
			}
			if strings.Trim(strings.Join(strings.Fields(strings.Trim(strconvIDs(got), "[]")), " "), " ") == strconvIDs(cases[s]) {
				ok++
			} else if mustPass {
				t.Errorf("%s: %q: want %v, got %v", name, s, cases[s], got)
			}
		}
		if ok == len(order) {
			vocabsOK++
		}
		total += len(order)
		passed += ok
		t.Logf("%-32s %-8s %s: %d of %d cases", name, v.Model(), v.PreTokenizer(), ok, len(order))
	}
	for name := range required {
		t.Errorf("%s: not in %s", name, dir)
	}
	t.Logf("%d of %d vocabularies pass every case; %d of %d cases", vocabsOK, len(files), passed, total)
}

func strconvIDs(ids []int) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(id)
	}
	return strings.Join(s, " ")
}
