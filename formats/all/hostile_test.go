package all_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all"
	"github.com/switchyard-hal/switchyard/formats/executorch"
	"github.com/switchyard-hal/switchyard/formats/gguf"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/regular"
	"github.com/switchyard-hal/switchyard/llm"
)

// refusedPromptly runs load and fails unless it returns an error within
// a few seconds (a FIFO blocked format detection forever, issue #32).
func refusedPromptly(t *testing.T, what string, load func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- load() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("%s: read as a model", what)
		}
	case <-time.After(20 * time.Second):
		t.Errorf("%s: still reading after 20 s", what)
	}
}

// TestNonRegularModelFiles: a FIFO or a link to /dev/zero named as a
// model of every format, and as each tokenizer, is refused before it is
// read, by detection and by each reader's own entry point.
func TestNonRegularModelFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs on windows")
	}
	dir := t.TempDir()
	names := []string{"model.onnx", "model.gguf", "model.tflite", "model.pte", "model.bin", "tokenizer.json", "tokenizer.bin", "x.npy"}
	kinds := map[string]func(p string) error{
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o644) },
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		kinds["zero"] = func(p string) error { return os.Symlink("/dev/zero", p) }
	}
	for kind, mk := range kinds {
		for _, name := range names {
			p := filepath.Join(dir, kind+"-"+name)
			if err := mk(p); err != nil {
				t.Skipf("%s: %v", kind, err)
			}
			refusedPromptly(t, kind+" "+name+" (formats.LoadFile)", func() error {
				_, err := formats.LoadFile(p, formats.Options{})
				return err
			})
			switch filepath.Ext(name) {
			case ".gguf":
				refusedPromptly(t, kind+" gguf.ReadFile", func() error { _, err := gguf.ReadFile(p); return err })
			case ".tflite":
				refusedPromptly(t, kind+" tflite.LoadFile", func() error { _, err := tflite.LoadFile(p, tflite.ConvertOptions{}); return err })
			case ".pte":
				refusedPromptly(t, kind+" executorch.LoadFile", func() error { _, err := executorch.LoadFile(p, "", nil, 0); return err })
			case ".json":
				refusedPromptly(t, kind+" llm.LoadHFTokenizer", func() error { _, err := llm.LoadHFTokenizer(p); return err })
			case ".bin":
				refusedPromptly(t, kind+" llm.LoadLlama2cTokenizer", func() error { _, err := llm.LoadLlama2cTokenizer(p, 32); return err })
			case ".npy":
				refusedPromptly(t, kind+" tensorio.ReadFile", func() error { _, err := tensorio.ReadFile(p); return err })
			}
		}
	}
	// the refusal names the cause
	if _, err := formats.LoadFile(filepath.Join(dir, "fifo-model.gguf"), formats.Options{}); err == nil || !errors.Is(err, regular.ErrNotRegular) {
		t.Errorf("FIFO: %v, want a not-a-regular-file error", err)
	}
}
