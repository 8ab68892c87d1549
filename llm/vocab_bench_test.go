package llm_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/llm"
)

// BenchmarkVocabTokenize: encoding speed of the GGUF tokenizers on an
// English-and-code text of about 16 KB (bytes/s).
func BenchmarkVocabTokenize(b *testing.B) {
	dir := peerVocabDir(b)
	text := strings.Repeat("Once upon a time, there was a little girl named Lily. She loved to play outside in the park.\n"+
		"func main() {\n\tfmt.Println(\"héllo, 世界\", 12345)\n}\n", 80)
	for _, name := range []string{"llama-spm", "llama-bpe", "qwen2", "gemma-4"} {
		v, err := llm.LoadGGUFVocab(filepath.Join(dir, "ggml-vocab-"+name+".gguf"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for range b.N {
				if _, err := v.Tokenize(text, true, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
