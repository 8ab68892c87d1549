package onnxtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/switchyard-hal/switchyard/formats/tflite" // the .tflite reader
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// TestTFLiteZooDirs: the zoo's TFLite directories (model.tflite,
// input_K.npy and output_K.npy) verify against TFLite 2.9's outputs on the
// reference kernels at the loosest tolerance its MANIFEST suggests (5e-3,
// pose_detection's; `switchyard verify` takes each model's own), and the
// model TFLite refuses (REFUSED.txt) is a skip.
func TestTFLiteZooDirs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the zoo's TFLite models on the reference kernels")
	}
	root := shared.Path(t, "testdata/zoo")
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "model.tflite"))
	if len(dirs) == 0 {
		t.Fatalf("no model.tflite under %s", root)
	}
	opt := DefaultOptions()
	opt.Atol = 5e-3
	for _, f := range dirs {
		dir := filepath.Dir(f)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			r := RunDir(context.Background(), dir, opt)
			_, refused := os.Stat(filepath.Join(dir, "REFUSED.txt"))
			switch {
			case refused == nil && r.Status != Skip:
				t.Errorf("TFLite refuses it, Switchyard: %v %s", r.Status, r.Reason)
			case refused != nil && r.Status != Pass:
				t.Errorf("%v: %s", r.Status, r.Reason)
			}
			t.Logf("%v %s", r.Status, r.Reason)
		})
	}
}
