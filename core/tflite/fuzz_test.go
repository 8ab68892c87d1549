package tflite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/tflite"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// FuzzParse feeds arbitrary bytes to the reader and the converter: they
// must return a model or an error, never panic or over-allocate. Seeds
// are the small shared models (when present) and testdata/fuzz.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"hello_world_int8.tflite", "micro_speech_quantized.tflite"} {
		if root := shared.Root(); root != "" {
			if b, err := os.ReadFile(filepath.Join(root, "testdata/tflite", name)); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := tflite.Parse(b)
		if err != nil {
			return
		}
		_, _ = tflite.Convert(m, tflite.ConvertOptions{MaxTensorBytes: 1 << 24})
	})
}
